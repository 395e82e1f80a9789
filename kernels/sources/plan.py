"""Read a kernel's body and decide what each of its names is.

The plan says which parameters are arrays (and of how many dimensions, from
how they are indexed), which array is the output, which parameters are
scalars, which module constants the kernel uses, which shared / local arrays
it declares, and what keeps it from running in the CPU emulation.  Anything
the instrumentation cannot handle is refused here, with its line.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
from dataclasses import dataclass

from ..errors import UnsupportedConstruct
from .allow import ALLOWED_MODULES, SIMULATED_CUDA_API, VALUE_ATTRIBUTES, allowed_name
from .limits import check_kernel_size
from .signature import check_decorator
from .source import KernelDef, ModuleInfo, qualified_name
from .spelling import normalise_spelling

CUDA = "numba.cuda"
#: Thread coordinates the emulation makes explicit.
COORDINATE_OBJECTS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
COORDINATE_FUNCTIONS = frozenset({"grid", "gridsize"})
COORDINATE_SCALARS = frozenset({"laneid", "warpsize"})
#: Atomic updates that are checked and recorded on parameter arrays.
RECORDED_ATOMICS = ("add", "sub", "max", "min", "and_", "or_", "xor", "exch", "inc", "dec",
                    "nanmax", "nanmin", "cas")
#: The atomic updates a kernel may call: ``compare_and_swap(ary, old, val)`` is
#: ``cas(ary, 0, old, val)`` on a 1-D array (derived/transform.py).
CALLED_ATOMICS = RECORDED_ATOMICS + ("compare_and_swap",)
#: CUDA's scalar intrinsics: pure functions of one thread's values, which the
#: emulation runs in both tiers (derived/intrinsics.py, where each is written).
INTRINSIC_CALLS = frozenset({"popc", "brev", "clz", "ffs", "fma", "cbrt", "selp"})
#: CUDA names the lockstep emulation runs besides the thread coordinates:
#: block arrays, memory fences (no-ops where memory is sequentially
#: consistent), warp-level operations and the scalar intrinsics.
EMULATED_CALLS = frozenset({"shared.array", "local.array", "threadfence",
                            "threadfence_block", "threadfence_system",
                            # warp-level operations (derived/warp_ops.py)
                            "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
                            "ballot_sync", "any_sync", "all_sync", "eq_sync", "activemask",
                            "lanemask_lt", "syncwarp", "match_any_sync"}) | INTRINSIC_CALLS
#: Barriers: placed where every thread of the block must arrive.
BARRIERS = frozenset({"syncthreads", "syncthreads_count", "syncthreads_and",
                      "syncthreads_or"})
_BUILTIN_NAMES = frozenset(dir(builtins))
#: The builtins a CUDA kernel can use (numba-cuda's): anything else of Python's
#: (open, exec, eval, getattr, __import__, ...) is refused where it appears, so
#: a kernel body never runs as Python, not even in the simulator.
KERNEL_BUILTINS = frozenset({
    "abs", "bool", "complex", "divmod", "enumerate", "float", "int", "len", "max", "min",
    "pow", "print", "range", "round", "tuple", "zip", "True", "False", "None",
    "ArithmeticError", "ZeroDivisionError",
})
#: The syntax a kernel's body may hold: an allow-list of node types, as
#: ``ast.literal_eval`` has (a ``match`` statement's class patterns name
#: attributes as plain strings, which no check of attribute chains sees).
ALLOWED_NODES = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Break,
    ast.Continue, ast.Return, ast.Pass, ast.Expr,
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.IfExp, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Name, ast.Constant, ast.Tuple, ast.keyword,
    ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
)
_UNSUPPORTED_STATEMENTS = {
    ast.With: "'with' blocks", ast.Try: "'try' blocks", ast.Raise: "'raise'",
    ast.Global: "'global'", ast.Nonlocal: "'nonlocal'", ast.FunctionDef: "nested functions",
    ast.ClassDef: "classes", ast.Delete: "'del'", ast.AsyncFunctionDef: "async code",
    ast.Assert: "'assert'", ast.Match: "'match' statements", ast.Import: "imports",
    ast.ImportFrom: "imports", ast.AsyncFor: "async code", ast.AsyncWith: "async code",
}
_UNSUPPORTED_EXPRESSIONS = {
    ast.Lambda: "lambdas", ast.Yield: "'yield'", ast.YieldFrom: "'yield'",
    ast.NamedExpr: "the walrus operator ':=' (numba rejects it)", ast.Await: "'await'",
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Starred: "starred expressions", ast.JoinedStr: "f-strings", ast.Dict: "dicts",
    ast.Set: "sets", ast.List: "lists (numba's CUDA kernels have none)",
}


@dataclass(frozen=True)
class LocalArray:
    """A ``cuda.shared.array`` or ``cuda.local.array`` declared in the kernel."""

    name: str
    kind: str  # "shared" or "local"
    ndim: int | None  # None when its shape is not a literal
    line: int
    #: where its declaration starts on the line (two may share a line)
    column: int = 0


@dataclass(frozen=True)
class KernelPlan:
    """What each name of a kernel is; see the module docstring."""

    module: ModuleInfo
    kernel: KernelDef
    #: array parameters, in parameter order
    arrays: tuple[str, ...]
    #: the input arrays (A, B under the matmul convention; any number for a
    #: kernel whose arguments are described) and the output (C)
    inputs: tuple[str, ...]
    output: str
    scalars: tuple[str, ...]
    #: dimensions of each array parameter, from its indexing (1 = flattened)
    ndim: dict[str, int]
    #: the kernel reads or accumulates into its output, so C starts zeroed
    reads_output: bool
    #: array parameters the kernel stores into (normally just the output)
    stored_arrays: tuple[str, ...]
    #: module constants the kernel uses, in definition order
    constants: tuple[str, ...]
    local_arrays: tuple[LocalArray, ...]
    #: (what, line) pairs that only the simulator can run
    emulation_blockers: tuple[tuple[str, int], ...]
    #: 2 when the kernel uses a second launch dimension (cuda.grid(2), .y), else 1
    launch_dims: int = 1
    #: lines of its barriers (cuda.syncthreads and friends)
    barrier_lines: tuple[int, ...] = ()
    #: barrier calls inside a loop, and outside any (for the time estimate)
    barriers_in_loops: int = 0
    barriers_outside_loops: int = 0
    #: which dimension of the output the x coordinate indexes ("rows" or
    #: "cols"), when its stores say so
    x_indexes: str | None = None
    #: why ``output`` is the output
    output_reason: str = "the array the kernel stores into"
    #: (dtype, line) when the kernel's @cuda.jit signature fixes its arrays' dtype
    signature_dtype: tuple[str, int] | None = None
    #: (what, line) of each use of numba.cuda's API (``"threadIdx.x"``)
    cuda_uses: tuple[tuple[str, int], ...] = ()
    #: planned under the matmul convention (its inputs are A and B); else a
    #: described kernel, its arrays named as the kernel names them
    matmul: bool = True
    #: read from a kernel file the user named (untrusted input), not a
    #: built-in kernel: where a process serves such files, numba types it
    #: in a bounded child (``local_types.type_files_with``)
    from_file: bool = False
    #: (line, note) where the kernel is run as numba reads a spelling, not as
    #: Python would (``raise``: see ``spelling.py``)
    spelling_notes: tuple[tuple[int, str], ...] = ()

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def emulable(self) -> bool:
        return not self.emulation_blockers

    def simulator_blockers(self) -> tuple[tuple[str, int], ...]:
        """(what, line) of the CUDA API the kernel uses that numba's simulator
        does not have (warp shuffles and votes, syncwarp)."""
        return tuple((what, line) for what, line in self.cuda_uses
                     if what not in SIMULATED_CUDA_API)

    def emulation_blocker_text(self) -> str:
        """``"cuda.syncthreads (line 31, 35); cuda.shared.array (line 17)"``."""
        by_what: dict[str, list[int]] = {}
        for what, line in self.emulation_blockers:
            by_what.setdefault(what, []).append(line)
        return "; ".join(f"{what} (line {', '.join(map(str, sorted(set(lines))))})"
                         for what, lines in by_what.items())


def subscript_chain(node: ast.Subscript) -> tuple[ast.expr, list[ast.expr], bool]:
    """Flatten ``X[i][j]`` and ``X[i, j]`` to ``(X, [i, j], has_slice)``."""
    indices: list[list[ast.expr]] = []
    has_slice = False
    current: ast.expr = node
    while isinstance(current, ast.Subscript):
        index = current.slice
        parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        has_slice |= any(isinstance(p, ast.Slice) for p in parts)
        indices.append(parts)
        current = current.value
    flat = [p for parts in reversed(indices) for p in parts]
    return current, flat, has_slice


def cuda_attribute(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``cuda.threadIdx.x`` -> ``"threadIdx.x"``; None if not a numba.cuda name."""
    name = qualified_name(node, aliases)
    if name and name.startswith(CUDA + "."):
        return name[len(CUDA) + 1:]
    return None


