"""A kernel's arguments as the user describes them, read and checked, never evaluated.

The first layer of issue 22's argument model: what a kernel is given when it
does not fit the matmul convention (three matrices shaped by M x K x N).  Two
ways to say it, read into one description:

* on the command line, one ``--arg`` per parameter::

      --arg x=float32[4096] --arg out=float32[4096] --arg n=4096 --arg alpha=float32(2.5)

* in the kernel file, a module-level literal, read with ``ast.literal_eval``
  (never executed: a kernel file is untrusted)::

      THREADMAP_ARGS = {"x": "float32[4096]", "out": "float32[4096]", "n": 4096}

Arrays are ``DTYPE[D1, D2, ...]`` (1 to 3 dimensions); scalars a number, or
``DTYPE(NUMBER)`` to fix its type.  :func:`check_arguments` holds a
description against the kernel's source (``plan.parameter_uses``): every
parameter described once, arrays as arrays of the rank the kernel indexes
them with, integers where the kernel needs one, sizes that fit in memory.
Each refusal is one line that names the argument.
"""
from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentsNeeded, KernelSourceError, RequestError
from ..request import DESCRIBED_DTYPES, MAX_DIMENSION, RunRequest
from ..words import quoted, whole_number
from .loader import DIMENSION_NAMES, load_plan
from .plan import ParameterUses, parameter_uses
from .source import ModuleInfo

#: Element types an array argument may have (numba-cuda's numeric arrays).
ARRAY_DTYPES = ("float32", "float64", "float16", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64")
#: Types a scalar may be given with ``DTYPE(NUMBER)``.
SCALAR_DTYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64")
MAX_RANK = 3
#: Largest extent of one dimension (a 1-D array of 2**24 elements is common;
#: the memory a run needs is checked apart; a matmul's M, K and N are held to
#: request.MAX_DIMENSION where they are settled).
MAX_EXTENT = 1 << 30
#: The module-level name a kernel file describes its arguments with.
FILE_NAME = "THREADMAP_ARGS"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ARRAY = re.compile(rf"^\s*({_NAME})\s*\[\s*([^\]]*)\]\s*$")
_TYPED_SCALAR = re.compile(rf"^\s*({_NAME})\s*\(\s*([^)]*)\)\s*$")


@dataclass(frozen=True)
class ArrayArgument:
    """An array parameter: its element type and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.name}={self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class ScalarArgument:
    """A scalar parameter's value; ``dtype`` when given (else numba's own
    choice: int64 for an integer, float64 for a float)."""

    name: str
    value: int | float
    dtype: str | None = None

    @property
    def is_integer(self) -> bool:
        return isinstance(self.value, int) and (self.dtype is None or "int" in self.dtype)

    def __str__(self) -> str:
        return f"{self.name}={self.dtype}({self.value})" if self.dtype else \
            f"{self.name}={self.value}"


Argument = ArrayArgument | ScalarArgument


def parse_argument(text: str, flag: str = "--arg") -> Argument:
    """``NAME=SPEC`` (``x=float32[4096]``, ``n=4096``, ``a=float32(2.5)``)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(_NAME, name):
        raise RequestError(f"{flag} takes NAME=SPEC (x=float32[4096], n=4096), not {quoted(text)}")
    return parse_spec(name, spec, f"{flag} {name}")


def parse_spec(name: str, spec: object, where: str) -> Argument:
    """One argument's description: a string spec, or a plain number."""
    if isinstance(spec, bool):
        raise RequestError(f"{where}: {quoted(spec)} is not a number or an array (a kernel takes "
                           "no bool scalars here; give 0 or 1)")
    if isinstance(spec, (int, float)):
        return _scalar(name, spec, None, where)
    if not isinstance(spec, str):
        raise RequestError(f"{where}: expected an array such as 'float32[4096]' or a "
                           f"number, not {type(spec).__name__} {quoted(spec)}")
    array = _ARRAY.match(spec)
    if array:
        dtype, dims = array.group(1), array.group(2)
        if dtype not in ARRAY_DTYPES:
            raise RequestError(f"{where}: unknown element type {quoted(dtype)} (types: "
                               f"{', '.join(ARRAY_DTYPES)})")
        return ArrayArgument(name, dtype, _shape(dims, where))
    typed = _TYPED_SCALAR.match(spec)
    if typed:
        dtype, number = typed.group(1), typed.group(2)
        if dtype not in SCALAR_DTYPES:
            raise RequestError(f"{where}: unknown scalar type {quoted(dtype)} (types: "
                               f"{', '.join(SCALAR_DTYPES)})")
        return _scalar(name, _number(number, where), dtype, where)
    return _scalar(name, _number(spec, where), None, where)


