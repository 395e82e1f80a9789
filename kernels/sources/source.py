"""Find the CUDA kernels in a Python file without running it.

The file is parsed, never executed: its top-level code (timers, test runs,
prints, host functions) must not run.  What a kernel needs to compile is
collected from the syntax tree: the names the file imports from numpy / math /
numba (those on the allow-list, ``allow.py``), and the module-level constants
(``TPB = 16``), evaluated by ``allow.evaluate``, never by Python.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KernelSourceError
from ..words import quoted
from .allow import ALLOWED_NAMES, NotConstant, allowed_import, evaluate, reserved
from .limits import MAX_KERNELS, kernel_text, parse

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
    #: local name -> dotted name it refers to (``np`` -> ``numpy``), for every import.
    aliases: dict[str, str] = field(compare=False)
    #: import statements for the allowed names, written by ThreadMap (allow.py).
    imports: tuple[str, ...]
    #: module-level constants: name -> (value expression, line).
    constants: dict[str, tuple[ast.expr, int]] = field(compare=False)
    kernels: tuple[KernelDef, ...]
    #: names of ``cuda.jit(device=True)`` functions (not runnable on their own).
    device_functions: tuple[str, ...] = ()
    #: kernel name -> lines of earlier definitions that a later one replaced
    #: (as Python binds the name, the last definition is the kernel)
    redefined: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    #: module constants' values (allow.evaluate): what generated code and
    #: every later evaluation use, never the expression
    values: dict[str, object] = field(default_factory=dict, compare=False)
    #: names assigned at module level whose value is not a constant: (why, line)
    refused_constants: dict[str, tuple[str, int]] = field(default_factory=dict, compare=False)
    #: where and how the module's top level binds each name (module_bindings)
    bindings: dict[str, tuple[tuple[int, str], ...]] = field(default_factory=dict,
                                                             compare=False)

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
    """Parse a kernel file from disk (see :func:`parse_module`); a FIFO, a
    device or a file past the size limit is refused without blocking."""
    return parse_module(kernel_text(str(path)), str(path))


def parse_module(text: str, path: str = "<kernel>") -> ModuleInfo:
    """Parse kernel source text and collect its kernels, imports and constants.

    Raises
    ------
    KernelSourceError
        If the text is not valid Python, or is past one of the limits of
        ``limits.py``.
    """
    text = text.lstrip("\ufeff")  # a byte-order mark, as CPython ignores it
    tree = parse(text, path)
    aliases: dict[str, str] = {}
    constants: dict[str, tuple[ast.expr, int]] = {}
    values: dict[str, object] = {}
    refused: dict[str, tuple[str, int]] = {}
    causes: dict[str, tuple[str, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _record_import(node, aliases)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            _record_constant(node, aliases, constants, values, refused, causes)
    kernels: dict[str, KernelDef] = {}
    redefined: dict[str, tuple[int, ...]] = {}
    device_functions: list[str] = []
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    roles = {id(node): _jit_role(node, aliases) for node in functions}
    count = sum(role == "kernel" for role in roles.values())
    if count > MAX_KERNELS:
        raise KernelSourceError(f"the file defines {count:,} kernels; ThreadMap reads files of "
                                f"up to {MAX_KERNELS}", path)
    launches = _find_literal_launches(tree, {n.name for n in functions
                                             if roles[id(n)] == "kernel"}, values, aliases)
    for node in functions:
        role = roles[id(node)]
        if role == "kernel":
            if node.name in kernels:
                redefined[node.name] = redefined.get(node.name, ()) + (kernels[node.name].lineno,)
                del kernels[node.name]  # Python binds the name to the last definition
            kernels[node.name] = KernelDef(
                name=node.name, node=node, lineno=node.lineno,
                params=tuple(a.arg for a in node.args.args),
                launch=launches.get(node.name))
        elif role == "device":
            device_functions.append(node.name)
    return ModuleInfo(path=path, text=text, tree=tree, aliases=aliases,
                      imports=_import_lines(aliases), constants=constants,
                      kernels=tuple(kernels.values()), device_functions=tuple(device_functions),
                      redefined=redefined, values=values, refused_constants=refused,
                      bindings=module_bindings(tree))


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


def _record_import(node: ast.Import | ast.ImportFrom, aliases: dict[str, str]) -> None:
    """Note the dotted name each name bound by an import refers to (every
    import: a decorator may come through any of them; only allowed ones are
    copied next to a kernel, see :func:`_import_lines`)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                aliases[root] = root
        return
    if node.level or not node.module:
        return
    for alias in node.names:
        if alias.name != "*":
            aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"


