"""The type numba gives each local variable of a kernel.

The lockstep emulation keeps every local variable as a vector with one entry
per thread of the block, so it must know each variable's type before it is
compiled.  Rather than re-implement numba's typing rules (``0`` then
``+= float32`` is float64, ``int(x / n)`` is int64, ...), this asks numba:
the kernel's body, with the thread coordinates made explicit and the CUDA-only
calls replaced by CPU stand-ins of the same types, goes through numba's
front end and type inference, without lowering (about 40 ms).  Type
inference is run without SSA renaming, so each variable gets the one type
that all its assignments unify to: exactly what one vector per variable needs.

The typing form is compiled from the kernel's own syntax tree, so a typing
error names the user's file and line.
"""
from __future__ import annotations

import ast
import copy
import math
import re
from dataclasses import dataclass

import numpy as np

from ..element_types import dtype_of
from ..errors import (
    EmulationUnsupported,
    KernelCompileError,
    ThreadMapError,
    UnsupportedConstruct,
)
from ..sources.allow import (
    NUMBA_DTYPES,
    NUMPY_TYPES,
    NotConstant,
    evaluate,
    numba_type_name,
)
from ..sources.plan import KernelPlan, cuda_attribute
from ..sources.source import allowed_aliases, qualified_name
from .intrinsics import INTRINSIC_REASON, lane_functions
from .transform import COORDINATE_PARAMS, CoordinateRewriter
from .warp_ops import MATCH, QUERIES, SHUFFLES, VOTES, placed_body, placed_operation

#: Barrier calls that return a value (syncthreads_count / _and / _or): int32.
VALUE_BARRIERS = frozenset({"syncthreads_count", "syncthreads_and", "syncthreads_or"})
#: Calls that are no-ops in an emulation that runs a block's threads in lockstep.
NO_OP_CALLS = frozenset({"syncthreads", "threadfence", "threadfence_block",
                         "threadfence_system"})


@dataclass(frozen=True)
class LaneType:
    """The type of one local variable: a scalar dtype, or a tuple of ``width``
    scalars of one dtype (``pos = cuda.grid(2)``)."""

    dtype: str
    width: int | None = None


@dataclass(frozen=True)
class BlockArraySpec:
    """A shared or local array as declared: its shape and element type."""

    name: str
    kind: str  # "shared" or "local"
    shape: tuple[int, ...]
    dtype: str
    line: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class KernelTypes:
    """Types of a kernel's local variables, and its block arrays, for one
    run's argument types."""

    variables: dict[str, LaneType]
    block_arrays: tuple[BlockArraySpec, ...]


def kernel_types(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]) -> KernelTypes:
    """Types of ``plan``'s locals when its arrays hold ``dtype`` and its scalar
    parameters have ``scalar_types`` (numpy names, e.g. ``("int64",)``).

    Raises :class:`EmulationUnsupported` (with the line) for a variable whose
    type the lockstep emulation cannot hold per thread, and
    :class:`KernelCompileError` for a kernel numba cannot type at all.
    """
    key = (plan.module.path, plan.module.text, plan.name, dtype, tuple(scalar_types))
    if key in _REFUSED:
        raise _REFUSED[key]
    if key not in _TYPES:
        given = _GIVEN.get(key[1:])
        typing = _kernel_types if _file_typing is None or not plan.from_file else _file_typing
        try:
            types = given or _stored_types(plan, dtype, tuple(scalar_types)) or _store_types(
                plan, dtype, tuple(scalar_types), typing(plan, dtype, tuple(scalar_types)))
            _check_warp_types(plan, types)
        except (EmulationUnsupported, KernelCompileError) as exc:
            if typing is not _kernel_types:  # (each answer from a child costs its round trip)
                _REFUSED[key] = exc
                while len(_REFUSED) > 64:
                    _REFUSED.pop(next(iter(_REFUSED)))
            raise
        _TYPES[key] = types
    return _TYPES[key]


#: How a process that serves untrusted kernel files (the command line, the
#: app, ``check``) types them: in a sandboxed child with a time and memory
#: limit, as numba's type inference of a 1.1 KB file of nested tuples took
#: 111 s and 2.8 GB.  None: here (in a child, or a caller of the Python API
#: running its own kernel in its own process).
_file_typing = None