def _shape(dims: str, where: str) -> tuple[int, ...]:
    parts = [p.strip() for p in dims.split(",")]
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()  # float32[4096,] as numpy would print a 1-tuple
    if not parts or parts == [""]:
        raise RequestError(f"{where}: an array needs its shape, e.g. float32[4096] or "
                           "float32[64, 64]")
    if len(parts) > MAX_RANK:
        raise RequestError(f"{where}: {len(parts)} dimensions; ThreadMap draws arrays of 1 to "
                           f"{MAX_RANK}")
    shape = []
    for part in parts:
        if not re.fullmatch(r"[0-9](_?[0-9])*", part, re.ASCII):
            raise RequestError(f"{where}: {quoted(part)} is not a dimension (a whole number)")
        extent = int(part)
        if not 1 <= extent <= MAX_EXTENT:
            raise RequestError(f"{where}: a dimension of {extent:,} (between 1 and "
                               f"{MAX_EXTENT:,})")
        shape.append(extent)
    return tuple(shape)


def _number(text: str, where: str) -> int | float:
    text = text.strip()
    if not text.isascii():
        raise RequestError(f"{where}: {quoted(text)} is not a number written in ASCII digits")
    for base in (10, 0):  # 4096, 1_000 and 007; then 0x1000
        try:
            return int(text, base)
        except ValueError:
            pass
    try:
        value = float(text)
    except ValueError:
        raise RequestError(f"{where}: {quoted(text)} is neither an array such as float32[4096] nor "
                           "a number") from None
    if not math.isfinite(value):
        raise RequestError(f"{where}: {quoted(text)} is not a finite number")
    return value


def _scalar(name: str, value: int | float, dtype: str | None, where: str) -> ScalarArgument:
    # (every route comes here: THREADMAP_ARGS's 1e400 had been taken as
    # infinity, and result.json then held Infinity, which is not JSON)
    if isinstance(value, float) and not math.isfinite(value):
        raise RequestError(f"{where}: {value} is not a finite number")
    if dtype and "int" in dtype:
        if isinstance(value, float):
            if not value.is_integer():
                raise RequestError(f"{where}: {dtype}({value}) is not a whole number")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise RequestError(f"{where}: {whole_number(value)} does not fit {dtype} "
                               f"({info.min:,} to {info.max:,})")
    elif dtype:
        value = float(value)
        if abs(value) > float(np.finfo(dtype).max):
            raise RequestError(f"{where}: {value} does not fit {dtype}")
    elif isinstance(value, int) and not -(1 << 63) <= value < (1 << 63):
        raise RequestError(f"{where}: {whole_number(value)} does not fit a 64-bit integer")
    return ScalarArgument(name, value, dtype)


#: One NAME=SPEC of a line of them: an array's brackets may hold spaces.
_ITEM = re.compile(r"[^\s=,]+=(?:[A-Za-z0-9_]*\[[^\]]*\]|[^\s,]+)")


def split_argument_text(text: str, what: str = "Arguments") -> list[str]:
    """``x=float32[64, 64] n=64`` (one line of ``--arg`` items, separated by
    spaces or commas) -> its items; RequestError naming what is not one."""
    items, position = [], 0
    for found in _ITEM.finditer(text):
        between = text[position:found.start()].strip(" \t,")
        if between:
            break
        items.append(found.group(0).rstrip(","))
        position = found.end()
    rest = text[position:].strip(" \t,")
    if rest:
        raise RequestError(f"{what}: cannot read {rest.split()[0]!r}: give NAME=SPEC items "
                           "separated by spaces (x=float32[4096] out=float32[64, 64] n=4096 "
                           "a=float32(2.5))")
    return items


def parse_arguments(items: list[str] | tuple[str, ...],
                    flag: str = "--arg") -> tuple[Argument, ...]:
    """Several ``NAME=SPEC``; a name given twice is refused."""
    found: dict[str, Argument] = {}
    for item in items:
        argument = parse_argument(item, flag)
        if argument.name in found:
            raise RequestError(f"{flag} {argument.name} is given twice ({found[argument.name]} "
                               f"and {argument})")
        found[argument.name] = argument
    return tuple(found.values())


