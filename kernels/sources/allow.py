"""The allow-list: what of a kernel file may be evaluated, and what a kernel may name.

A kernel file is untrusted input (a teacher's ``threadmap check`` runs on
students' submissions).  ThreadMap never executes it, yet some of it must be
*evaluated*: module constants (``TPB = 16``), shared-array shapes and dtypes,
launch literals, signatures.  And the simulator runs a kernel's body as
Python.  So nothing of the file is evaluated by Python itself: constants go
through :func:`evaluate`, an interpreter of a few node types with bounded
arithmetic (as ``ast.literal_eval`` accepts an allow-list of node types, not a
list of forbidden names), and every name a kernel reaches through the file's
imports must be on :func:`allowed_name`'s list.  Anything else is refused
with its line: ``numpy.testing._private.utils.os`` is a path from numpy to
``os.system``, and ``cuda.os`` another.
"""
from __future__ import annotations

import ast
import math
import operator

import numpy as np

from ..words import whole_number

#: Modules a kernel file may import (for its kernels); anything else it
#: imports is host code and is left out.
ALLOWED_MODULES = frozenset({"numpy", "math", "cmath", "numba", "numba.cuda", "numba.types",
                             "numba.core.types"})

#: numba's scalar type names (``numba.float32``, ``cuda.int32``, ``types.f8``).
NUMBA_TYPES = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp", "uintp",
    "intc", "uintc", "float16", "float32", "float64", "complex64", "complex128", "boolean",
    "bool_", "b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8",
    "c16", "byte", "double", "int_", "uint", "void", "none",
})

#: numpy's name of each of numba's scalar types (``numba.np.numpy_support.as_dtype``
#: gives the same: tests/test_overlap.py), known without importing numba, which
#: a run's checks would otherwise wait 0.3 s for.
NUMBA_DTYPES = {
    **{name: name for name in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                               "uint32", "uint64", "float16", "float32", "float64",
                               "complex64", "complex128")},
    "intp": np.dtype(np.intp).name, "uintp": np.dtype(np.uintp).name,
    "int_": np.dtype(np.intp).name, "uint": np.dtype(np.uintp).name,
    "intc": "int32", "uintc": "uint32", "boolean": "bool", "bool_": "bool", "b1": "bool",
    "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "f2": "float16", "f4": "float32", "f8": "float64", "c8": "complex64",
    "c16": "complex128", "byte": "uint8", "double": "float64",
}

#: What a kernel may use of ``numba.cuda``: numba-cuda's kernel API
#: (https://nvidia.github.io/numba-cuda/reference/kernel.html), not its host
#: API (``cuda.to_device``), its internals or the modules it imports
#: (``cuda.os``, ``cuda.sys``).
CUDA_API = frozenset({
    "threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
    "blockDim.x", "blockDim.y", "blockDim.z", "gridDim.x", "gridDim.y", "gridDim.z",
    "laneid", "warpsize", "grid", "gridsize",
    "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp",
    "threadfence", "threadfence_block", "threadfence_system",
    "shared.array", "local.array", "const.array_like",
    "atomic.add", "atomic.sub", "atomic.and_", "atomic.or_", "atomic.xor", "atomic.max",
    "atomic.min", "atomic.nanmax", "atomic.nanmin", "atomic.inc", "atomic.dec", "atomic.exch",
    "atomic.cas", "atomic.compare_and_swap",
    "activemask", "lanemask_lt", "all_sync", "any_sync", "eq_sync", "ballot_sync",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "match_any_sync",
    "match_all_sync", "popc", "brev", "clz", "ffs", "fma", "cbrt", "selp", "nanosleep",
}) | NUMBA_TYPES

#: What numba's CUDA simulator has of the API above (its FakeCUDAModule,
#: numba-cuda 0.30): a kernel that needs the simulator and uses anything else
#: is refused before it starts, instead of failing inside it.
SIMULATED_CUDA_API = frozenset(
    name for name in CUDA_API - NUMBA_TYPES
    if name.split(".")[0] not in {"syncwarp", "activemask", "lanemask_lt", "all_sync",
                                  "any_sync", "eq_sync", "ballot_sync", "shfl_sync",
                                  "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
                                  "match_any_sync", "match_all_sync", "nanosleep"})