def type_files_with(typing):
    """Type kernels read from files with ``typing(plan, dtype,
    scalar_types) -> KernelTypes`` (None: here); the previous setting."""
    global _file_typing
    previous, _file_typing = _file_typing, typing
    return previous


def type_here(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]) -> KernelTypes:
    """Types worked out in this process (a child's answer to its parent)."""
    return _kernel_types(plan, dtype, tuple(scalar_types))


#: What numba-cuda's warp intrinsics take (its intrinsics.py): a shuffle moves a
#: 32- or 64-bit int or float; a vote's mask is an integer, its predicate an
#: integer or a boolean.  The CPU stand-ins would take anything.
_SHUFFLED = frozenset({"int32", "int64", "float32", "float64"})
_INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                       "uint64"})


def _check_warp_types(plan: KernelPlan, types: KernelTypes) -> None:
    """Refuse, as numba-cuda would on a GPU, a warp operation on a type it does
    not take: the emulation must not run a kernel no GPU can compile."""
    aliases = plan.module.aliases
    for stmt in (n for s in placed_body(plan) for n in ast.walk(s)):
        what = placed_operation(stmt, aliases) if isinstance(stmt, ast.stmt) else None
        if what not in SHUFFLES and what not in VOTES and what != MATCH:
            continue
        args = stmt.value.args
        kinds = [types.variables[a.id].dtype if isinstance(a, ast.Name) and a.id in
                 types.variables else None for a in args]
        wrong = None
        if what in SHUFFLES and len(kinds) == 3 and kinds[1] not in _SHUFFLED:
            wrong = f"it shuffles 32- and 64-bit ints and floats, not {kinds[1]}"
        elif what == MATCH and len(kinds) == 2 and kinds[1] not in _SHUFFLED:
            wrong = f"it compares 32- and 64-bit ints and floats, not {kinds[1]}"
        elif what == MATCH and len(kinds) == 2 and kinds[0] not in _INTEGERS:
            wrong = f"its mask must be an integer, not {kinds[0]}"
        elif what in VOTES and len(kinds) == 2 and kinds[0] not in _INTEGERS:
            wrong = f"its mask must be an integer, not {kinds[0]}"
        elif what in VOTES and len(kinds) == 2 and kinds[1] not in _INTEGERS | {"bool"}:
            wrong = f"its predicate must be an integer or a boolean, not {kinds[1]}"
        if wrong:
            lines = plan.module.text.splitlines()
            line = stmt.lineno
            source = f"\n    {lines[line - 1].strip()}" if 0 < line <= len(lines) else ""
            raise KernelCompileError(f"numba could not compile {plan.name!r}:\ncuda.{what}: "
                                     f"{wrong}\nFile \"{plan.module.path}\", line {line}"
                                     f"{source}")


_TYPES: dict[tuple, KernelTypes] = {}
#: Kernels a child refused to type (its error), by the same key.
_REFUSED: dict[tuple, ThreadMapError] = {}
#: Types a parent process worked out, given to its child with a request (by
#: kernel text, name, dtype and scalar types): the child skips numba's typing
#: pass, ~0.25 s of a new kernel's first answer.
_GIVEN: dict[tuple, KernelTypes] = {}


def known_types(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]):
    """The types already worked out in this process, or None (never types)."""
    key = (plan.module.path, plan.module.text, plan.name, dtype, tuple(scalar_types))
    found = _TYPES.get(key)
    return None if found is None else (key[1:], found)


def give_types(known) -> None:
    """Take a parent's ``known_types`` (in a child process)."""
    if known is not None:
        key, types = known
        _GIVEN[key] = types
        while len(_GIVEN) > 64:
            _GIVEN.pop(next(iter(_GIVEN)))


def _types_file(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]):
    """Where the types of this kernel source, run dtype and scalar types are
    kept on disk: typing needs numba.cuda imported and numba's front end,
    ~0.8 s of every command, for an answer that only changes with the source,
    numba or this module."""
    import hashlib
    from importlib.metadata import version
    from pathlib import Path

    from ..cache import cache_dir

    key = hashlib.sha256("\0".join((
        plan.module.text, plan.name, dtype, ",".join(scalar_types), repr(plan.constants),
        version("numba"), Path(__file__).read_text(),
        (Path(__file__).parent / "warp_ops.py").read_text())).encode()).hexdigest()[:20]
    return cache_dir() / f"types_{key}.json"