def file_arguments(module: ModuleInfo) -> tuple[tuple[Argument, ...], int] | None:
    """The file's ``THREADMAP_ARGS = {...}`` literal, read (never run), and
    its line; None when the file has none.  The last binding counts, as in
    Python; anything but a dict literal of names to specs is refused at its
    line."""
    found = None
    for node in module.tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == FILE_NAME for t in targets):
            found = node
    if found is None:
        return None
    line = found.lineno

    def fail(message: str) -> KernelSourceError:
        return KernelSourceError(f"{FILE_NAME}: {message}", module.path, line)

    if len(getattr(found, "targets", [found])) != 1 or found.value is None:
        raise fail("write it as one assignment of a dict literal")
    try:
        value = ast.literal_eval(found.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise fail("must be a literal dict (names to specs such as 'float32[4096]' or "
                   "numbers); it is read, never run") from None
    if not isinstance(value, dict):
        raise fail(f"must be a dict of names to specs, not a {type(value).__name__}")
    arguments = []
    for name, spec in value.items():
        if not isinstance(name, str) or not re.fullmatch(_NAME, name):
            raise fail(f"{name!r} is not a parameter name")
        try:
            arguments.append(parse_spec(name, spec, f"{FILE_NAME}[{name!r}]"))
        except RequestError as exc:
            raise KernelSourceError(str(exc), module.path, line) from None
    return tuple(arguments), line


def _labeller(where: str | dict[str, str]):
    """Where each argument was given: one label, or one per name."""
    if isinstance(where, str):
        return lambda name: where
    return lambda name: where.get(name) or "--arg"


def check_arguments(arguments: tuple[Argument, ...], params: tuple[str, ...],
                    uses: ParameterUses, kernel: str, where: str | dict[str, str] = "--arg",
                    memory: int | None = None, missing_hint: str = "") -> tuple[Argument, ...]:
    """``arguments`` in parameter order, held against the kernel's use of its
    parameters; RequestError (one line, naming the argument and where it was
    given: ``where``, one label or one per name) for the first that does not
    fit.  ``memory``: bytes the arrays may take, if known."""
    label = _labeller(where)
    given = {a.name: a for a in arguments}
    for name, argument in given.items():
        if name not in params:
            raise RequestError(f"{label(name)} {name}: kernel {kernel!r} has no parameter "
                               f"{name!r} (its parameters: {', '.join(params) or 'none'})")
    for name in params:
        argument = given.get(name)
        array = name in uses.arrays
        if argument is None:
            what = ("an array it indexes with "
                    f"{_ranks_text(uses.ranks[name])}" if array else "a scalar")
            rank = min(uses.ranks[name], default=1) if array else 0
            example = f"{name}=" + ({1: "float32[4096]", 2: "float32[64, 64]"}.get(
                rank, "float32[16, 16, 16]") if array else "4096")
            raise RequestError(f"kernel {kernel!r} needs {name} described ({what}); "
                               f"e.g. --arg {example}{missing_hint}")
        if array and not isinstance(argument, ArrayArgument):
            raise RequestError(f"{label(name)} {argument}: kernel {kernel!r} indexes {name} as an "
                               f"array; give its type and shape, e.g. {name}=float32[4096]")
        if not array and isinstance(argument, ArrayArgument):
            raise RequestError(f"{label(name)} {argument}: kernel {kernel!r} uses {name} as a "
                               "scalar (never indexes it); give a number")
        if array:
            ranks = uses.ranks[name]
            rank = len(argument.shape)
            if ranks and rank not in ranks:
                raise RequestError(
                    f"{label(name)} {argument}: {rank} dimension{'s' if rank != 1 else ''}, but "
                    f"kernel {kernel!r} indexes {name} with {_ranks_text(ranks)}")
        else:
            use = uses.integer_uses.get(name)
            if use is not None and not argument.is_integer:
                line, how = use
                raise RequestError(f"{label(name)} {argument}: kernel {kernel!r} uses {name} as "
                                   f"{how} (line {line}), which must be an integer")
    total = sum(a.nbytes for a in arguments if isinstance(a, ArrayArgument))
    if memory is not None and total > memory:
        largest = max((a for a in arguments if isinstance(a, ArrayArgument)),
                      key=lambda a: a.nbytes)
        raise RequestError(f"the arrays described take {_bytes(total)}, more than the "
                           f"{_bytes(memory)} this machine has free for them (the largest: "
                           f"{largest}, {_bytes(largest.nbytes)})")
    return tuple(given[name] for name in params)


def _ranks_text(ranks: frozenset[int]) -> str:
    return " and ".join(f"{r} ind{'ex' if r == 1 else 'ices'}" for r in sorted(ranks))


def _bytes(n: int) -> str:
    from ..request import format_bytes

    return format_bytes(n)


def matmul_fields(arguments: tuple[Argument, ...], plan, where: str | dict[str, str],
                  known: dict[str, tuple[int, str]] | None = None) -> dict:
    """See :func:`_matmul_fields`; a refusal also says how the kernel's
    arrays were read (ThreadMap runs kernels as C = A @ B so far)."""
    try:
        return _matmul_fields(arguments, plan, where, known or {})
    except RequestError as exc:
        names = (*plan.inputs, plan.output)
        if tuple(n.upper() for n in names) == ("A", "B", "C"):
            raise
        raise RequestError(f"{exc} (ThreadMap read the kernel as C = A @ B: {names[0]} as "
                           f"A, {names[1]} as B, {names[2]} as C; to run it as it is, give "
                           "--reference FILE.py:FUNCTION, your code that returns the expected "
                           f"{names[2]})") from None


def _matmul_fields(arguments: tuple[Argument, ...], plan, where: str | dict[str, str],
                   known: dict[str, tuple[int, str]]) -> dict:
    """A description of a kernel that fits the matmul convention, as the
    request's fields (m, k, n, dtype, scalars): A is M x K, B is K x N and C
    is M x N.  A flattened matrix (indexed with one subscript) is described by
    its length; its M, K or N then come from the 2-D ones, or from scalars
    named for them (m, k, n, rows, cols, ...).  Each mismatch names the
    argument."""
    label = _labeller(where)
    by_name = {a.name: a for a in arguments}
    a_name, b_name = plan.inputs
    c_name = plan.output
    roles = ((a_name, "A", ("m", "k")), (b_name, "B", ("k", "n")), (c_name, "C", ("m", "n")))
    # m/k/n -> (value, what gave it); ``known``: from --scalar
    dims: dict[str, tuple[int, str]] = dict(known)
    dtypes = {by_name[name].dtype for name, _, _ in roles}
    for name, _, _ in roles:
        argument = by_name[name]
        if len(argument.shape) > 2:
            raise RequestError(f"{label(argument.name)} {argument}: a matrix has 2 dimensions "
                               "(or 1, flattened)")
        if argument.dtype not in ("float32", "float64"):
            raise RequestError(f"{label(argument.name)} {argument}: the matmul's matrices are "
                               f"float32 or float64, not {argument.dtype}")
    if len(dtypes) > 1:
        odd = next(by_name[n] for n, _, _ in roles if by_name[n].dtype != by_name[a_name].dtype)
        raise RequestError(f"{label(odd.name)} {odd}: {odd.dtype}, where {by_name[a_name]} is "
                           f"{by_name[a_name].dtype}: the matrices share one dtype")

    def settle(letter: str, value: int, argument, what: str) -> None:
        if value > MAX_DIMENSION:
            raise RequestError(f"{label(argument.name)} {argument}: its {what} makes "
                               f"{letter.upper()} {value:,}, past ThreadMap's largest matrix "
                               f"side, {MAX_DIMENSION:,}")
        known = dims.get(letter)
        if known is not None and known[0] != value:
            raise RequestError(f"{label(argument.name)} {argument}: its {what} is {value:,}, but "
                               f"{known[1]} makes {letter.upper()} {known[0]:,} "
                               f"(C = A @ B: A is M x K, B is K x N, C is M x N)")
        dims.setdefault(letter, (value, str(argument)))

    for name, _, (rows, cols) in roles:
        argument = by_name[name]
        if len(argument.shape) == 2:
            settle(rows, argument.shape[0], argument, "row count")
            settle(cols, argument.shape[1], argument, "column count")
    for argument in arguments:
        meaning = DIMENSION_NAMES.get(argument.name, "?")
        if isinstance(argument, ScalarArgument) and meaning in ("m", "k", "n"):
            if not argument.is_integer or argument.value < 1:
                raise RequestError(f"{label(argument.name)} {argument}: {argument.name} is "
                                   f"the matrices' {meaning.upper()}, a positive whole number")
            settle(meaning, int(argument.value), argument, "value")
    for name, role, (rows, cols) in roles:
        argument = by_name[name]
        if len(argument.shape) == 1:
            missing = [d.upper() for d in (rows, cols) if d not in dims]
            if missing:
                raise RequestError(
                    f"{label(argument.name)} {argument}: {role} is flattened, so its length "
                    f"alone does not give {' and '.join(missing)}; describe another matrix in "
                    f"2-D, or give {' and '.join(missing)} as a scalar (e.g. "
                    f"{missing[0].lower()}=64)")
            want = dims[rows][0] * dims[cols][0]
            if argument.shape[0] != want:
                raise RequestError(f"{label(argument.name)} {argument}: {role} holds "
                                   f"{rows.upper()} x {cols.upper()} = {want:,} elements, not "
                                   f"{argument.shape[0]:,}")
    scalars = tuple((a.name, a.value) for a in arguments if isinstance(a, ScalarArgument))
    return {"m": dims["m"][0], "k": dims["k"][0], "n": dims["n"][0], "dtype": dtypes.pop(),
            "scalars": scalars}


def describe_request(request: RunRequest, items: list[str] | tuple[str, ...] = (),
                     shape_given: bool = False, dtype_given: str | None = None,
                     as_it_is_unless_matmul: bool = False) -> RunRequest:
    """``request`` with the arguments described by ``--arg`` and by the
    kernel file's THREADMAP_ARGS (read, never run): M, K, N and the dtype
    from the matrices, the scalars' values.

    ``--arg`` replaces the file's entries by name; ``--shape`` replaces the
    file's matrices and dimension scalars (m, k, n, ...), and cannot be given
    with ``--arg`` matrices; ``--dtype`` replaces the file's dtype;
    ``--scalar`` replaces the file's scalar, and cannot name one ``--arg``
    gives.  In a file of several kernels, the entries that are no parameter
    of the chosen one are another kernel's, and left out.

    ``as_it_is_unless_matmul`` (``check``, which never runs a reference):
    a kernel of three arrays whose description does not fit C = A @ B runs as
    it is, with maps and checks only, instead of being refused."""
    given = parse_arguments(items)
    if request.reference is not None and not request.kernel_file:
        raise RequestError("--reference is for a kernel file whose arguments are described "
                           "(--arg, or THREADMAP_ARGS in the file); a built-in kernel is "
                           "checked against A @ B")
    if not given and not request.kernel_file:
        return request
    if shape_given and any(isinstance(a, ArrayArgument) for a in given):
        raise RequestError("--shape and --arg matrices both give the shapes: give one")
    # A kernel outside the matmul convention, or one with a reference, runs as
    # it is: its arrays as described.  (A reference never comes from a file.)
    as_it_is = request.reference is not None or not _fits_matmul(request)
    plan = load_plan(request, matmul=not as_it_is)
    params = plan.kernel.params
    found = file_arguments(plan.module) if request.kernel_file else None
    described: dict[str, Argument] = {}
    in_file = hint = ""
    if found is not None:
        entries, line = found
        in_file = f"{os.path.basename(plan.module.path)}:{line} THREADMAP_ARGS"
        hint = f" ({in_file} does not describe it)"
        several = len(plan.module.kernels) > 1
        for argument in entries:
            if several and argument.name not in params:
                continue  # (another kernel's)
            if shape_given and (isinstance(argument, ArrayArgument)
                                or DIMENSION_NAMES.get(argument.name, "?") in _DIMS):
                continue  # (the command line's shape wins)
            if dtype_given and isinstance(argument, ArrayArgument):
                argument = ArrayArgument(argument.name, dtype_given, argument.shape)
            described[argument.name] = argument
    if not given and not described:
        if request.reference is not None:
            raise RequestError(f"--reference needs the arguments of kernel {plan.name!r} "
                               "described (--arg NAME=float32[4096], or THREADMAP_ARGS in the "
                               "file)")
        if as_it_is:
            raise ArgumentsNeeded(f"kernel {plan.name!r} ({', '.join(plan.arrays)}) is not C = "
                               "A @ B: describe its arguments (--arg NAME=float32[4096], or "
                               "THREADMAP_ARGS in the file)")
        return request
    for argument in given:
        if dtype_given and isinstance(argument, ArrayArgument) and \
                argument.dtype != dtype_given:
            raise RequestError(f"--dtype {dtype_given}, but --arg {argument} is "
                               f"{argument.dtype}: give one")
        described[argument.name] = argument
    sources = {name: "--arg" if any(a.name == name for a in given) else in_file
               for name in described}
    scalars_given = dict(request.scalars)
    for name in scalars_given:
        if name in plan.arrays:
            raise RequestError(f"--scalar {name}: kernel {plan.name!r} indexes {name} as an "
                               "array, not a scalar")
        if sources.get(name) == "--arg":
            raise RequestError(f"--scalar {name} and --arg {name} both give {name}: give one")
        described.pop(name, None)  # (--scalar wins over the file)
    if as_it_is:
        return _as_it_is(request, plan, described, sources, hint if not given else "")
    if any(isinstance(a, ArrayArgument) and a.dtype not in ("float32", "float64")
           for a in described.values()):
        # (an integer array is no matmul's matrix: a histogram, a gather)
        return _as_it_is(request, load_plan(request, matmul=False), described, sources,
                         hint if not given else "")
    known = _dimension_scalars(scalars_given, "--scalar")
    for name in described:
        if name not in params:
            raise RequestError(f"{sources[name]} {name}: kernel {plan.name!r} has no parameter "
                               f"{name!r} (its parameters: {', '.join(params) or 'none'})")
    if not any(isinstance(a, ArrayArgument) for a in described.values()):
        # Scalars alone: those named for a dimension give it (--shape's must agree).
        scalars = {a.name: a.value for a in described.values()}
        dims = _dimension_scalars(scalars, None, sources)
        for letter, (value, what) in {**known, **dims}.items():
            current = getattr(request, letter)
            if shape_given and value != current:
                raise RequestError(f"{what}, but --shape makes {letter.upper()} {current:,}")
        return request.with_(scalars=request.scalars + tuple(scalars.items()),
                             **{letter: value for letter, (value, _) in {**known, **dims}.items()})
    ordered = check_arguments(tuple(described.values()),
                              tuple(p for p in params if p not in scalars_given),
                              parameter_uses(plan.module, plan.kernel), plan.name, sources,
                              missing_hint=hint if not given else "")
    try:
        fields = matmul_fields(ordered, plan, sources, known)
    except RequestError:
        if not as_it_is_unless_matmul:
            raise
        return _as_it_is(request, load_plan(request, matmul=False), described, sources, hint)
    return request.with_(m=fields["m"], k=fields["k"], n=fields["n"], dtype=fields["dtype"],
                         scalars=request.scalars + fields["scalars"])


def describe_value(name: str, value: object, where: str) -> Argument:
    """The description of a value the caller gave (the Python API's
    ``args``): a numpy array's dtype and shape, a number's value (a numpy
    scalar's type kept); anything else refused, naming ``where``."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return ArrayArgument(name, value.dtype.name, tuple(int(d) for d in value.shape))
    if isinstance(value, np.ndarray):
        value = value[()]
    if hasattr(value, "copy_to_host"):
        raise RequestError(f"{where} is a device array: give ThreadMap its host copy "
                           "(.copy_to_host()); it never runs the kernel on your arrays in "
                           "place")
    if isinstance(value, (bool, np.bool_)):
        raise RequestError(f"{where}: {value!r} is a bool (a kernel takes no bool scalars "
                           "here; give 0 or 1)")
    if isinstance(value, (np.integer, np.floating)):
        if value.dtype.name not in SCALAR_DTYPES:
            raise RequestError(f"{where}: a {value.dtype.name} scalar is not taken (types: "
                               f"{', '.join(SCALAR_DTYPES)})")
        number = int(value) if isinstance(value, np.integer) else float(value)
        if isinstance(number, float) and not math.isfinite(number):
            raise RequestError(f"{where}: {number} is not a finite number")
        return _scalar(name, number, value.dtype.name, where)
    if isinstance(value, int):
        return _scalar(name, value, None, where)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RequestError(f"{where}: {value} is not a finite number")
        return _scalar(name, value, None, where)
    raise RequestError(f"{where}: expected a numpy array or a number, not "
                       f"{type(value).__name__} (np.asarray makes an array of a list)")


def describe_given(request: RunRequest, arguments: tuple[Argument, ...],
                   where: dict[str, str]) -> RunRequest:
    """``request`` run as it is on the arguments the caller gave (the Python
    API's ``args``), whatever the kernel's arrays: the caller's own values
    are the run's inputs, so even a C = A @ B kernel is checked only against
    the caller's reference."""
    return _as_it_is(request, load_plan(request, matmul=False),
                     {a.name: a for a in arguments}, where, "")


_DIMS = ("m", "k", "n")


def _fits_matmul(request: RunRequest) -> bool:
    """Whether the request's kernel takes three arrays (the matmul
    convention); other errors of its plan are left for the run to say."""
    try:
        load_plan(request, matmul=True)
    except KernelSourceError as exc:
        # (three arrays, one of them indexed with 3 indices: no matrix)
        if "expected the matmul convention" in str(exc) or "matrices take 2" in str(exc):
            return False
    return True


def wrapped_shape(length: int) -> tuple[int, int]:
    """(rows, row length) of a 1-D array of ``length`` drawn as a matrix:
    the row length the divisor of ``length`` nearest above its square root
    (4096: 64 x 64; 1000: 25 x 40), one row where none is near (a prime)."""
    low = math.isqrt(length)
    for width in range(max(low, 1), min(length, 4 * low + 4) + 1):
        if length % width == 0 and width * width >= length:
            return length // width, width
    return 1, length


def drawn_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, columns) of the matrix an array of ``shape`` is drawn as (its
    maps, and a described output's C): a 1-D array wrapped into rows
    (``wrapped_shape``), a 2-D one as it is, a 3-D one (d0, d1, d2) as its d0
    slices of d1 x d2 stacked (d0 * d1, d2): slice s is rows s * d1 up to
    (s + 1) * d1, which the app shows one at a time (``slice_rows``)."""
    if len(shape) == 1:
        return wrapped_shape(int(shape[0]))
    if len(shape) == 3:
        return int(shape[0]) * int(shape[1]), int(shape[2])
    return int(shape[0]), int(shape[1])


def slice_rows(shape: tuple[int, ...], index: int) -> slice:
    """The rows of slice ``index`` of a 3-D array of ``shape`` in its drawn
    matrix (``drawn_shape``)."""
    return slice(index * int(shape[1]), (index + 1) * int(shape[1]))


def _as_it_is(request: RunRequest, plan, described: dict[str, Argument],
              sources: dict[str, str], hint: str) -> RunRequest:
    """A described run: every parameter described, its arrays of 1 or 2
    dimensions, each of its own dtype (float32, float64 or an integer type:
    a histogram's int32 bins, CSR's indices); the run's dtype is the
    output's."""
    ordered = check_arguments(tuple(described.values()),
                              tuple(p for p in plan.kernel.params
                                    if p not in dict(request.scalars)),
                              parameter_uses(plan.module, plan.kernel), plan.name, sources,
                              missing_hint=hint)
    label = _labeller(sources)
    arrays = [a for a in ordered if isinstance(a, ArrayArgument)]
    for argument in arrays:
        if len(argument.shape) > 3:
            raise RequestError(f"{label(argument.name)} {argument}: arrays of "
                               f"{len(argument.shape)} dimensions are not drawn (1, 2 or 3)")
        if argument.dtype == "float16":
            raise RequestError(f"{label(argument.name)} {argument}: float16 arrays are not run "
                               "yet (float32, float64 or an integer type)")
        if argument.dtype not in DESCRIBED_DTYPES:
            raise RequestError(f"{label(argument.name)} {argument}: ThreadMap runs arrays of "
                               f"{', '.join(DESCRIBED_DTYPES)}, not {argument.dtype}")
    output = next(a for a in arrays if a.name == plan.output)
    m, n = drawn_shape(output.shape)
    scalars = tuple((a.name, a.value) for a in ordered if isinstance(a, ScalarArgument))
    return request.with_(arguments=tuple(ordered), m=m, k=1, n=n, dtype=output.dtype,
                         scalars=request.scalars + scalars)


def _dimension_scalars(values: dict[str, int | float], flag: str | None,
                       sources: dict[str, str] | None = None) -> dict[str, tuple[int, str]]:
    """M, K or N from scalars named for them (m, rows, ...): letter ->
    (value, where it was given); each a positive whole number."""
    dims = {}
    for name, value in values.items():
        letter = DIMENSION_NAMES.get(name, "?")
        if letter not in _DIMS:
            continue
        what = f"{flag or (sources or {}).get(name) or '--arg'} {name}={value}"
        if isinstance(value, float) or value < 1:
            raise RequestError(f"{what}: {name} is the matrices' {letter.upper()}, a positive "
                               "whole number")
        dims[letter] = (int(value), what)
    return dims
