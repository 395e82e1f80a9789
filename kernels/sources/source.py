"""Find the CUDA kernels in a Python file without running it.

The file is parsed, never executed: its top-level code (timers, test runs,
prints, host functions) must not run.  What a kernel needs to compile is
collected from the syntax tree: the module's imports of numpy / math / numba,
and the simple module-level constants (``TPB = 16``) it uses.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KernelSourceError

#: Modules whose imports are copied next to a kernel; anything else a kernel
#: file imports (time, matplotlib, ...) is host code and is left out.
KEPT_IMPORT_ROOTS = frozenset({"numpy", "math", "cmath", "numba"})

_JIT_NAMES = frozenset({"numba.cuda.jit"})


@dataclass(frozen=True)
class Launch:
    """A launch configuration: grid and block, each a tuple of 1 or 2 ints
    (a file's own launch may have 3; ``line`` is where the file launches)."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    line: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{format_dims(self.grid)} x {format_dims(self.block)}"


def format_dims(dims: tuple[int, ...]) -> str:
    """``(4,)`` -> ``"4"``, ``(4, 2)`` -> ``"4x2"``."""
    return "x".join(str(d) for d in dims)


@dataclass(frozen=True)
class KernelDef:
    """One ``@cuda.jit`` kernel function found in a source file."""

    name: str
    node: ast.FunctionDef = field(compare=False, repr=False)
    lineno: int
    params: tuple[str, ...]
    #: The file's own literal launch of this kernel, if it has one.
    launch: Launch | None = None


@dataclass(frozen=True)
class ModuleInfo:
    """What a kernel file provides, read from its syntax tree."""

    path: str
    text: str = field(repr=False)
    tree: ast.Module = field(compare=False, repr=False)
    #: local name -> dotted name it refers to (``np`` -> ``numpy``).
    aliases: dict[str, str] = field(compare=False)
    #: import statements to copy next to the kernel, as source lines.
    imports: tuple[str, ...]
    #: module-level constants: name -> (value expression, line).
    constants: dict[str, tuple[ast.expr, int]] = field(compare=False)
    kernels: tuple[KernelDef, ...]
    #: names of ``cuda.jit(device=True)`` functions (not runnable on their own).
    device_functions: tuple[str, ...] = ()
    #: kernel name -> lines of earlier definitions that a later one replaced
    #: (as Python binds the name, the last definition is the kernel)
    redefined: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)

    def kernel(self, name: str | None) -> KernelDef:
        """The kernel called ``name``; with ``None``, the only kernel."""
        if not self.kernels:
            raise KernelSourceError(
                "no CUDA kernel found: expected a function decorated with "
                "@cuda.jit (or @numba.cuda.jit)", self.path)
        if name is None:
            if len(self.kernels) > 1:
                names = ", ".join(k.name for k in self.kernels)
                raise KernelSourceError(
                    f"the file has {len(self.kernels)} kernels ({names}): "
                    "choose one by name", self.path)
            return self.kernels[0]
        for kernel in self.kernels:
            if kernel.name == name:
                return kernel
        names = ", ".join(k.name for k in self.kernels)
        raise KernelSourceError(f"no kernel named {name!r} (found: {names})", self.path)


def read_module(path: str | Path) -> ModuleInfo:
    """Parse a kernel file from disk (see :func:`parse_module`)."""
    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark is read as CPython reads it (ignored).
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise KernelSourceError(f"cannot read the file: {exc.strerror or exc}", str(path)) from None
    except UnicodeDecodeError:
        raise KernelSourceError("the file is not UTF-8 text", str(path)) from None
    return parse_module(text, str(path))