def _import_lines(aliases: dict[str, str]) -> tuple[str, ...]:
    """Import statements for the names of the file's imports that a kernel may
    use (allow.py), written by ThreadMap from those names: the file's own
    import lines are never copied (``from numpy.testing._private.utils import
    os`` binds a name, ``os``, that no kernel may use)."""
    lines = []
    for local, qualified in allowed_aliases(aliases).items():
        module, _, name = qualified.rpartition(".")
        if not module:
            lines.append(f"import {qualified}" + ("" if local == qualified else f" as {local}"))
        else:
            lines.append(f"from {module} import {name}" + ("" if local == name else f" as {local}"))
    return tuple(lines)


def allowed_aliases(aliases: dict[str, str]) -> dict[str, str]:
    """The names of the file's imports that a kernel may use, and what they
    refer to (never bound to a name reserved for ThreadMap or Python:
    ``import numpy as _tm_i64`` or ``as __builtins__`` would rebind the
    generated code's own names)."""
    return {local: qualified for local, qualified in aliases.items()
            if (allowed_import(qualified) or qualified in _ALLOWED_PREFIXES)
            and not reserved(local)}


#: Objects on the way to an allowed name (``numba.cuda.threadIdx`` for
#: ``threadIdx.x``), which a file may import to reach it.
_ALLOWED_PREFIXES = frozenset(
    ".".join(name.split(".")[:end]) for name in ALLOWED_NAMES
    for end in range(1, name.count(".") + 1))


def _record_constant(node: ast.Assign | ast.AnnAssign, aliases: dict[str, str],
                     constants: dict[str, tuple[ast.expr, int]], values: dict[str, object],
                     refused: dict[str, tuple[str, int]],
                     causes: dict[str, tuple[str, int]]) -> None:
    """A module-level assignment: a constant when :func:`allow.evaluate` takes
    its value (the value is kept; the expression only for its line and text).

    A name refused because it uses a refused name is explained by the first
    refusal of its chain (``causes``), never by the whole reason before it:
    ``a1 = a0; a2 = a1; ...`` had copied each reason into the next, a cost
    that grew as the square of the file (8,000 lines took 5.8 s and 2.4 GB)."""
    targets = [t for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
               if isinstance(t, ast.Name)]
    value = node.value
    if not targets or value is None:
        for target in targets:
            constants.pop(target.id, None)
            values.pop(target.id, None)
        return
    # Evaluated once for all its targets (a = b = ... = expr).
    cause = None
    try:
        result = evaluate(value, values, lambda n: qualified_name(n, aliases))
        why = None
    except NotConstant as exc:
        why = str(exc)
        cause = causes.get(exc.name) if exc.name in refused else None
        if cause is not None:
            why += f" (line {cause[1]}: {cause[0]})"
    for target in targets:
        constants.pop(target.id, None)
        values.pop(target.id, None)
        refused.pop(target.id, None)
        causes.pop(target.id, None)
        if why is not None:
            refused[target.id] = (why, node.lineno)  # (rebound: no longer usable)
            causes[target.id] = cause or (why, node.lineno)
        elif reserved(target.id):
            refused[target.id] = causes[target.id] = (
                "a name reserved for ThreadMap or Python", node.lineno)
        else:
            values[target.id] = result
            constants[target.id] = (value, node.lineno)