def make_plan(module: ModuleInfo, kernel: KernelDef, matmul: bool = True) -> KernelPlan:
    """Analyse ``kernel`` of ``module``; raise :class:`UnsupportedConstruct`
    for what the instrumentation cannot handle.  ``matmul``: the kernel must
    follow the matmul convention (three arrays); else (its arguments are
    described) it takes any number of arrays, one of them its output."""
    spelled, notes = normalise_spelling(kernel.node)
    inlined = inline_range_variables(spelled, module.aliases)
    if inlined is not kernel.node:
        kernel = dataclasses.replace(kernel, node=inlined)
    plan = _Planner(module, kernel).plan(matmul)
    return dataclasses.replace(plan, spelling_notes=notes) if notes else plan


@dataclass(frozen=True)
class ParameterUses:
    """How a kernel uses each parameter, whatever their number (the matmul
    convention not imposed): what a description of its arguments is checked
    against (``arguments.py``)."""

    #: array parameters (indexed, or their .shape/.size read), in parameter order
    arrays: tuple[str, ...]
    #: each array's index arities (a set: one kernel may index one array two
    #: ways; empty: only its .shape or .size is read)
    ranks: dict[str, frozenset[int]]
    stored: tuple[str, ...]
    loaded: frozenset[str]
    scalars: tuple[str, ...]
    #: scalars the kernel uses as integers: (line of the first such use, how)
    integer_uses: dict[str, tuple[int, str]]