def _stored_types(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]):
    import json

    try:
        stored = json.loads(_types_file(plan, dtype, scalar_types).read_text())
        return KernelTypes(
            {name: LaneType(d, w) for name, (d, w) in stored["variables"].items()},
            tuple(BlockArraySpec(a["name"], a["kind"], tuple(a["shape"]), a["dtype"], a["line"])
                  for a in stored["block_arrays"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_types(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...],
                 types: KernelTypes) -> KernelTypes:
    import json
    from dataclasses import asdict

    from ..outputs import OutputError, write_atomically

    try:  # (whole or not at all: two processes may type one kernel at once)
        write_atomically(_types_file(plan, dtype, scalar_types), json.dumps({
            "variables": {name: [t.dtype, t.width] for name, t in types.variables.items()},
            "block_arrays": [asdict(a) for a in types.block_arrays]}))
    except OutputError:  # a read-only or full cache: type again next time
        pass
    return types


def _kernel_types(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]) -> KernelTypes:
    from numba import typeof, types
    from numba.core import compiler, errors, typed_passes
    from numba.core.registry import cpu_target

    function = _typing_function(plan)
    scalars = iter(scalar_types)
    arg_types = []
    for name in plan.kernel.params:
        if name in plan.arrays:
            arg_types.append(typeof(np.zeros((1,) * plan.ndim[name], dtype_of(dtype, name))))
        else:
            arg_types.append(typeof(np.zeros((), next(scalars))[()]))
    arg_types += [types.int64] * len(COORDINATE_PARAMS)
    typing, target = cpu_target.typing_context, cpu_target.target_context
    typing.refresh()
    target.refresh()
    try:
        ir = compiler.run_frontend(function)
        typemap = typed_passes.type_inference_stage(typing, target, ir, tuple(arg_types),
                                                    None).typemap
    except (errors.TypingError, errors.NotDefinedError, errors.UnsupportedError) as exc:
        # (NotDefinedError: a variable read before any assignment, which numba's
        # front end refuses; found by the fuzzing pass of CI)
        raise KernelCompileError(_typing_message(plan, exc)) from None
    return KernelTypes(_read_types(plan, typemap), block_array_specs(plan, dtype))


def _typing_message(plan: KernelPlan, exc: Exception) -> str:
    """numba's typing error, cut to what failed and the user's line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    what = [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith(("During:", "File \"", "<source"))]
    # An intrinsic's own reason (intrinsics.signature), under numba's "No
    # implementation of function Function(<intrinsic _tm_ffs>)".
    # ("TypingError: cuda.ffs of int8: ...", several times over)
    what = [match.group(0) for line in what
            if (match := INTRINSIC_REASON.search(line))][:1] or what
    message = f"numba could not compile {plan.name!r}:\n" + "\n".join(what[:3])
    line = getattr(getattr(exc, "loc", None), "line", None)
    if line:
        source = plan.module.text.splitlines()
        message += f'\nFile "{plan.module.path}", line {line}'
        if 0 < line <= len(source):
            message += f"\n    {source[line - 1].strip()}"
    return message


def _read_types(plan: KernelPlan, typemap: dict) -> dict[str, LaneType]:
    from numba import types
    from numba.np.numpy_support import as_dtype

    block_arrays = {a.name for a in plan.local_arrays}
    params = set(plan.kernel.params) | set(COORDINATE_PARAMS)
    lines = _assignment_lines(plan)
    variables: dict[str, LaneType] = {}
    for name, numba_type in typemap.items():
        if name.startswith(("$", "arg.")) or name in params or "." in name \
                or name in block_arrays:
            continue
        numba_type = types.unliteral(numba_type)
        if name not in lines:
            continue  # a name numba made up (loop iterators and the like)
        if isinstance(numba_type, (types.Number, types.Boolean)):
            variables[name] = LaneType(str(as_dtype(numba_type)))
        elif isinstance(numba_type, types.UniTuple) and isinstance(
                numba_type.dtype, (types.Number, types.Boolean)):
            variables[name] = LaneType(str(as_dtype(types.unliteral(numba_type.dtype))),
                                       numba_type.count)
        else:
            raise EmulationUnsupported(
                f"variable {name!r} holds {numba_type}; the lockstep emulation keeps one "
                "number (or tuple of numbers) per thread", (lines[name],))
    return variables


def _assignment_lines(plan: KernelPlan) -> dict[str, int]:
    """First line where each local variable of the kernel is assigned."""
    lines: dict[str, int] = {}
    for stmt in placed_body(plan):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                lines.setdefault(node.id, node.lineno)
    return lines


def _typing_function(plan: KernelPlan):
    """The kernel as a plain Python function numba's CPU front end can type."""
    func = copy.deepcopy(plan.kernel.node)
    func.body = copy.deepcopy(placed_body(plan))  # (warp operations as statements)
    func = CoordinateRewriter(plan).visit(func)
    func = _StandIns(plan).visit(func)
    func.args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in
                                                    list(plan.kernel.params) + list(COORDINATE_PARAMS)],
                              kwonlyargs=[], kw_defaults=[], defaults=[])
    func.decorator_list = []
    func.returns = None
    func.name = f"{plan.name}__tm_typing"
    namespace = dict(_module_namespace(plan))
    module = ast.fix_missing_locations(ast.Module(body=[func], type_ignores=[]))
    exec(compile(module, plan.module.path, "exec"), namespace)  # noqa: S102 (our own tree)
    return namespace[func.name]