_MATH_FUNCTIONS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "copysign", "cos",
    "cosh", "degrees", "erf", "erfc", "exp", "expm1", "fabs", "floor", "fmod", "frexp",
    "gamma", "hypot", "isfinite", "isinf", "isnan", "ldexp", "lgamma", "log", "log10",
    "log1p", "log2", "modf", "pow", "radians", "remainder", "sin", "sinh", "sqrt", "tan",
    "tanh", "trunc",
})
#: Numeric constants of math, cmath and numpy, also usable in module constants.
NUMERIC_CONSTANTS = {
    "math.pi": math.pi, "math.e": math.e, "math.tau": math.tau, "math.inf": math.inf,
    "math.nan": math.nan, "cmath.pi": math.pi, "cmath.e": math.e, "cmath.inf": math.inf,
    "cmath.nan": math.nan, "numpy.pi": math.pi, "numpy.e": math.e, "numpy.inf": math.inf,
    "numpy.nan": math.nan,
}
_CMATH_FUNCTIONS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "isfinite",
    "isinf", "isnan", "log", "log10", "phase", "polar", "rect", "sin", "sinh", "sqrt", "tan",
    "tanh",
})
#: numpy's scalar types.
NUMPY_TYPES = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp", "uintp",
    "intc", "uintc", "float16", "float32", "float64", "complex64", "complex128", "bool_",
    "half", "single", "double", "int_", "uint", "byte", "ubyte", "short", "ushort",
})
#: numpy's math ufuncs on scalars (which numba compiles for CUDA too).
_NUMPY_FUNCTIONS = frozenset({
    "abs", "absolute", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "cbrt", "ceil", "copysign", "cos", "cosh", "deg2rad", "degrees", "divide",
    "exp", "exp2", "expm1", "fabs", "floor", "floor_divide", "fmax", "fmin", "fmod",
    "hypot", "isfinite", "isinf", "isnan", "ldexp", "log", "log10", "log1p", "log2",
    "maximum", "minimum", "mod", "multiply", "negative", "power", "rad2deg", "radians",
    "reciprocal", "remainder", "rint", "sign", "signbit", "sin", "sinh", "sqrt", "square",
    "subtract", "tan", "tanh", "true_divide", "trunc",
})

#: Every dotted name (as the file's imports resolve it) a kernel may use.
ALLOWED_NAMES = frozenset(
    {f"numba.cuda.{name}" for name in CUDA_API}
    | {f"numba.{name}" for name in NUMBA_TYPES}
    | {f"numba.types.{name}" for name in NUMBA_TYPES}
    | {f"numba.core.types.{name}" for name in NUMBA_TYPES}
    | {f"math.{name}" for name in _MATH_FUNCTIONS}
    | {f"cmath.{name}" for name in _CMATH_FUNCTIONS}
    | {f"numpy.{name}" for name in NUMPY_TYPES | _NUMPY_FUNCTIONS}
    | set(NUMERIC_CONSTANTS)
    # the CUDA decorator itself (in decorators, never in a kernel's body)
    | {"numba.cuda.jit"}
)

#: Attributes a kernel may read of its own values (an array parameter, a
#: number): anything else (``A.tofile``, ``"".format``) is refused.
VALUE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "dtype", "itemsize", "strides", "T",
                              "real", "imag"})


#: Modules whose attributes are numba's types (``numba.float32``, ``types.f8``).
NUMBA_TYPE_MODULES = ("numba", "numba.types", "numba.cuda", "numba.core.types")


def numba_type_name(qualified: str) -> str | None:
    """``"float32"`` for ``numba.float32`` (or ``numba.types.f4``...: the
    name), None for anything that is not one of numba's types."""
    module, _, name = qualified.rpartition(".")
    return name if module in NUMBA_TYPE_MODULES and name in NUMBA_TYPES else None


def allowed_name(qualified: str) -> bool:
    """Whether a kernel may use ``qualified`` (``numba.cuda.threadIdx.x``)."""
    return qualified in ALLOWED_NAMES or qualified in ALLOWED_MODULES


def allowed_import(qualified: str) -> bool:
    """Whether an import binding ``qualified`` (a module, or a name of one)
    may be copied next to a kernel."""
    return qualified in ALLOWED_MODULES or qualified in ALLOWED_NAMES


# -- evaluation of module constants ------------------------------------------------------

#: Bounds of a constant's value: numba freezes an int global as int64 or
#: uint64, so nothing wider can be a kernel's constant; tuples are shapes.
MAX_INTEGER = 2**64
MAX_TUPLE_LENGTH = 64


