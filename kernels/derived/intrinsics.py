"""CUDA's scalar intrinsics in the CPU emulation, each written once.

``cuda.popc``, ``brev``, ``clz``, ``ffs``, ``fma``, ``cbrt`` and ``selp`` are
pure functions of one thread's values: no exchange between lanes (as a warp
operation has) and no memory.  A construct of this kind costs one lowering
step and two emissions:

* the lowering (``transform.CoordinateRewriter``) rewrites ``cuda.popc(x)``
  into ``_tm_popc(x)``;
* the compiled tier (numba on the CPU) calls :func:`lane_functions`'
  ``_tm_popc``, a numba intrinsic lowered to the LLVM operation numba-cuda
  lowers ``cuda.popc`` to (``ctpop``, ``ctlz``, ``cttz``, ``bitreverse``,
  ``fma``, libm's ``cbrt`` where the GPU has libdevice's);
* the instant tier (numpy) calls :func:`vector_form` with the lanes' values.

Both take their types from one rule, :func:`signature`: numba-cuda's typing
cases for the intrinsic (its ``cudadecl.py``, copied in :data:`INTRINSICS`
and checked against it by ``tests/test_intrinsics.py``) resolved as numba
resolves them.  So ``cuda.popc(i)`` of an int64 ``i`` is an int64 in both
tiers and on a GPU, and ``cuda.ffs`` is a uint32 whatever it is given.

What each computes (CUDA's definitions, on the two's complement bits of the
argument's own width):

* ``popc(x)``: how many bits are set;
* ``clz(x)``: how many leading bits are clear (the width for 0);
* ``ffs(x)``: the position of the lowest set bit, counted from 1 (0 for 0);
* ``brev(x)``: the bits in reverse order (32- or 64-bit unsigned);
* ``fma(a, b, c)``: ``a * b + c`` rounded once;
* ``cbrt(x)``: the cube root: libm's ``cbrt`` in both tiers (float32 through
  float64), libdevice's on a GPU; they may differ in the last place, within
  the float tolerance of the check;
* ``selp(p, a, b)``: ``a`` where ``p`` holds, else ``b`` (both evaluated).

This module imports numpy only: the numba side is built by
:func:`lane_functions`, which the compiled tier's module calls.
"""
from __future__ import annotations

import functools
import hashlib
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

#: A digest of this file, named in the compiled tier's module: a change here
#: gives a new module, never numba's cached code of the old one.
DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float32", "float64")


@dataclass(frozen=True)
class Intrinsic:
    """One intrinsic: numba-cuda's typing cases, and its two forms."""

    name: str
    #: numba-cuda's cases, ``(result, *arguments)`` as numba names the types;
    #: empty for ``selp``, whose rule is not a table (:func:`signature`)
    cases: tuple[tuple[str, ...], ...]
    arity: int
    #: the instant tier's: the lanes' values, already cast to the case's
    #: arguments, to the results (numpy)
    vector: Callable[..., np.ndarray]
    #: the compiled tier's: ``(context, builder, sig, args)`` to one lane's
    #: value (llvmlite), as a numba intrinsic's code
    lane: Callable


# -- the numpy forms -------------------------------------------------------------------

_U64 = np.uint64


def _bits(x: np.ndarray) -> np.ndarray:
    """The two's complement bits of ``x``, in its own width, as uint64."""
    return x.astype(f"uint{8 * x.dtype.itemsize}").astype(_U64)