def _module_namespace(plan: KernelPlan) -> dict:
    """The names a kernel takes from its file: the allowed names of its imports
    (allow.py), imported by ThreadMap, and its constants' values (allow.evaluate).
    Nothing of the file is executed."""
    key = (plan.module.path, plan.module.text, plan.constants)
    if key not in _NAMESPACES:
        _NAMESPACES[key] = _allowed_namespace(plan)
    return _NAMESPACES[key]


_NAMESPACES: dict[tuple, dict] = {}


def _allowed_namespace(plan: KernelPlan) -> dict:
    import importlib

    namespace: dict = {"_tm_np": np}
    namespace["_tm_numba"] = importlib.import_module("numba")
    namespace.update(lane_functions())  # (cuda.popc ... as the lowering names them)
    for local, qualified in allowed_aliases(plan.module.aliases).items():
        try:
            namespace[local] = importlib.import_module(qualified)
        except ImportError:
            module, _, name = qualified.rpartition(".")
            namespace[local] = getattr(importlib.import_module(module), name)
    for name in plan.constants:
        namespace[name] = plan.module.values[name]
    return namespace


def block_array_specs(plan: KernelPlan, dtype: str) -> tuple[BlockArraySpec, ...]:
    """Shape and element type of each shared and local array, from its
    declaration: the shape through allow.evaluate (literals, module constants,
    arithmetic), the element type one of numba's or numpy's scalar types, or
    ``A.dtype`` (that array's dtype in the run's element types).  Raises :class:`UnsupportedConstruct` for
    anything else."""
    if not plan.local_arrays:
        return ()
    specs = []
    for local in plan.local_arrays:
        node = next(n for stmt in plan.kernel.node.body for n in ast.walk(stmt)
                    if isinstance(n, ast.Assign) and n.lineno == local.line
                    and n.col_offset == local.column
                    and isinstance(n.value, ast.Call))
        call = node.value
        shape = call.args[0] if call.args else _keyword(call, "shape")
        element = call.args[1] if len(call.args) > 1 else _keyword(call, "dtype")

        def fail(what: str) -> UnsupportedConstruct:
            return UnsupportedConstruct(
                f"kernel {plan.name!r}: {local.kind} array {local.name!r}: {what}",
                plan.module.path, local.line)

        try:
            value = evaluate(shape, plan.module.values,
                             lambda n: qualified_name(n, plan.module.aliases))
        except NotConstant as exc:
            raise fail("its shape and dtype must be constants (literals or module constants "
                       f"such as TPB = 16), not {ast.unparse(shape)!r} ({exc})") from None
        value = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                   and v > 0 for v in value) or not 1 <= len(value) <= 3:
            raise fail(f"shape {value!r} must be 1 to 3 positive whole numbers (dynamic shared "
                       "memory, a shape of 0, is not supported)")
        if math.prod(int(v) for v in value) > _MAX_BLOCK_ARRAY_ELEMENTS:
            raise fail(f"shape {value!r} holds more than {_MAX_BLOCK_ARRAY_ELEMENTS:,} "
                       "elements: no GPU has that much shared or local memory per block")
        specs.append(BlockArraySpec(local.name, local.kind, tuple(int(v) for v in value),
                                    _element_type(plan, element, dtype, fail), local.line))
    return tuple(specs)