def parameter_uses(module: ModuleInfo, kernel: KernelDef) -> ParameterUses:
    """How ``kernel`` uses its parameters; its syntax is checked as
    :func:`make_plan` checks it (UnsupportedConstruct at the line)."""
    inlined = inline_range_variables(kernel.node, module.aliases)
    if inlined is not kernel.node:
        kernel = dataclasses.replace(kernel, node=inlined)
    planner = _Planner(module, kernel)
    planner.check_syntax()
    arities = planner._array_arities(matmul=False)
    stored, loaded = planner._stores_and_loads(arities)
    scalars = tuple(p for p in kernel.params if p not in arities)
    return ParameterUses(
        arrays=tuple(p for p in kernel.params if p in arities),
        ranks={name: frozenset(kinds) for name, kinds in arities.items()},
        stored=tuple(stored), loaded=frozenset(loaded), scalars=scalars,
        integer_uses=planner.integer_uses(set(scalars)))


#: Calls a range held in a variable may make in its arguments and still be
#: evaluated again where it is iterated (they have no effects, and their
#: values cannot change in between).
_PURE_RANGE_CALLS = frozenset({"min", "max", "int", "abs", "len"})
_PURE_CUDA_CALLS = frozenset({"numba.cuda.grid", "numba.cuda.gridsize"})


def inline_range_variables(node: ast.FunctionDef, aliases: dict[str, str]) -> ast.FunctionDef:
    """``r = range(...)`` then ``for i in r:``, as ``for i in range(...):``
    (a common idiom: ``to_calculate = range(tx, C.size, 1024)``), so that
    every derived form runs it.  Only where that changes nothing: ``r`` is
    bound once, in a statement of the kernel's body itself, to a call of the
    builtin ``range`` whose arguments read no array and call nothing with an
    effect, nothing they name is bound again after it, and ``r`` is used only
    as what a ``for`` iterates.  Anything else is left as written (and the
    emulation says what it cannot run)."""
    body_names = [n for stmt in node.body for n in ast.walk(stmt)]
    stores: dict[str, int] = {}
    for n in body_names:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    if "range" in stores or "range" in {a.arg for a in node.args.args}:
        return node
    candidates = {}
    for index, stmt in enumerate(node.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "range" \
                and not stmt.value.keywords and 1 <= len(stmt.value.args) <= 3 \
                and stores.get(stmt.targets[0].id) == 1 \
                and _pure_range_arguments(stmt.value, aliases):
            candidates[stmt.targets[0].id] = index
    if not candidates:
        return node
    iterated: dict[int, str] = {}
    for n in body_names:
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id in candidates:
            iterated[id(n.iter)] = n.iter.id
    keep = {}
    for name, index in candidates.items():
        loads = [n for n in body_names if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load)]
        if not loads or any(id(n) not in iterated for n in loads):
            continue
        call = node.body[index].value
        named = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
        later = {n.id for stmt in node.body[index + 1:] for n in ast.walk(stmt)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if named & later:
            continue
        keep[name] = index
    if not keep:
        return node
    import copy

    inlined = copy.deepcopy(node)
    calls = {name: inlined.body[index].value for name, index in keep.items()}
    for n in ast.walk(inlined):
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id in calls:
            n.iter = ast.copy_location(copy.deepcopy(calls[n.iter.id]), n.iter)
    dropped = set(keep.values())
    inlined.body = [stmt for i, stmt in enumerate(inlined.body) if i not in dropped] or [
        ast.copy_location(ast.Pass(), node.body[0])]
    return inlined


def _pure_range_arguments(call: ast.Call, aliases: dict[str, str]) -> bool:
    for n in ast.walk(ast.Tuple(elts=list(call.args), ctx=ast.Load())):
        if isinstance(n, ast.Subscript) and not isinstance(n.value, ast.Attribute):
            return False  # an array's element (C.shape[1] is fine)
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Name) and n.func.id in _PURE_RANGE_CALLS:
                continue
            if qualified_name(n.func, aliases) in _PURE_CUDA_CALLS:
                continue
            return False
        if isinstance(n, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)):
            return False
    return True