class NotConstant(ValueError):
    """An expression that is not a constant ThreadMap evaluates; the message
    says why (``name``: the name that is not a constant, when that is why)."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


def reserved(name: str) -> bool:
    """Names a kernel file may not bind: ThreadMap's own (``_tm_``, ``_TM_``, in
    any case: the generated code's) and Python's dunders (``__builtins__``)."""
    return name.lower().startswith("_tm_") or (name.startswith("__") and name.endswith("__"))


_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: operator.not_}
#: Casts a constant may use: ``np.float32(0.5)``, ``numba.int32(3)``.
_CASTS = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64",
                    "uint8", "uint16", "uint32", "uint64", "intp"})


def evaluate(node: ast.expr, constants: dict[str, object], resolve) -> object:
    """The value of a module constant's expression, or :class:`NotConstant`.

    Allowed: number literals (``True``/``False`` too), names of earlier
    ``constants``, ``+ - * / // % ** << >> & | ^`` and unary ``- + ~ not`` on
    them, tuples of them, numeric casts (``np.float32(x)``) and the numeric
    constants of math and numpy (``math.pi``).  Every intermediate value is
    bounded (integers below 2**64, exponents and shifts checked before they
    are computed), so a chain such as ``A1 = A0 ** 64`` is refused at once.
    ``resolve`` gives an attribute chain's dotted name through the imports.
    """
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (bool, int, float, complex)):
            return _bounded(value)
        raise NotConstant(f"{type(value).__name__} literal")
    if isinstance(node, ast.Name):
        if node.id in constants:
            return constants[node.id]
        raise NotConstant(f"{node.id!r} is not a constant", node.id)
    if isinstance(node, ast.Attribute):
        qualified = resolve(node)
        if qualified in NUMERIC_CONSTANTS:
            return NUMERIC_CONSTANTS[qualified]
        raise NotConstant(f"{ast.unparse(node)!r} is not a numeric constant")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = evaluate(node.operand, constants, resolve)
        _numbers(operand)
        return _apply(_UNARY[type(node.op)], operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = evaluate(node.left, constants, resolve)
        right = evaluate(node.right, constants, resolve)
        _numbers(left, right)
        _check_growth(node.op, left, right)
        return _apply(_BINARY[type(node.op)], left, right)
    if isinstance(node, ast.Tuple):
        if len(node.elts) > MAX_TUPLE_LENGTH:
            raise NotConstant(f"a tuple of more than {MAX_TUPLE_LENGTH} elements")
        values = tuple(evaluate(e, constants, resolve) for e in node.elts)
        if any(isinstance(v, tuple) for v in values):
            raise NotConstant("a tuple of tuples")
        return values
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        target = resolve(node.func) or ""
        module, _, name = target.rpartition(".")
        if module in ("numpy", "numba", "numba.types") and name in _CASTS:
            value = evaluate(node.args[0], constants, resolve)
            _numbers(value)
            if isinstance(value, complex):
                raise NotConstant(f"a complex number cast to {name}")
            kind = np.dtype(name)
            try:
                with np.errstate(all="ignore"):
                    if kind.kind in "iu":
                        info = np.iinfo(kind)
                        if not (math.isfinite(value) and info.min <= value <= info.max):
                            raise NotConstant(f"{value!r} does not fit {name}")
                        return kind.type(int(value))
                    return kind.type(value)
            except (OverflowError, ValueError) as exc:
                raise NotConstant(f"{value!r} cannot be a {name} ({exc})") from None
    if isinstance(node, ast.Call):
        raise NotConstant(f"it calls {ast.unparse(node.func)}()")
    raise NotConstant(f"{type(node).__name__} expressions are not evaluated")


def _apply(function, *operands):
    """``function(*operands)``, bounded; Python's own errors as NotConstant."""
    try:
        with np.errstate(all="ignore"):
            return _bounded(function(*operands))
    except NotConstant:
        raise
    except ZeroDivisionError:
        raise NotConstant("a division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise NotConstant(f"arithmetic that fails ({exc})") from None


def _numbers(*values: object) -> None:
    for value in values:
        if isinstance(value, tuple):
            raise NotConstant("arithmetic on a tuple")


def _check_growth(op: ast.operator, left, right) -> None:
    """Refuse ``**`` and ``<<`` whose result would be huge before computing it."""
    if isinstance(op, ast.Pow) and isinstance(left, (int, np.integer)) \
            and isinstance(right, (int, np.integer)):
        base, exponent = abs(int(left)), int(right)
        if exponent > 0 and base > 1 and (base.bit_length() - 1) * exponent >= 64:
            raise NotConstant(f"{left} ** {right} is past 2**64")
    if isinstance(op, ast.LShift) and isinstance(right, (int, np.integer)) and int(right) > 64:
        raise NotConstant(f"a shift by {right}")


def _bounded(value):
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, np.integer)) and abs(int(value)) >= MAX_INTEGER:
        raise NotConstant(f"{whole_number(int(value))} is past 2**64 (numba holds integers "
                          "in 64 bits)")
    return value


def constant_source(value) -> str:
    """Python source that rebuilds a value :func:`evaluate` gave (the only way
    a constant reaches generated code: never the file's own text).  numpy
    scalars need ``_tm_np`` (numpy) where the source runs."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, np.generic):
        inner = value.item()
        return f"_tm_np.{value.dtype.name}({constant_source(inner)})"
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"
    if isinstance(value, complex):
        return f"complex({constant_source(value.real)}, {constant_source(value.imag)})"
    if isinstance(value, tuple):
        return "(" + "".join(constant_source(v) + ", " for v in value) + ")"
    raise TypeError(f"not a constant ThreadMap evaluates: {value!r}")