#: A shared or local array larger than this cannot exist (shared memory is at
#: most 228 KiB per SM; local memory 512 KiB per thread): refused before
#: anything is allocated for it.
_MAX_BLOCK_ARRAY_ELEMENTS = 1 << 20


def _element_type(plan: KernelPlan, node: ast.expr, dtype: str, fail) -> str:
    """A block array's element type, named as numpy names it."""
    if isinstance(node, ast.Attribute) and node.attr == "dtype" \
            and isinstance(node.value, ast.Name) and node.value.id in plan.arrays:
        return dtype_of(dtype, node.value.id)
    qualified = qualified_name(node, plan.module.aliases) or ""
    name = numba_type_name(qualified)
    if name in NUMBA_DTYPES:
        return NUMBA_DTYPES[name]
    module, _, name = qualified.rpartition(".")
    if module == "numpy" and name in NUMPY_TYPES:
        return str(np.dtype(getattr(np, name)))
    raise fail(f"its dtype must be one of numba's or numpy's scalar types (float32, "
               f"np.int32, ...) or an array's .dtype, not {ast.unparse(node)!r}")


class _StandIns(ast.NodeTransformer):
    """CUDA-only calls replaced by CPU expressions of the same type."""

    def __init__(self, plan: KernelPlan):
        self.aliases = plan.module.aliases

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        if isinstance(node.value, ast.Call):
            what = cuda_attribute(node.value.func, self.aliases)
            if what in NO_OP_CALLS or what == "syncwarp":
                return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        what = cuda_attribute(node.func, self.aliases)
        if what in ("shared.array", "local.array"):
            shape = node.args[0] if node.args else _keyword(node, "shape")
            dtype = node.args[1] if len(node.args) > 1 else _keyword(node, "dtype")
            call = ast.parse("_tm_np.empty(0, 0)", mode="eval").body
            call.args = [shape, dtype]
            return ast.copy_location(call, node)
        # Warp operations, with numba-cuda's result types: a shuffle gives its
        # value's type; ballot_sync int32; any / all / eq_sync a boolean;
        # activemask and lanemask_lt uint32.
        if what in SHUFFLES and len(node.args) == 3:
            return node.args[1]
        if what in VOTES and len(node.args) == 2:
            text = "_tm_np.int32(0)" if what == "ballot_sync" else "bool(0)"
            call = ast.parse(text, mode="eval").body
            call.args = [node.args[1]] if what != "ballot_sync" else call.args
            return ast.copy_location(call, node)
        if what == MATCH and len(node.args) == 2:  # (int32, numba-cuda's)
            return ast.copy_location(ast.parse("_tm_np.int32(0)", mode="eval").body, node)
        if what in QUERIES and not node.args:
            return ast.copy_location(ast.parse("_tm_np.uint32(0)", mode="eval").body, node)
        if what in VALUE_BARRIERS:
            call = ast.parse("_tm_np.int32(0)", mode="eval").body
            call.args = node.args[:1]
            return ast.copy_location(call, node)
        if what and what.startswith("atomic.") and len(node.args) in (3, 4):
            # (the array's element type; compare_and_swap's index is 0)
            index = ast.Constant(0) if what == "atomic.compare_and_swap" else node.args[1]
            return ast.copy_location(ast.Subscript(value=node.args[0], slice=index,
                                                   ctx=ast.Load()), node)
        return node


def _keyword(node: ast.Call, name: str) -> ast.expr:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return ast.Constant(None)