class _Planner:
    def __init__(self, module: ModuleInfo, kernel: KernelDef):
        self.module = module
        self.kernel = kernel
        self.node = kernel.node
        self.params = kernel.params
        self.aliases = module.aliases

    def _walk(self):
        """Every node of the kernel's body (not its decorators)."""
        for stmt in self.node.body:
            yield from ast.walk(stmt)

    @functools.cached_property
    def _bound(self) -> frozenset[str]:
        """Names the kernel binds itself: its parameters and its locals."""
        return frozenset(self.params) | {n.id for n in self._walk()
                                         if isinstance(n, ast.Name)
                                         and isinstance(n.ctx, ast.Store)}

    @functools.cached_property
    def _parents(self) -> dict[int, ast.AST]:
        """Each node of the body's parent, by the node's id."""
        return {id(child): parent for parent in self._walk()
                for child in ast.iter_child_nodes(parent)}

    def fail(self, message: str, node: ast.AST) -> UnsupportedConstruct:
        return UnsupportedConstruct(f"kernel {self.kernel.name!r}: {message}", self.module.path,
                                    getattr(node, "lineno", self.kernel.lineno),
                                    getattr(node, "col_offset", None))

    def check_syntax(self) -> None:
        """The checks every kernel passes before its names are given roles."""
        args = self.node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.fail("only plain positional parameters are supported", self.node)
        check_kernel_size(self.node, self.module.path)
        self._check_annotations()
        self._check_constructs()
        self._check_builtins()
        self._check_names()
        self._check_bindings()
        self._check_reach()
        self._check_endless_loops()

    def integer_uses(self, names: set[str]) -> dict[str, tuple[int, str]]:
        """Of ``names``, those the kernel uses where numba needs an integer
        (a range's bounds, an index): (line of the first, what it is)."""
        uses: dict[str, tuple[int, str]] = {}

        def note(node: ast.AST, how: str) -> None:
            # The names the value is made of, not those inside a call
            # (a[int(scale * i)]: the call makes the integer).
            stack = [node]
            while stack:
                inner = stack.pop()
                if isinstance(inner, ast.Call):
                    continue
                if isinstance(inner, ast.Name) and inner.id in names:
                    line = getattr(inner, "lineno", self.kernel.lineno)
                    if inner.id not in uses or line < uses[inner.id][0]:
                        uses[inner.id] = (line, how)
                stack.extend(ast.iter_child_nodes(inner))

        for node in self._walk():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "range":
                for argument in node.args:
                    note(argument, "a bound of range()")
            elif isinstance(node, ast.Subscript):
                note(node.slice, "an index")
        return uses

    def plan(self, matmul: bool = True) -> KernelPlan:
        self.check_syntax()
        arities = self._array_arities()
        stored, loaded_arrays = self._stores_and_loads(arities)
        arrays = tuple(p for p in self.params if p in arities)
        if not arrays:
            raise self.fail("the kernel has no array parameter that it indexes: nothing to "
                            "map", self.node)
        if matmul and len(arrays) != 3:
            found = ", ".join(arrays) or "none"
            raise self.fail(
                "expected the matmul convention: three array parameters (A, B, C) that the "
                f"kernel indexes; found {len(arrays)} ({found})", self.node)
        output, output_reason = self._choose_output(arrays, stored)
        inputs = tuple(a for a in arrays if a != output)
        ndim = {}
        for name in arrays:
            kinds = arities[name]
            if len(kinds) != 1:
                raise self.fail(f"array {name!r} is indexed with both "
                                f"{' and '.join(str(k) for k in sorted(kinds))} indices", self.node)
            ndim[name] = next(iter(kinds))
            if ndim[name] not in ((1, 2) if matmul else (1, 2, 3)):
                raise self.fail(f"array {name!r} is indexed with {ndim[name]} indices; "
                                + ("matrices take 2 (or 1 when flattened)" if matmul
                                   else "ThreadMap maps arrays of 1, 2 or 3"), self.node)
        scalars = tuple(p for p in self.params if p not in arities)
        local_arrays = self._local_arrays()
        return KernelPlan(
            module=self.module, kernel=self.kernel, arrays=arrays,
            inputs=inputs, output=output, scalars=scalars, ndim=ndim,
            reads_output=output in loaded_arrays, stored_arrays=tuple(stored),
            constants=self._used_constants(),
            local_arrays=local_arrays, emulation_blockers=self._emulation_blockers(),
            launch_dims=self._launch_dims(), barrier_lines=self._barrier_lines(),
            barriers_in_loops=self._barrier_calls(inside_loops=True),
            barriers_outside_loops=self._barrier_calls(inside_loops=False),
            x_indexes=self._x_indexes(output), output_reason=output_reason,
            signature_dtype=self._signature_dtype(ndim), cuda_uses=self._cuda_uses(),
            matmul=matmul)

    # -- checks ---------------------------------------------------------------------

    def _check_constructs(self) -> None:
        for node in self._walk():
            for kind, what in _UNSUPPORTED_STATEMENTS.items():
                if isinstance(node, kind):
                    raise self.fail(f"{what} are not supported in a kernel", node)
            for kind, what in _UNSUPPORTED_EXPRESSIONS.items():
                if isinstance(node, kind):
                    raise self.fail(f"{what} are not supported in a kernel", node)
            if not isinstance(node, ALLOWED_NODES):
                raise self.fail(f"{type(node).__name__} is not syntax a kernel may use "
                                "(ThreadMap reads statements, expressions, calls and "
                                "subscripts)", node)
            if isinstance(node, ast.Name) and node.id.lower().startswith("_tm_"):
                raise self.fail(f"names starting with '_tm_' are reserved for ThreadMap "
                                f"({node.id!r})", node)
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                raise self.fail(f"{ast.unparse(node)!r} is assigned to: a kernel stores into "
                                "arrays and its own names, never into an attribute (it would "
                                "change numba's or ThreadMap's own objects)", node)
            if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                root, _, _ = subscript_chain(node)
                if not isinstance(root, ast.Name) or (root.id in self.aliases
                                                      and root.id not in self.params):
                    raise self.fail(f"{ast.unparse(node)!r} is stored into: a kernel stores "
                                    "into its arrays only", node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                    and node.id in self.params:
                raise self.fail(f"parameter {node.id!r} is reassigned; ThreadMap needs each "
                                "parameter to keep naming its argument", node)
            if isinstance(node, ast.Call):
                self._check_call(node)

    def _check_builtins(self) -> None:
        """Python's builtins a kernel cannot use, named with their line (a
        local or a module constant of the same name is the kernel's own)."""
        assigned = self._bound | set(self.module.constants) | set(self.aliases)
        for node in self._walk():
            if isinstance(node, ast.Name) and node.id in _BUILTIN_NAMES \
                    and node.id not in KERNEL_BUILTINS and node.id not in assigned:
                raise self.fail(f"{node.id!r} is Python's, not something a CUDA kernel can "
                                "call; ThreadMap never runs it", node)
            if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
                raise self.fail(f"{ast.unparse(node)!r}: a kernel cannot reach Python's "
                                "internals", node)

    def _free_names(self) -> set[str]:
        """Names the kernel reads that it does not bind itself: the file's imports,
        its constants, builtins."""
        return {n.id for n in self._walk() if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load) and n.id not in self._bound}

    def _check_bindings(self) -> None:
        """A name the kernel (or its decorator) takes from the file must have one
        meaning there: ``cuda = 5`` after ``from numba import cuda`` (Python's
        @cuda.jit would fail), or a constant also bound in an ``if`` block, is
        refused rather than guessed."""
        used = self._free_names()
        for decorator in self.node.decorator_list:
            used |= {n.id for n in ast.walk(decorator) if isinstance(n, ast.Name)}
        for name in sorted(used):
            bindings = self.module.bindings.get(name, ())
            if len(bindings) < 2:
                continue
            kinds = {kind for _, kind in bindings}
            if len(kinds) == 1 and kinds != {"other"}:
                continue  # the same import again, or constants reassigned in order
            shown = ", ".join(str(line) for line, _ in bindings)
            raise self.fail(
                f"{name!r} is bound more than one way at the file's top level (lines "
                f"{shown}), so ThreadMap cannot tell which the kernel means (numba would use "
                "whichever ran last); give it one binding", self.node)

    def _check_reach(self) -> None:
        """Every name the kernel reaches through the file's imports must be on the
        allow-list (allow.py): numba.cuda's kernel API, math, cmath, numpy's
        scalar types and math functions, numba's types.  Attributes of its own
        values are limited to allow.VALUE_ATTRIBUTES."""
        locals_ = self._bound
        for node in self._walk():
            if not isinstance(node, (ast.Attribute, ast.Name)):
                continue
            if isinstance(self._parents.get(id(node)), ast.Attribute):
                continue  # part of a longer chain: judged as the whole chain
            chain = [node.attr] if isinstance(node, ast.Attribute) else []
            root = node.value if isinstance(node, ast.Attribute) else node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            from_import = isinstance(root, ast.Name) and root.id in self.aliases \
                and root.id not in locals_
            if from_import:
                qualified = qualified_name(node, self.aliases) or ""
                if not allowed_name(qualified) or (chain and qualified in ALLOWED_MODULES):
                    raise self.fail(self._refused_name(node, qualified), node)
            elif isinstance(root, ast.Name) and root.id in self.module.refused_constants \
                    and root.id not in locals_ and isinstance(root.ctx, ast.Load):
                why, line = self.module.refused_constants[root.id]
                raise self.fail(f"{root.id!r} (line {line}) is not a constant a kernel can "
                                f"use: {why}", node)
            else:
                odd = [a for a in chain if a not in VALUE_ATTRIBUTES]
                if odd:
                    known = ", ".join(sorted(VALUE_ATTRIBUTES, key=str.lower))
                    raise self.fail(f"{ast.unparse(node)!r}: a kernel reads only {known} of "
                                    f"its values, not {odd[-1]!r}", node)

    @staticmethod
    def _refused_name(node: ast.expr, qualified: str) -> str:
        text = ast.unparse(node)
        what = repr(text) if text == qualified else f"{text!r} ({qualified}, through the " \
            "file's imports)"
        return (f"{what} is not something a kernel can use: ThreadMap allows numba.cuda's "
                "kernel API, math and cmath functions, numpy's scalar types and math "
                "functions, and numba's types")

    def _check_endless_loops(self) -> None:
        """``while True:`` with no break of its own and no return never ends:
        refused at its line (numba fails on it with "liveness info missing", and
        on a GPU it hangs)."""
        for node in self._walk():
            if not (isinstance(node, ast.While) and isinstance(node.test, ast.Constant)
                    and node.test.value):
                continue
            stack = list(node.body)
            ends = False
            while stack and not ends:
                inner = stack.pop()
                if isinstance(inner, (ast.Break, ast.Return)):
                    ends = True
                elif not isinstance(inner, (ast.For, ast.While)):
                    stack.extend(ast.iter_child_nodes(inner))
                else:  # a break there ends that loop, not this one; a return ends all
                    stack.extend(n for n in ast.walk(inner) if isinstance(n, ast.Return))
            if not ends:
                raise self.fail(f"the loop 'while {ast.unparse(node.test)}:' never ends (no "
                                "break or return inside it): a kernel that never finishes",
                                node)

    def _check_annotations(self) -> None:
        """Annotations are never evaluated (the derived code drops them), but a
        kernel's may only be names, allowed attribute chains, subscripts and
        literals: ``def k(A: open(...))`` is refused, not quietly ignored."""
        args = self.node.args
        annotations = [a.annotation for a in args.args if a.annotation is not None]
        if self.node.returns is not None:
            annotations.append(self.node.returns)
        annotations += [n.annotation for n in self._walk() if isinstance(n, ast.AnnAssign)]
        simple = (ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.Constant,
                  ast.Load, ast.expr_context)
        for annotation in annotations:
            for sub in ast.walk(annotation):
                if not isinstance(sub, simple):
                    raise self.fail(f"the annotation {ast.unparse(annotation)!r} is more than a "
                                    "type's name; ThreadMap reads annotations, never runs "
                                    "them", annotation)
                if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
                    raise self.fail(f"the annotation {ast.unparse(annotation)!r} reaches a "
                                    "private name", annotation)

    def _check_names(self) -> None:
        """Every name the kernel reads must exist: a parameter, a local, a kept
        import, a simple module constant or a builtin.  (numba would say only
        "name is not defined", without a line.)"""
        known = self._bound | set(self.aliases) | set(self.module.constants) | _BUILTIN_NAMES
        for node in self._walk():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id not in known:
                if node.id in self.module.refused_constants:
                    why, line = self.module.refused_constants[node.id]
                    raise self.fail(f"{node.id!r} (line {line}) is not a constant a kernel can "
                                    f"use: {why} (kernels see literals, arithmetic on them and "
                                    "numeric casts, such as TPB = 16)", node)
                line = _module_definition(self.module.tree, node.id)
                why = (f" for kernels (line {line} of the file defines it, but not as a simple "
                       "constant: kernels see only the file's numpy/math/numba imports and "
                       "constants such as TPB = 16)" if line else
                       " (not as a parameter, a local, an import or a constant anywhere in the "
                       "file)")
                raise self.fail(f"name {node.id!r} is not defined{why}", node)
        subscripted = {sub.value.id for sub in self._walk()
                       if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)}
        for node in self._walk():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id in self.params:
                for target in node.targets:
                    alias = target.id if isinstance(target, ast.Name) else None
                    if alias and alias in subscripted:
                        raise self.fail(f"array {node.value.id!r} is aliased to {alias!r}; "
                                        "index the parameter directly", node)

    def _check_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.module.device_functions:
            raise self.fail(
                f"calls the device function {func.id!r}: ThreadMap maps a single kernel "
                "function; inline the device function's body into the kernel", node)
        if isinstance(func, ast.Name) and not (
                func.id in _BUILTIN_NAMES or func.id in self.aliases
                or func.id in self.module.constants):
            defined = any(isinstance(n, ast.FunctionDef) and n.name == func.id
                          for n in self.module.tree.body)
            if defined:
                raise self.fail(
                    f"calls {func.id!r}, a function of the file that is not a CUDA device "
                    "function; kernels can only call numba, math and numpy functions", node)

    def _array_arities(self, matmul: bool = True) -> dict[str, set[int]]:
        """Index arity of every parameter used as an array (an array whose
        .shape alone is read: 2 under the matmul convention, else none)."""
        arities: dict[str, set[int]] = {}
        seen_inner: set[int] = set()
        for node in self._walk():
            if isinstance(node, ast.Subscript) and id(node) not in seen_inner:
                root, indices, has_slice = subscript_chain(node)
                inner = node.value
                while isinstance(inner, ast.Subscript):
                    seen_inner.add(id(inner))
                    inner = inner.value
                if isinstance(root, ast.Name) and root.id in self.params:
                    if has_slice:
                        raise self.fail(f"slicing array {root.id!r} is not supported; index "
                                        "single elements", node)
                    arities.setdefault(root.id, set()).add(len(indices))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in self.params and node.attr in {"shape", "size", "ndim"}:
                arities.setdefault(node.value.id, set())
            elif isinstance(node, ast.Call) and node.args:
                what = cuda_attribute(node.func, self.aliases)
                if what and what.startswith("atomic.") and isinstance(node.args[0], ast.Name) \
                        and node.args[0].id in self.params:
                    index = node.args[1] if len(node.args) > 1 else None
                    arity = len(index.elts) if isinstance(index, ast.Tuple) else 1
                    arities.setdefault(node.args[0].id, set()).add(arity)
        for name in list(arities):
            if not arities[name] and matmul:
                # Only .shape is used: an array all the same, of unknown arity; the
                # matmul convention makes it a matrix.
                arities[name] = {2}
        # An array parameter passed on whole (aliasing) would escape the checks.
        for node in self._walk():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id in arities:
                raise self.fail(f"array {node.value.id!r} is aliased to another name; "
                                "index it directly", node)
        return arities

    def _stores_and_loads(self, arities: dict[str, set[int]]) -> tuple[list[str], set[str]]:
        """Array parameters stored into (in order of first store) and those read."""
        stored: list[str] = []
        loaded: set[str] = set()

        def note_store(name: str) -> None:
            if name not in stored:
                stored.append(name)

        for node in self._walk():
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store):
                            root, _, _ = subscript_chain(sub)
                            if isinstance(root, ast.Name) and root.id in arities:
                                if target is not sub or (isinstance(node, ast.Assign)
                                                         and len(node.targets) > 1):
                                    raise self.fail(
                                        "store into an array inside a tuple or chained "
                                        "assignment; use one assignment per element", node)
                                note_store(root.id)
                                if isinstance(node, ast.AugAssign):
                                    loaded.add(root.id)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                root, _, _ = subscript_chain(node)
                if isinstance(root, ast.Name) and root.id in arities:
                    loaded.add(root.id)
            elif isinstance(node, ast.Call) and node.args:
                what = cuda_attribute(node.func, self.aliases)
                if what and what.startswith("atomic.") and isinstance(node.args[0], ast.Name) \
                        and node.args[0].id in arities:
                    op = what.split(".", 1)[1]
                    if op not in CALLED_ATOMICS:
                        raise self.fail(f"cuda.atomic.{op} on a parameter array is not "
                                        f"supported (supported: "
                                        f"{', '.join(CALLED_ATOMICS)})", node)
                    note_store(node.args[0].id)
                    loaded.add(node.args[0].id)
        # A store in a tuple/chained assignment was refused above; a load of the
        # output inside a store's own index (C[C[0, 0], 1]) is still a read.
        return stored, loaded

    def _choose_output(self, arrays: tuple[str, ...], stored: list[str]) -> tuple[str, str]:
        """The output array, and why it is the one."""
        stored_arrays = [a for a in arrays if a in stored]
        if len(stored_arrays) == 1:
            return stored_arrays[0], "the array the kernel stores into"
        if not stored_arrays:
            # Nothing is stored: the matmul convention's last array is the output,
            # and the coverage map will show it was never written.
            return arrays[-1], "the last array parameter: the kernel stores into none"
        if arrays[-1] in stored_arrays:
            return arrays[-1], ("the last array parameter, of the arrays the kernel stores "
                                f"into ({', '.join(stored_arrays)})")
        return stored_arrays[-1], ("the last of the arrays the kernel stores into "
                                   f"({', '.join(stored_arrays)})")

    def _local_arrays(self) -> tuple[LocalArray, ...]:
        found = []
        for node in self._walk():
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            what = cuda_attribute(node.value.func, self.aliases)
            if what not in ("shared.array", "local.array"):
                continue
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self.fail("assign a shared/local array to a single name", node)
            shape = node.value.args[0] if node.value.args else next(
                (kw.value for kw in node.value.keywords if kw.arg == "shape"), None)
            self._check_compile_time_shape(shape, what, node)
            found.append(LocalArray(node.targets[0].id, what.split(".")[0],
                                    self._literal_rank(shape), node.lineno, node.col_offset))
        return tuple(found)

    def _check_compile_time_shape(self, shape: ast.expr | None, what: str,
                                  node: ast.Assign) -> None:
        """Refuse, as numba does on a GPU, a shape it cannot read when it
        compiles: numba takes numbers and module-level names bound to them
        (their values frozen at compile time), never arithmetic on them
        (`TPB + 1` is typed as a run-time int64).  The CPU emulation and the
        simulator would run it; no GPU would compile it."""
        parts = list(shape.elts) if isinstance(shape, ast.Tuple) else [shape]
        for index, part in enumerate(parts):
            if not isinstance(part, ast.BinOp):
                continue
            name = "SIZE" if len(parts) == 1 else \
                ("ROWS", "COLS")[index] if len(parts) == 2 else f"DIM{index}"
            shape_text = ast.unparse(ast.Tuple(
                elts=[ast.Name(id=name) if p is part else p for p in parts], ctx=ast.Load())) \
                if len(parts) > 1 else name
            raise self.fail(
                f"the shape of cuda.{what}, `{ast.unparse(part)}`, is arithmetic, which numba "
                f"types as a run-time number and refuses on a GPU (a shape must be known when "
                f"the kernel compiles: a number, a module-level name bound to one, or a tuple "
                f"of those): bind it at module level, `{name} = {ast.unparse(part)}`, and write "
                f"`cuda.{what}({shape_text}, ...)`", node)

    def _literal_rank(self, shape: ast.expr | None) -> int | None:
        if isinstance(shape, ast.Name) and shape.id in self.module.values:
            value = self.module.values[shape.id]
            return len(value) if isinstance(value, tuple) else 1
        if isinstance(shape, ast.Tuple):
            return len(shape.elts)
        if isinstance(shape, (ast.Constant, ast.Name, ast.BinOp)):
            return 1
        return None

    def _used_constants(self) -> tuple[str, ...]:
        constants = self.module.constants
        needed: set[str] = set()
        todo = [n.id for n in self._walk()
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                and n.id in constants and n.id not in self._bound]
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            todo.extend(n.id for n in ast.walk(constants[name][0])
                        if isinstance(n, ast.Name) and n.id in constants)
        return tuple(sorted(needed, key=lambda n: constants[n][1]))

    def _launch_dims(self) -> int:
        for node in self._walk():
            if isinstance(node, ast.Call):
                what = cuda_attribute(node.func, self.aliases)
                if what in ("grid", "gridsize") and node.args \
                        and isinstance(node.args[0], ast.Constant) and node.args[0].value == 2:
                    return 2
            elif isinstance(node, ast.Attribute):
                what = cuda_attribute(node, self.aliases)
                if what and what.endswith(".y") and what.split(".")[0] in COORDINATE_OBJECTS:
                    return 2
        return 1

    def _x_indexes(self, output: str) -> str | None:
        """"rows" or "cols": which index of the output's stores the x
        coordinate (threadIdx.x, blockIdx.x, cuda.grid(2)[0]) flows into."""
        depends: set[str] = set()

        def uses_x(node: ast.AST) -> bool:
            for sub in ast.walk(node):
                what = cuda_attribute(sub, self.aliases) if isinstance(
                    sub, (ast.Attribute, ast.Name)) else None
                if what in ("threadIdx.x", "blockIdx.x") or (
                        isinstance(sub, ast.Name) and sub.id in depends):
                    return True
            return False

        for _ in range(4):  # enough passes for chains like col = x; c = col + 1
            for node in self._walk():
                if not isinstance(node, ast.Assign):
                    continue
                value = node.value
                call = cuda_attribute(value.func, self.aliases) if isinstance(
                    value, ast.Call) else None
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and call == "grid":
                        if target.elts and isinstance(target.elts[0], ast.Name):
                            depends.add(target.elts[0].id)
                    elif isinstance(target, ast.Name) and uses_x(value):
                        depends.add(target.id)
        for node in self._walk():
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                root, indices, _ = subscript_chain(node)
                if isinstance(root, ast.Name) and root.id == output and len(indices) == 2:
                    row, col = (uses_x(i) for i in indices)
                    if row != col:
                        return "rows" if row else "cols"
        return None

    def _signature_dtype(self, ndim: dict[str, int]) -> tuple[str, int] | None:
        """The dtype an explicit signature gives every array parameter
        (``@cuda.jit('void(float32[:,:], ...)')`` or ``@cuda.jit(void(f8[:, :], ...))``),
        and the decorator's line; None without one.  A signature numba would
        refuse is refused here (signature.py), as are options ThreadMap
        cannot check."""
        found = None
        for decorator in self.node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if qualified_name(target, self.aliases) != "numba.cuda.jit":
                continue
            found = check_decorator(decorator, self.kernel.name, self.params, ndim,
                                    lambda n: qualified_name(n, self.aliases),
                                    self.module.path) or found
        return found

    def _cuda_uses(self) -> tuple[tuple[str, int], ...]:
        uses = []
        for node in self._walk():
            if isinstance(node, (ast.Attribute, ast.Name)) \
                    and not isinstance(self._parents.get(id(node)), ast.Attribute):
                what = cuda_attribute(node, self.aliases)
                if what:
                    uses.append((what, node.lineno))
        return tuple(uses)

    def _barrier_calls(self, inside_loops: bool) -> int:
        """Barrier calls inside a for / while loop (or outside every loop)."""
        inside: set[int] = set()
        for node in self._walk():
            if isinstance(node, (ast.For, ast.While)):
                inside.update(id(sub) for sub in ast.walk(node))
        return sum(1 for node in self._walk() if isinstance(node, ast.Call)
                   and cuda_attribute(node.func, self.aliases) in BARRIERS
                   and (id(node) in inside) == inside_loops)

    def _barrier_lines(self) -> tuple[int, ...]:
        return tuple(sorted({node.lineno for node in self._walk()
                             if isinstance(node, ast.Attribute)
                             and cuda_attribute(node, self.aliases) in BARRIERS}))

    def _emulation_blockers(self) -> tuple[tuple[str, int], ...]:
        """(what, line) of everything the lockstep emulation cannot run: CUDA
        calls outside its allow-list, and barriers or loops it cannot place
        soundly.  Such kernels run in the simulator instead."""
        parents = self._parents
        block_arrays = {local.name for local in self._local_arrays()}
        blockers = []
        for node in self._walk():
            if isinstance(node, ast.For) and not (
                    isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                    and node.iter.func.id == "range"):
                blockers.append(("a 'for' loop over something other than range(...)",
                                 node.lineno))
            if not isinstance(node, (ast.Attribute, ast.Name)):
                continue
            what = cuda_attribute(node, self.aliases)
            parent = parents.get(id(node))
            if what is None or (isinstance(parent, ast.Attribute)
                                and cuda_attribute(parent, self.aliases) is not None):
                continue  # report only the longest name: cuda.shared.array, not cuda.shared
            head = what.split(".")[0]
            if head in COORDINATE_OBJECTS or head in COORDINATE_FUNCTIONS \
                    or head in COORDINATE_SCALARS or what in EMULATED_CALLS:
                continue
            if what in BARRIERS:
                blocker = self._barrier_blocker(what, node, parent, parents)
                if blocker:
                    blockers.append((blocker, node.lineno))
                continue
            if head == "atomic" and isinstance(parent, ast.Call) and parent.func is node \
                    and what.split(".", 1)[1] in CALLED_ATOMICS and parent.args \
                    and isinstance(parent.args[0], ast.Name) \
                    and (parent.args[0].id in self.params or parent.args[0].id in block_arrays):
                continue  # checked and emulated
            blockers.append((f"cuda.{what}", node.lineno))
        return tuple(blockers)

    @staticmethod
    def _barrier_blocker(what: str, node: ast.AST, call: ast.AST | None,
                         parents: dict) -> str | None:
        """Why a barrier cannot be placed soundly in lockstep, or None: it must
        be a statement of its own (``cuda.syncthreads()``), or assign its
        value to one name (``n = cuda.syncthreads_count(p)``)."""
        if not (isinstance(call, ast.Call) and call.func is node):
            return f"cuda.{what} used other than as a call"
        holder = parents.get(id(call))
        if what == "syncthreads":
            if isinstance(holder, ast.Expr) and not call.args:
                return None
            return ("cuda.syncthreads() inside an expression: the emulation places a barrier "
                    "only as a statement of its own")
        if isinstance(holder, ast.Assign) and len(holder.targets) == 1 \
                and isinstance(holder.targets[0], ast.Name) and len(call.args) == 1:
            return None
        return (f"cuda.{what}(...) inside an expression: the emulation places it only as "
                f"'name = cuda.{what}(predicate)'")


def _module_definition(tree: ast.Module, name: str) -> int | None:
    """The line where the module's top level binds ``name`` (an assignment
    target, a def, a class, an import, a for or with target), or None."""
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if top.name == name:
                return top.lineno
            continue
        if isinstance(top, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in top.names):
                return top.lineno
            continue
        targets = []
        if isinstance(top, ast.Assign):
            targets = top.targets
        elif isinstance(top, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [top.target]
        elif isinstance(top, ast.With):
            targets = [item.optional_vars for item in top.items if item.optional_vars]
        for target in targets:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                return top.lineno
    return None