def _bit_length(u: np.ndarray) -> np.ndarray:
    """The number of bits ``u`` (uint64) needs: 0 for 0, 64 for 2**63 and above."""
    length = np.zeros(u.shape, np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        high = u >= (_U64(1) << _U64(shift))
        length += np.where(high, shift, 0)
        u = np.where(high, u >> _U64(shift), u)
    return length + (u > 0)


def _popc(x: np.ndarray) -> np.ndarray:
    u = _bits(x)  # (the bit-counting of Hacker's Delight, 5-2, on 64 bits)
    u = u - ((u >> _U64(1)) & _U64(0x5555555555555555))
    u = (u & _U64(0x3333333333333333)) + ((u >> _U64(2)) & _U64(0x3333333333333333))
    u = (u + (u >> _U64(4))) & _U64(0x0F0F0F0F0F0F0F0F)
    return (u * _U64(0x0101010101010101)) >> _U64(56)


def _clz(x: np.ndarray) -> np.ndarray:
    return 8 * x.dtype.itemsize - _bit_length(_bits(x))


def _ffs(x: np.ndarray) -> np.ndarray:
    u = _bits(x)
    lowest = u & (_U64(0) - u)  # the lowest set bit alone
    return _bit_length(lowest)  # (its position from 1; 0 for 0)


def _brev(x: np.ndarray) -> np.ndarray:
    u = _bits(x)
    for shift, mask in ((1, 0x5555555555555555), (2, 0x3333333333333333),
                        (4, 0x0F0F0F0F0F0F0F0F), (8, 0x00FF00FF00FF00FF),
                        (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):
        s, m = _U64(shift), _U64(mask)
        u = ((u >> s) & m) | ((u & m) << s)
    return u >> _U64(64 - 8 * x.dtype.itemsize)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s + t == a + b`` exactly, ``s`` the rounded sum (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p + e == a * b`` exactly, ``p`` the rounded product (Dekker, with
    Veltkamp's split), where neither overflows nor underflows."""
    def split(x):
        big = x * 134217729.0  # 2**27 + 1
        high = big - (big - x)
        return high, x - high

    p = a * b
    a1, a2 = split(a)
    b1, b2 = split(b)
    return p, ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2


def _round_to_odd(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``s + t`` (``s`` the float64 nearest it) rounded to odd: ``s`` when
    exact or when its last bit is set, else its neighbour towards ``t``."""
    inexact = (t != 0) & ((s.view(np.int64) & 1) == 0)
    return np.where(inexact, np.nextafter(s, np.where(t > 0, np.inf, -np.inf)), s)


#: Where Dekker's product is exact: factors below 2**995 (the split does not
#: overflow) whose product is above 2**-968 (its error term is not subnormal).
_SAFE_FACTOR, _SAFE_PRODUCT = 2.0 ** 995, 2.0 ** -968


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once.  float32: the product is exact in float64,
    the sum is rounded to odd there, then to float32: rounding to odd with
    two bits or more to spare, then to nearest, is rounding to nearest once
    (Boldo and Melquiond, "Emulation of a FMA and correctly-rounded sums",
    IEEE Trans. Computers 57(4), 2008).  float64: their emulated FMA,
    ``RN(th + RO(tl + pl))`` with ``ph + pl == a * b`` and ``th + tl == c + ph``,
    where Dekker's product is exact; elsewhere (rare: huge or tiny factors)
    exactly, in fractions."""
    if a.dtype == np.float32:
        s, t = _two_sum(a.astype(np.float64) * b.astype(np.float64), c.astype(np.float64))
        return _round_to_odd(s, t).astype(np.float32)
    with np.errstate(all="ignore"):
        ph, pl = _two_product(a, b)
        th, tl = _two_sum(c, ph)
        out = th + _round_to_odd(*_two_sum(tl, pl))
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        size = np.abs(a * b)
        safe = finite & (np.abs(a) < _SAFE_FACTOR) & (np.abs(b) < _SAFE_FACTOR) & (
            (size > _SAFE_PRODUCT) | (a == 0) | (b == 0)) & np.isfinite(out)
        # inf and nan as IEEE's fma gives them: a finite product leaves c as it is
        # (2**1000 * 2**1000 - inf is -inf), an infinite one is what a * b + c gives.
        out = np.where(finite, out, np.where(np.isfinite(a) & np.isfinite(b), c, a * b + c))
    for index in zip(*np.nonzero(finite & ~safe)):
        out[index] = _exact_fma(a[index], b[index], c[index])
    return out


def _exact_fma(a: float, b: float, c: float) -> float:
    """One lane of float64 ``fma``, exactly (``float(Fraction)`` rounds once)."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:  # the sign of zero: IEEE's for a sum of a product and c
        return float(a) * float(b) + float(c)
    try:
        return float(exact)
    except OverflowError:
        return float(np.copysign(np.inf, float(exact)))


def _cbrt(x: np.ndarray) -> np.ndarray:
    """libm's ``cbrt`` of each lane, as the compiled tier calls it (numpy's
    own may differ from it in the last place); float32 through float64."""
    return np.frompyfunc(math.cbrt, 1, 1)(x.astype(np.float64)).astype(np.float64)


def _selp(test: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(test != 0, a, b)


# -- the compiled tier's code for one lane (llvmlite; numba-cuda's own operations) -------

def _i1(value: int):
    from llvmlite import ir
    return ir.Constant(ir.IntType(1), value)


def _popc_lane(context, builder, sig, args):
    return builder.ctpop(args[0])


def _clz_lane(context, builder, sig, args):
    return builder.ctlz(args[0], _i1(0))  # (0 is defined: the width)


def _ffs_lane(context, builder, sig, args):
    from llvmlite import ir
    x = args[0]
    position = builder.add(builder.cttz(x, _i1(0)), ir.Constant(x.type, 1))
    found = builder.select(builder.icmp_unsigned("==", x, ir.Constant(x.type, 0)),
                           ir.Constant(x.type, 0), position)
    return builder.trunc(found, ir.IntType(32)) if x.type.width > 32 else found


def _brev_lane(context, builder, sig, args):
    return builder.bitreverse(args[0])


def _fma_lane(context, builder, sig, args):
    return builder.fma(*args)


def _cbrt_lane(context, builder, sig, args):
    """libm's ``cbrt`` (float32 through float64, as the numpy form)."""
    from llvmlite import ir
    from numba.core import cgutils
    double = ir.DoubleType()
    function = cgutils.get_or_insert_function(builder.module,
                                              ir.FunctionType(double, [double]), "cbrt")
    x = args[0]
    if x.type == double:
        return builder.call(function, [x])
    return builder.fptrunc(builder.call(function, [builder.fpext(x, double)]), x.type)


def _selp_lane(context, builder, sig, args):
    from numba.core import types
    test = context.cast(builder, args[0], sig.args[0], types.boolean)
    return builder.select(test, args[1], args[2])


def _same_integer(name: str, vector: Callable, lane: Callable) -> Intrinsic:
    return Intrinsic(name, tuple((t, t) for t in _INTEGERS), 1, vector, lane)


#: The intrinsics the emulation runs, by their name in numba.cuda (their
#: cases copied from numba-cuda 0.30's cudadecl.py): each its two forms.
INTRINSICS: dict[str, Intrinsic] = {spec.name: spec for spec in (
    _same_integer("popc", _popc, _popc_lane),
    _same_integer("clz", _clz, _clz_lane),
    Intrinsic("ffs", tuple(("uint32", t) for t in _INTEGERS), 1, _ffs, _ffs_lane),
    Intrinsic("brev", (("uint32", "uint32"), ("uint64", "uint64")), 1, _brev, _brev_lane),
    Intrinsic("fma", tuple((t, t, t, t) for t in _FLOATS), 3, _fma, _fma_lane),
    Intrinsic("cbrt", tuple((t, t) for t in _FLOATS), 1, _cbrt, _cbrt_lane),
    Intrinsic("selp", (), 3, _selp, _selp_lane),
)}
#: The name each has in the lowered code.
LOWERED_NAMES = {name: f"_tm_{name}" for name in INTRINSICS}
#: numba-cuda types ``ffs`` of 8- and 16-bit integers but has no code for
#: them (only ``__nv_ffs`` and ``__nv_ffsll``): refused, as a GPU would.
_UNCOMPILED = {"ffs": ("int8", "int16", "uint8", "uint16")}
#: What ``selp`` takes (numba-cuda's, after PTX's selp).
_SELP_TYPES = ("float64", "float32", "int16", "uint16", "int32", "uint32", "int64", "uint64")


class IntrinsicTypeError(TypeError):
    """An intrinsic called with arguments CUDA has no form of."""


#: Such a reason, in numba's message (``cuda.ffs of int8: ...``).
INTRINSIC_REASON = re.compile(rf"cuda\.({'|'.join(INTRINSICS)}) (takes|has|of) .*")


def signature(typing_context, name: str, args: tuple) -> object:
    """numba's signature of ``cuda.<name>`` for the numba types ``args``, as
    numba-cuda types it; raises :class:`IntrinsicTypeError` where it has none."""
    from numba.core import types
    from numba.core.typing import signature as make_signature

    spec = INTRINSICS[name]
    if len(args) != spec.arity:
        raise IntrinsicTypeError(f"cuda.{name} takes {spec.arity} argument"
                                 f"{'s' if spec.arity > 1 else ''}, not {len(args)}")
    if name == "selp":
        test, a, b = args
        if a != b or str(a) not in _SELP_TYPES:
            raise IntrinsicTypeError(
                f"cuda.selp takes two values of one type among {', '.join(_SELP_TYPES)}, "
                f"not {a} and {b}")
        return make_signature(a, test, a, a)
    cases = [make_signature(*(getattr(types, t) for t in case)) for case in spec.cases]
    chosen = typing_context.resolve_overload(f"cuda.{name}", cases, args, {})
    if chosen is None:
        raise IntrinsicTypeError(f"cuda.{name} has no form for {', '.join(map(str, args))}")
    if str(chosen.args[0]) in _UNCOMPILED.get(name, ()):
        raise IntrinsicTypeError(f"cuda.{name} of {chosen.args[0]}: numba-cuda has code for "
                                 "32- and 64-bit integers only")
    return chosen


# -- the instant tier ------------------------------------------------------------------

def vector_form(name: str, *args) -> np.ndarray:
    """``cuda.<name>`` of the lanes' values ``args`` (arrays or scalars), of
    the type numba gives it."""
    values = [np.asarray(a) for a in args]
    result, *arguments = _vector_case(name, tuple(v.dtype.str for v in values))
    shape = np.broadcast_shapes(*(v.shape for v in values))
    out = INTRINSICS[name].vector(*(np.broadcast_to(v.astype(t), shape).reshape(-1)
                                    for v, t in zip(values, arguments)))
    out = np.asarray(out).astype(result).reshape(shape)
    return out[()] if out.ndim == 0 else out


@functools.cache
def _vector_case(name: str, dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """``(result, *arguments)`` dtypes of the case numba chooses for ``dtypes``."""
    from numba.core.registry import cpu_target
    from numba.np.numpy_support import as_dtype, from_dtype

    chosen = signature(cpu_target.typing_context, name,
                       tuple(from_dtype(np.dtype(d)) for d in dtypes))
    return tuple(str(as_dtype(t)) for t in (chosen.return_type, *chosen.args))


# -- the compiled tier -----------------------------------------------------------------

@functools.cache
def lane_functions() -> dict[str, object]:
    """``{"_tm_popc": numba intrinsic, ...}``: the compiled tier's forms."""
    return {LOWERED_NAMES[name]: _lane_function(name) for name in INTRINSICS}


def _lane_function(name: str):
    from numba.core.errors import TypingError
    from numba.extending import intrinsic

    lower = INTRINSICS[name].lane

    def typed(typing_context, args):
        try:
            return signature(typing_context, name, args), lower
        except IntrinsicTypeError as error:
            raise TypingError(str(error)) from None

    # (numba's intrinsics take no *args: one typer per arity)
    if INTRINSICS[name].arity == 1:
        def typer(typing_context, x):
            return typed(typing_context, (x,))
    else:
        def typer(typing_context, x, y, z):
            return typed(typing_context, (x, y, z))
    typer.__name__ = LOWERED_NAMES[name]
    return intrinsic(typer)
