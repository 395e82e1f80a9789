"""A kernel's ``@cuda.jit`` decorator: its signature and options, checked, never evaluated.

numba would evaluate a signature string (``eval`` in its types' namespace)
and refuse a kernel whose signature does not fit its parameters; ThreadMap
strips decorators from what it generates, so it must refuse the same
kernels itself, or it would PASS a kernel numba never compiles.  The
signature is read as syntax: a return type ``void`` (or ``none``) called
with one type per parameter, each a numba scalar type (``int32``, ``f8``) or
an array of one (``float32[:, :]``, ``float64[:, ::1]``), or a tuple of them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import UnsupportedConstruct
from .allow import numba_type_name

#: Options of ``cuda.jit`` a kernel may give, as literals.
JIT_OPTIONS = frozenset({"device", "inline", "forceinline", "fastmath", "debug", "opt",
                         "lineinfo", "cache", "max_registers", "launch_bounds", "lto"})
_FLOATS = {"float32": "float32", "f4": "float32", "float64": "float64", "f8": "float64",
           "double": "float64"}
_SCALARS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp",
            "uintp", "intc", "uintc", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "byte",
            "int_", "uint", "float16", "f2", "boolean", "bool_", "b1"} | set(_FLOATS)
_MAX_SIGNATURE_CHARS = 2000


@dataclass(frozen=True)
class ParamType:
    """One parameter's type in a signature: a scalar, or an array of ``ndim``."""

    dtype: str
    ndim: int = 0


def check_decorator(decorator: ast.expr, kernel: str, params: tuple[str, ...],
                    array_ndim: dict[str, int], resolve, path: str) -> tuple[str, int] | None:
    """Check a kernel's ``@cuda.jit(...)``; return (dtype, line) when its
    signature fixes the arrays' dtype, else None.

    ``array_ndim`` gives the dimensions of each array parameter (from its
    indexing); ``resolve`` gives an expression's dotted name through the
    file's imports.  Raises :class:`UnsupportedConstruct` at the decorator's
    line for anything numba would refuse, or ThreadMap cannot check.
    """
    if not isinstance(decorator, ast.Call):
        return None
    line = decorator.lineno

    def fail(message: str) -> UnsupportedConstruct:
        return UnsupportedConstruct(f"kernel {kernel!r}: {message}", path, line)

    for keyword in decorator.keywords:
        if keyword.arg is None:
            raise fail("the decorator's options must be written out (no **options)")
        if keyword.arg == "link":
            raise fail("link= adds compiled code that ThreadMap cannot see or check")
        if keyword.arg not in JIT_OPTIONS:
            raise fail(f"cuda.jit has no option {keyword.arg!r} that ThreadMap knows "
                       f"(options: {', '.join(sorted(JIT_OPTIONS))})")
        if not _literal(keyword.value):
            raise fail(f"the option {keyword.arg}= must be a literal, not "
                       f"{ast.unparse(keyword.value)!r}")
    if len(decorator.args) > 1:
        raise fail("cuda.jit takes one signature")
    if not decorator.args:
        return None
    given = decorator.args[0]
    if isinstance(given, ast.List) and len(given.elts) == 1:
        given = given.elts[0]  # a list of one signature
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        text = given.value
        if len(text) > _MAX_SIGNATURE_CHARS:
            raise fail(f"a signature of {len(text):,} characters")
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise fail(f"the signature {text!r} is not a numba signature (numba would refuse "
                       "it); write e.g. 'void(float32[:, :], float32[:, :], float32[:, :])'") \
                from None
        names = _bare_name
        shown = text
    elif isinstance(given, (ast.List, ast.Tuple)) and given.elts and all(
            _is_signature(e) for e in given.elts):
        raise fail("several signatures: ThreadMap checks a kernel with one")
    else:
        node = given
        names = resolve
        shown = ast.unparse(given)
    arguments = _signature_arguments(node, names, fail, shown)
    if len(arguments) != len(params):
        raise fail(f"its signature gives {len(arguments)} argument type"
                   f"{'s' if len(arguments) != 1 else ''} for {len(params)} parameters "
                   f"({', '.join(params)}): numba would refuse it")
    dtypes = set()
    for name, kind in zip(params, arguments):
        if name in array_ndim:
            if not kind.ndim:
                raise fail(f"its signature types the array {name!r} as the scalar "
                           f"{kind.dtype}: numba would refuse it")
            if kind.ndim != array_ndim[name]:
                raise fail(f"its signature gives {name!r} {kind.ndim} dimension"
                           f"{'s' if kind.ndim != 1 else ''}, but the kernel indexes it with "
                           f"{array_ndim[name]}")
            if kind.dtype not in _FLOATS:
                raise fail(f"its signature types {name!r} as {kind.dtype} arrays; ThreadMap's "
                           "matrices are float32 or float64")
            dtypes.add(_FLOATS[kind.dtype])
        elif kind.ndim:
            raise fail(f"its signature types the scalar parameter {name!r} as an array")
        elif kind.dtype not in _SCALARS:
            raise fail(f"its signature types {name!r} as {kind.dtype}, not a number")
    if len(dtypes) > 1:
        raise fail("its signature mixes float32 and float64 arrays; ThreadMap runs one dtype")
    return (dtypes.pop(), line) if dtypes else None


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_literal(e) for e in node.elts)
    return isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)


def _is_signature(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) or (isinstance(node, ast.Constant)
                                          and isinstance(node.value, str))


def _bare_name(node: ast.expr) -> str | None:
    """A signature string's names: numba's type names, as numba reads them."""
    return f"numba.types.{node.id}" if isinstance(node, ast.Name) else None


def _type_name(node: ast.expr, names) -> str | None:
    return numba_type_name(names(node) or "")


def _signature_arguments(node: ast.expr, names, fail, shown: str) -> list[ParamType]:
    if isinstance(node, ast.Call):
        returns = _type_name(node.func, names)
        if returns is None:
            raise fail(f"the signature {shown!r} is not a numba signature "
                       "(numba would refuse it)")
        if returns not in ("void", "none"):
            raise fail(f"its signature returns {returns}; a CUDA kernel returns void")
        if node.keywords:
            raise fail("a signature takes no keywords")
        items = node.args
    elif isinstance(node, ast.Tuple):
        items = node.elts
    else:
        raise fail(f"the signature {shown!r} is not a numba signature (numba "
                   "would refuse it); write e.g. 'void(float32[:, :], float32[:, :], "
                   "float32[:, :])'")
    return [_param_type(item, names, fail) for item in items]


def _param_type(node: ast.expr, names, fail) -> ParamType:
    if isinstance(node, ast.Subscript):
        scalar = _type_name(node.value, names)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if scalar is None or scalar in ("void", "none") or not all(
                _whole_axis(p) for p in parts):
            raise fail(f"{ast.unparse(node)!r} in its signature is not a numba array type "
                       "(write e.g. float32[:, :])")
        return ParamType(scalar, len(parts))
    scalar = _type_name(node, names)
    if scalar is None or scalar in ("void", "none"):
        raise fail(f"{ast.unparse(node)!r} in its signature is not a numba type")
    return ParamType(scalar)


def _whole_axis(node: ast.expr) -> bool:
    """``:`` or ``::1`` (a contiguous axis), as numba's array types take them."""
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and (
        node.step is None or (isinstance(node.step, ast.Constant) and node.step.value == 1))