def parse_module(text: str, path: str = "<kernel>") -> ModuleInfo:
    """Parse kernel source text and collect its kernels, imports and constants.

    Raises
    ------
    KernelSourceError
        If the text is not valid Python.
    """
    text = text.lstrip("\ufeff")  # a byte-order mark, as CPython ignores it
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise KernelSourceError(f"the file does not parse: {exc.msg}", path,
                                exc.lineno, exc.offset) from None
    aliases: dict[str, str] = {}
    imports: list[str] = []
    constants: dict[str, tuple[ast.expr, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kept = _record_import(node, aliases)
            if kept is not None:
                imports.append(ast.unparse(kept))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            _record_constant(node, aliases, constants)
    kernels: dict[str, KernelDef] = {}
    redefined: dict[str, tuple[int, ...]] = {}
    device_functions: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        role = _jit_role(node, aliases)
        if role == "kernel":
            if node.name in kernels:
                redefined[node.name] = redefined.get(node.name, ()) + (kernels[node.name].lineno,)
                del kernels[node.name]  # Python binds the name to the last definition
            kernels[node.name] = KernelDef(
                name=node.name, node=node, lineno=node.lineno,
                params=tuple(a.arg for a in node.args.args),
                launch=_find_literal_launch(tree, node.name, constants))
        elif role == "device":
            device_functions.append(node.name)
    return ModuleInfo(path=path, text=text.lstrip("\ufeff"), tree=tree, aliases=aliases,
                      imports=tuple(imports), constants=constants,
                      kernels=tuple(kernels.values()), device_functions=tuple(device_functions),
                      redefined=redefined)


def qualified_name(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The dotted name an expression refers to through the file's imports.

    ``cuda.threadIdx.x`` -> ``numba.cuda.threadIdx.x`` after
    ``from numba import cuda``; ``None`` for anything not rooted in an import.
    """
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    parts.append(aliases[node.id])
    return ".".join(reversed(parts))


def _record_import(node: ast.Import | ast.ImportFrom,
                   aliases: dict[str, str]) -> ast.Import | ast.ImportFrom | None:
    """Note the names an import binds; return the part of it to copy next to a
    kernel (only numpy / math / numba names: ``import numpy, os`` keeps numpy)."""
    if isinstance(node, ast.Import):
        kept_names = []
        for alias in node.names:
            root = alias.name.split(".")[0]
            if alias.asname:
                aliases[alias.asname] = alias.name
            else:
                aliases[root] = root
            if root in KEPT_IMPORT_ROOTS:
                kept_names.append(alias)
        return ast.Import(names=kept_names) if kept_names else None
    if node.level or not node.module:
        return None
    for alias in node.names:
        if alias.name == "*":
            continue
        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    if node.module.split(".")[0] not in KEPT_IMPORT_ROOTS:
        return None
    names = [alias for alias in node.names if alias.name != "*"]
    return ast.ImportFrom(module=node.module, names=names, level=0) if names else None


def _is_constant_expr(node: ast.expr, aliases: dict[str, str],
                      constants: dict[str, tuple[ast.expr, int]]) -> bool:
    """Literals, arithmetic on them, tuples of them, earlier constants, and
    numeric casts such as ``float32(1)``: values numba can freeze as globals."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex, bool))
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.UnaryOp):
        return _is_constant_expr(node.operand, aliases, constants)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Pow, ast.LShift)) and not (
                isinstance(node.right, ast.Constant) and isinstance(node.right.value, int)
                and 0 <= node.right.value <= 64):
            return False  # 10 ** 10 ** 9 would hang the import of the derived module
        return (_is_constant_expr(node.left, aliases, constants)
                and _is_constant_expr(node.right, aliases, constants))
    if isinstance(node, ast.Tuple):
        return all(_is_constant_expr(e, aliases, constants) for e in node.elts)
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1:
        target = qualified_name(node.func, aliases) or ""
        numeric_cast = target.startswith(("numpy.", "numba.")) and target.split(".")[-1] in {
            "float16", "float32", "float64", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64", "intp"}
        return numeric_cast and _is_constant_expr(node.args[0], aliases, constants)
    return False


def _record_constant(node: ast.Assign | ast.AnnAssign, aliases: dict[str, str],
                     constants: dict[str, tuple[ast.expr, int]]) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    value = node.value
    for target in targets:
        if not isinstance(target, ast.Name):
            continue
        if value is not None and _is_constant_expr(value, aliases, constants):
            constants[target.id] = (value, node.lineno)
        else:
            # Rebound to something that is not a constant: no longer usable.
            constants.pop(target.id, None)


def _jit_role(func: ast.FunctionDef, aliases: dict[str, str]) -> str | None:
    """``"kernel"``, ``"device"`` or ``None`` from the function's decorators."""
    for decorator in func.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = qualified_name(call.func if call else decorator, aliases)
        if target not in _JIT_NAMES:
            continue
        device = False
        if call:
            for kw in call.keywords:
                if kw.arg == "device" and isinstance(kw.value, ast.Constant):
                    device = bool(kw.value.value)
        return "device" if device else "kernel"
    return None


def _literal_dims(node: ast.expr, local: dict[str, ast.expr],
                  constants: dict[str, tuple[ast.expr, int]]) -> tuple[int, ...] | None:
    if isinstance(node, ast.Name):
        if node.id in local:
            return _literal_dims(local[node.id], {}, constants)
        if node.id in constants:
            return _literal_dims(constants[node.id][0], {}, constants)
        return None
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return (node.value,)
    if isinstance(node, ast.Tuple) and 1 <= len(node.elts) <= 3:
        dims = []
        for elt in node.elts:
            one = _literal_dims(elt, local, constants)
            if one is None or len(one) != 1:
                return None
            dims.append(one[0])
        return tuple(dims)
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return (value,) if type(value) is int else None


def _find_literal_launch(tree: ast.Module, kernel_name: str,
                         constants: dict[str, tuple[ast.expr, int]]) -> Launch | None:
    """The first ``kernel[grid, block](...)`` whose grid and block are literals,
    or names bound to literals in the same function or at module level."""
    scopes: list[ast.AST] = [tree] + [n for n in ast.walk(tree)
                                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        local: dict[str, ast.expr] = {}
        body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else []
        for stmt in body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                local[stmt.targets[0].id] = stmt.value
            for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef) else ():
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
                    continue
                sub = node.func
                if not (isinstance(sub.value, ast.Name) and sub.value.id == kernel_name):
                    continue
                if not (isinstance(sub.slice, ast.Tuple) and len(sub.slice.elts) >= 2):
                    continue
                grid = _literal_dims(sub.slice.elts[0], local, constants)
                block = _literal_dims(sub.slice.elts[1], local, constants)
                if grid and block:
                    return Launch(grid, block, node.lineno)
    return None