def module_bindings(tree: ast.Module) -> dict[str, tuple[tuple[int, str], ...]]:
    """(line, how) for each binding of each name at the module's top level:
    ``"import:<dotted name>"``, ``"assign"`` (a statement of the top level
    assigning the name), or ``"other"`` (a def, a class, a loop or with
    target, an assignment inside a top-level ``if`` or ``try``: Python binds
    those in the module too).  Never inside functions or classes."""
    found: dict[str, list[tuple[int, str]]] = {}

    def bind(name: str, line: int, how: str) -> None:
        found.setdefault(name, []).append((line, how))

    direct = {id(target) for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
              for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
              if isinstance(target, ast.Name)}
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, node.lineno, "other")
            stack.extend(node.decorator_list)  # (evaluated at the module's level)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            continue  # scopes of their own
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases: dict[str, str] = {}
            _record_import(node, aliases)
            for alias in node.names:
                if alias.name != "*":
                    name = alias.asname or alias.name.split(".")[0]
                    bind(name, node.lineno, f"import:{aliases.get(name, '?')}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bind(node.id, node.lineno, "assign" if id(node) in direct else "other")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, node.lineno, "other")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name, node.lineno, "other")
        stack.extend(ast.iter_child_nodes(node))
    return {name: tuple(sorted(items)) for name, items in found.items()}


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


def _literal_dims(node: ast.expr, local: dict[str, ast.expr], values: dict[str, object],
                  aliases: dict[str, str], memo: dict[int, object]) -> tuple[int, ...] | None:
    """Launch dimensions from literals, module constants and names bound to
    them in the same function (through :func:`allow.evaluate`, never Python;
    each expression evaluated once, ``memo``)."""
    if isinstance(node, ast.Name) and node.id in local:
        node = local[node.id]
    if id(node) not in memo:
        try:
            memo[id(node)] = evaluate(node, values, lambda n: qualified_name(n, aliases))
        except NotConstant:
            memo[id(node)] = None
    value = memo[id(node)]
    value = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(value) <= 3 or not all(type(v) is int for v in value):
        return None
    return value


def _in_scope(stmt: ast.stmt):
    """The nodes of a statement that belong to its own scope (not to a
    function, lambda or class defined inside it)."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))


def _find_literal_launches(tree: ast.Module, kernel_names: set[str], values: dict[str, object],
                           aliases: dict[str, str]) -> dict[str, Launch]:
    """For each kernel, the first ``kernel[grid, block](...)`` whose grid and
    block are literals, or names bound to literals in the same function or at
    module level.  One pass over the file: each node is seen once, in its own
    scope, and each expression evaluated once."""
    found: dict[str, Launch] = {}
    scopes: list[ast.AST] = [tree] + [n for n in ast.walk(tree)
                                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    memo: dict[int, object] = {}
    for scope in scopes:
        if len(found) == len(kernel_names):
            break
        local: dict[str, ast.expr] = {}
        for stmt in scope.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                local[stmt.targets[0].id] = stmt.value
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for node in _in_scope(stmt):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
                    continue
                sub = node.func
                if not (isinstance(sub.value, ast.Name) and sub.value.id in kernel_names
                        and sub.value.id not in found):
                    continue
                if not (isinstance(sub.slice, ast.Tuple) and len(sub.slice.elts) >= 2):
                    continue
                grid = _literal_dims(sub.slice.elts[0], local, values, aliases, memo)
                block = _literal_dims(sub.slice.elts[1], local, values, aliases, memo)
                if grid and block:
                    found[sub.value.id] = Launch(grid, block, node.lineno)
    return found


def kernel_names(path: str | Path, follow_links: bool = True) -> tuple[str, ...]:
    """The CUDA kernels a file defines (parsed, never run); raises
    :class:`KernelSourceError` for a file that does not parse or has none.

    ``follow_links`` False (the app's Open): a symbolic link is refused,
    saying what it names, and never read: a submission ``mallory.py ->
    /etc/shadow`` opened in the app would have shown its target's text on
    the Source page."""
    if not follow_links and os.path.islink(path):
        try:
            target = quoted(os.readlink(path))
        except OSError:
            target = "?"
        raise KernelSourceError(f"a symbolic link (to {target}): ThreadMap opens the file it "
                                "names only when you open that file itself", str(path))
    module = read_module(path)
    if not module.kernels:
        module.kernel(None)  # raises "no CUDA kernel found"
    return tuple(k.name for k in module.kernels)
