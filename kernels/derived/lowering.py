"""The lowering of a kernel for the lockstep emulation, shared by its two emitters.

The compiled tier (``lockstep.py``, numba) and the instant tier (``vector.py``,
numpy) write the same derivation of a kernel two ways.  What they must agree
on is worked out here, once, from the kernel's plan and the types of its
locals (:class:`LoweredKernel`):

* the operations (:attr:`LoweredKernel.operations`): a tree of typed
  statements (:class:`Simple`, :class:`Split`, :class:`ForRange`,
  :class:`WhileLoop`, :class:`Exit`, :class:`Leave`, :class:`Barrier`,
  :class:`WarpExchange`, :class:`Skip`, :class:`Refused`), each carrying the
  numbers below that its emitters need (:func:`outline` prints it), made from
  the body with each loop's ``else`` rewritten (``loop_else.py``) and each
  warp operation a statement of its own (``warp_ops.py``);
* the access sites (``transform.access_sites``), numbered in source order;
* the lane variables: each local's rows of ``_tm_V_<dtype>``;
* the block arrays (shared and local);
* the control sites, numbered in program order (a pre-order walk of the
  body): each ``if``, loop and ``return`` a branch site, each loop its
  number k (``_tm_L[k]`` / ``_tm_I[3k:3k+3]``), each barrier a barrier site,
  and the deepest nesting (rows of the masks ``_tm_M``);
* the layout of the records and workspace (:class:`LockstepLayout`).

An emitter walks the operations and takes the numbers they carry; it never
counts them itself, so the figures of both tiers are filed under the same
sites by construction.
What cannot be lowered is refused with its line
(:class:`~kernels.errors.EmulationUnsupported`), with one message on both tiers.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..errors import EmulationUnsupported
from ..records import LOCKSTEP_RECORDS, reads_flat_param, record_names
from ..sources.plan import KernelPlan, cuda_attribute
from .local_types import NO_OP_CALLS, VALUE_BARRIERS, KernelTypes
from .transform import (
    AccessRewriter,
    AccessSite,
    CoordinateRewriter,
    access_sites,
    global_ranges_param,
    global_shadow_param,
    race_checked_arrays,
    shadow_param,
    written_arrays,
)
from .loop_else import else_of
from .warp_ops import placed_body, placed_operation, uses_syncwarp


@dataclass(frozen=True)
class LaneVariable:
    """A local variable: ``width`` rows (1 for a scalar) of ``_tm_V_<dtype>``
    from ``row`` on, one column per lane."""

    name: str
    dtype: str
    row: int
    width: int | None = None


@dataclass(frozen=True)
class BranchSite:
    """A place where a warp's lanes may part: ``if``, a loop's test, ``return``."""

    site: int
    kind: str  # "if", "for", "while" or "return"
    line: int
    text: str


@dataclass(frozen=True)
class BarrierSite:
    """A ``cuda.syncthreads()`` (or ``_count`` / ``_and`` / ``_or``) call."""

    site: int
    line: int
    text: str


@dataclass(frozen=True)
class BlockArray:
    """A shared array (one per block) or local array (one per lane)."""

    name: str
    kind: str  # "shared" or "local"
    dtype: str
    shape: tuple[int, ...]
    line: int

    @property
    def param(self) -> str:
        return self.name if self.kind == "shared" else f"_tm_local_{self.name}"

    @property
    def flat_param(self) -> str:
        return f"_tm_flat_{self.name}"

    @property
    def poison(self) -> str:
        """What the array holds before each block: NaN for floating point (a
        read of an element nobody wrote then shows in C), else 0."""
        kind = np.dtype(self.dtype).kind
        return "_tm_np.nan" if kind in "fc" else "0"


@dataclass(frozen=True)
class LockstepLayout:
    """What the lockstep functions take besides the kernel's own arguments."""

    variables: tuple[LaneVariable, ...]
    #: rows of each ``_tm_V_<dtype>`` array
    rows: tuple[tuple[str, int], ...]
    depth: int
    loops: int
    block_arrays: tuple[BlockArray, ...]
    sites: tuple[AccessSite, ...]
    branches: tuple[BranchSite, ...]
    barriers: tuple[BarrierSite, ...]
    #: Warps of a block are independent (no barrier, no shared array): each
    #: warp runs through the kernel on its own, its 32 lanes' vectors in L1,
    #: and the warps of one block can go to different cores.
    warpwise: bool = False
    #: Access sites of the largest loop run lane by lane in record mode (see
    #: ``_Writer._lane_by_lane_for``): rows of its round buffer ``_tm_RB``.
    round_sites: int = 0
    #: the kernel calls cuda.syncwarp(): the shared arrays' shadows keep the
    #: syncwarps each access had passed (shadow.shadow_columns)
    warp_sync: bool = False
    #: global arrays checked for races (transform.race_checked_arrays): each
    #: has a shadow (shared by the workers) and access ranges (each worker's)
    race_arrays: tuple[str, ...] = ()

    @property
    def workspace(self) -> tuple[str, ...]:
        """Per-worker arrays: masks, counters, lane variables, lane coordinates,
        the control word (``_tm_ctl[0] != 0`` asks the run to stop), and the
        round buffers of loops run lane by lane (``_tm_RB`` the lanes'
        requests by site and round, ``_tm_H`` how many lanes ran each number
        of rounds, and how many of those left the loop)."""
        return ("_tm_M", "_tm_C", "_tm_L", "_tm_I", "_tm_LX", "_tm_LY", "_tm_ctl", "_tm_RB",
                "_tm_H", "_tm_ws") + tuple(f"_tm_V_{dtype}" for dtype, _ in self.rows)

    def array_params(self, mode: str) -> tuple[str, ...]:
        names = []
        for array in self.block_arrays:
            names.append(array.param)
            if mode == "record" and array.kind == "shared":
                names.append(shadow_param(array.name))
        if mode == "record":
            for array in self.race_arrays:
                names += [global_shadow_param(array), global_ranges_param(array)]
        return tuple(names)

    def driver_params(self, plan: KernelPlan, mode: str) -> tuple[str, ...]:
        """Parameters of ``_tm_run_<mode>``, in order."""
        names = list(plan.kernel.params)
        if mode == "record":
            names += recording_params(len(plan.inputs), len(written_arrays(plan)))
        names += list(self.workspace) + list(self.array_params(mode))
        names += [a.flat_param for a in self.block_arrays]
        return tuple(names) + ("_tm_gdx", "_tm_gdy", "_tm_bdx", "_tm_bdy", "_tm_u0", "_tm_u1",
                               "_tm_epoch")

    def units(self, blocks: int, threads_per_block: int) -> int:
        """Units of work of a launch: warps (``warpwise``) or blocks."""
        return blocks * (-(-threads_per_block // 32) if self.warpwise else 1)


def recording_params(inputs: int, written: int = 0) -> list[str]:
    """What the recording functions take after the kernel's own arguments
    (``inputs``: how many input arrays it has, each with its read counts;
    ``written``: how many of them it also stores into, each with its write
    maps)."""
    return (record_names(inputs, written) + [reads_flat_param(i) for i in range(inputs)]
            + list(LOCKSTEP_RECORDS))


@dataclass(frozen=True)
class RangeLoop:
    """A ``for`` loop over ``range(start, stop, step)``, as both tiers run it:
    loop k (``_tm_L[k]``, counters ``_tm_I[3k:3k+3]``), its branch site, its
    variable, and its step when a literal (None: known at run time)."""

    number: int
    site: int
    variable: LaneVariable
    start: ast.expr
    stop: ast.expr
    step: ast.expr
    literal_step: int | None


# -- the lowered kernel: a tree of operations ---------------------------------------------

@dataclass(frozen=True, eq=False)
class Operation:
    """One statement of the kernel as the emulation runs it, with every number
    an emitter needs.  ``stmt`` is the statement it lowers (its line, and the
    expressions the emitter rewrites for its lanes)."""

    stmt: ast.stmt

    @property
    def line(self) -> int:
        return self.stmt.lineno

    def outline(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, eq=False)
class Simple(Operation):
    """An assignment or an expression, run by every active lane."""

    def outline(self) -> str:
        return f"Simple: {ast.unparse(self.stmt)}"


@dataclass(frozen=True, eq=False)
class Skip(Operation):
    """Nothing to run: ``pass``, a docstring, a block array's declaration
    (the driver's, poisoned before each block)."""

    def outline(self) -> str:
        return f"Skip: {ast.unparse(self.stmt)[:60]}"


@dataclass(frozen=True, eq=False)
class Split(Operation):
    """An ``if``: the lanes that take it run ``body``, the others ``orelse``."""

    site: BranchSite
    body: tuple[Operation, ...]
    orelse: tuple[Operation, ...]

    def outline(self) -> str:
        return f"Split site {self.site.site}: {self.site.text}"


@dataclass(frozen=True, eq=False)
class ForRange(Operation):
    """A ``for`` over ``range(...)``: loop k, its counter's rows, its site."""

    loop: RangeLoop
    body: tuple[Operation, ...]

    def outline(self) -> str:
        return (f"ForRange k={self.loop.number} site {self.loop.site}: "
                f"{self.loop.variable.name} (row {self.loop.variable.row})")


@dataclass(frozen=True, eq=False)
class WhileLoop(Operation):
    """A ``while``: loop ``number``, its test a branch site."""

    number: int
    site: int
    body: tuple[Operation, ...]

    def outline(self) -> str:
        return f"WhileLoop k={self.number} site {self.site}"


@dataclass(frozen=True, eq=False)
class Exit(Operation):
    """A ``return``: the lanes here leave the kernel (a branch site)."""

    site: int

    def outline(self) -> str:
        return f"Exit site {self.site}"


@dataclass(frozen=True, eq=False)
class Leave(Operation):
    """``break`` (``broke``) or ``continue``: the lanes here leave the loop's
    body, and for a break the loop."""

    broke: bool

    def outline(self) -> str:
        return "Leave (break)" if self.broke else "Leave (continue)"


@dataclass(frozen=True, eq=False)
class Barrier(Operation):
    """``syncthreads`` (or a value form, ``what``) at barrier site ``site``;
    a memory fence has no site (memory is sequentially consistent here)."""

    what: str
    site: int | None

    def outline(self) -> str:
        return f"Barrier {self.what}" + (f" site {self.site}" if self.site is not None else "")


@dataclass(frozen=True, eq=False)
class WarpExchange(Operation):
    """A warp operation, placed as a statement of its own (warp_ops.py)."""

    what: str

    def outline(self) -> str:
        return f"WarpExchange {self.what}"


@dataclass(frozen=True, eq=False)
class Refused(Operation):
    """What the emulation cannot run: the emitter that meets it raises
    ``error`` (so a kernel's first refusal in program order is the one said)."""

    error: EmulationUnsupported

    def outline(self) -> str:
        return f"Refused: {self.error}"


def outline(operations: tuple[Operation, ...], indent: int = 0) -> str:
    """The operations as an indented list, one per line with its kernel line:
    what ``LoweredKernel.operations`` holds, for a reader."""
    lines = []
    for op in operations:
        lines.append(f"{'  ' * indent}{op.line:4d}  {op.outline()}")
        for field in ("body", "orelse"):
            inner = getattr(op, field, ())
            if inner:
                if field == "orelse":
                    lines.append(f"{'  ' * indent}      else:")
                lines.append(outline(inner, indent + 1))
    return "\n".join(line for line in lines if line)


class LoweredKernel:
    """A kernel lowered for the lockstep emulation: the facts and numbers both
    emitters share (see the module docstring).  Made once per kernel and
    types; an emitter takes its own rewriters (:meth:`access_rewriter`,
    :meth:`coordinate_rewriter`), which keep state as they go."""

    def __init__(self, plan: KernelPlan, types: KernelTypes):
        self.plan = plan
        self.aliases = plan.module.aliases
        #: the kernel's body, each warp operation a statement of its own (warp_ops.py)
        self.body = placed_body(plan)
        self.sites = access_sites(plan)
        self.race_arrays = race_checked_arrays(plan)
        self.block_arrays = self._block_arrays(types)
        self.variables, self.rows = self._variables(types)
        self.local_arrays = frozenset(a.name for a in self.block_arrays if a.kind == "local")
        #: control sites by node (id): branch sites, loop numbers, barrier sites
        self.branch_of: dict[int, BranchSite] = {}
        self.loop_of: dict[int, int] = {}
        self.barrier_of: dict[int, BarrierSite] = {}
        self.depth = 1
        self._number(self.body, 0)
        #: the kernel as the emitters run it: a tree of typed operations,
        #: each with its numbers (:func:`outline` prints it)
        self.operations = self._operations(self.body)

    # -- what the kernel holds -------------------------------------------------------

    def fail(self, what: str, node: ast.AST) -> EmulationUnsupported:
        """The refusal of ``node``, located at its line."""
        return EmulationUnsupported(what, (getattr(node, "lineno", self.plan.kernel.lineno),))

    def _block_arrays(self, types: KernelTypes) -> tuple[BlockArray, ...]:
        arrays = []
        for spec in types.block_arrays:
            if any(a.name == spec.name for a in arrays):
                raise EmulationUnsupported(f"array {spec.name!r} is declared more than once; "
                                           "declare each shared or local array once",
                                           (spec.line,))
            if len(spec.shape) not in (1, 2):
                raise EmulationUnsupported(
                    f"{spec.kind} array {spec.name!r} has {len(spec.shape)} dimensions; the "
                    "emulation checks 1-D and 2-D arrays", (spec.line,))
            arrays.append(BlockArray(spec.name, spec.kind, spec.dtype, spec.shape, spec.line))
        return tuple(arrays)

    def _variables(self, types: KernelTypes):
        blocks = {a.name for a in self.block_arrays}
        rows: dict[str, int] = {}
        variables = {}
        assigned = {}
        for stmt in self.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    assigned.setdefault(node.id, node)
        for name, node in assigned.items():
            if name in blocks:
                continue
            lane_type = types.variables.get(name)
            if lane_type is None:
                raise self.fail(f"variable {name!r}: numba gave it no type", node)
            width = lane_type.width or 1
            row = rows.get(lane_type.dtype, 0)
            rows[lane_type.dtype] = row + width
            variables[name] = LaneVariable(name, lane_type.dtype, row, lane_type.width)
        return variables, tuple(sorted(rows.items()))

    # -- control sites, numbered once ------------------------------------------------

    def _number(self, body: list[ast.stmt], depth: int) -> None:
        """Number the control sites of ``body`` in program order (pre-order),
        as the emitters meet them.  A statement that cannot be lowered is
        passed over here: the emitter that meets it refuses it, in order."""
        for stmt in body:
            try:
                kind = self.statement_kind(stmt)
            except EmulationUnsupported:
                continue
            if kind in ("if", "for", "while"):
                if kind != "if":
                    self.loop_of[id(stmt)] = len(self.loop_of)
                self._branch(kind, stmt)
                self.depth = max(self.depth, depth + 2)
                self._number(stmt.body, depth + 1)
                self._number(stmt.orelse if kind == "if" else [], depth + 1)
            elif kind == "return":
                self._branch(kind, stmt)
            elif kind == "barrier" and self.barrier_call(stmt) in {"syncthreads"} | VALUE_BARRIERS:
                self.barrier_of[id(stmt)] = BarrierSite(len(self.barrier_of), stmt.lineno,
                                                        ast.unparse(stmt.value))

    def _branch(self, kind: str, stmt: ast.stmt) -> None:
        if kind == "if" and else_of(stmt) is not None:
            text = f"else of the loop at line {else_of(stmt)}"
        elif kind == "if":
            text = f"if {ast.unparse(stmt.test)}"
        elif kind == "for":
            text = f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"
        elif kind == "while":
            text = f"while {ast.unparse(stmt.test)}"
        else:
            text = "return"
        self.branch_of[id(stmt)] = BranchSite(len(self.branch_of), kind, stmt.lineno, text)

    @property
    def loops(self) -> int:
        return len(self.loop_of)

    # -- the operations ----------------------------------------------------------------

    def _operations(self, body: list[ast.stmt]) -> tuple[Operation, ...]:
        return tuple(self._operation(stmt) for stmt in body)

    def _operation(self, stmt: ast.stmt) -> Operation:
        """``stmt`` lowered, or :class:`Refused` with why (the emitter that
        meets it raises, so refusals come in program order)."""
        try:
            kind = self.statement_kind(stmt)
            if kind == "if":
                return Split(stmt, self.branch_of[id(stmt)], self._operations(stmt.body),
                             self._operations(stmt.orelse))
            if kind == "for":
                return ForRange(stmt, self.range_loop(stmt), self._operations(stmt.body))
            if kind == "while":  # (its else is an if after it by now: loop_else.py)
                return WhileLoop(stmt, self.loop_of[id(stmt)], self.branch_of[id(stmt)].site,
                                 self._operations(stmt.body))
            if kind == "return":
                return Exit(stmt, self.return_site(stmt))
            if kind == "leave":
                return Leave(stmt, isinstance(stmt, ast.Break))
            if kind == "barrier":
                barrier = self.barrier_of.get(id(stmt))
                return Barrier(stmt, self.barrier_call(stmt),
                               barrier.site if barrier is not None else None)
            if kind == "warp":
                return WarpExchange(stmt, placed_operation(stmt, self.aliases))
            return Skip(stmt) if kind == "skip" else Simple(stmt)
        except EmulationUnsupported as error:
            return Refused(stmt, error)

    # -- what a statement is -----------------------------------------------------------

    def statement_kind(self, stmt: ast.stmt) -> str:
        """What a statement of the kernel is to a lockstep code generator:
        "if", "for", "while", "return", "leave" (break / continue), "skip"
        (pass, a docstring, a block array's declaration), "barrier" or
        "simple".  Both generators (this one, and vector.py's) dispatch on it."""
        if isinstance(stmt, ast.If):
            return "if"
        if isinstance(stmt, ast.For):
            return "for"
        if isinstance(stmt, ast.While):
            return "while"
        if isinstance(stmt, ast.Return):
            return "return"
        if isinstance(stmt, (ast.Break, ast.Continue)):
            return "leave"
        if isinstance(stmt, ast.Pass) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return "skip"  # (a docstring)
        if self.barrier_call(stmt) is not None:
            return "barrier"
        if placed_operation(stmt, self.aliases):
            return "warp"
        if self.is_declaration(stmt):
            return "skip"  # block arrays are the driver's; poisoned before each block
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            return "simple"
        raise self.fail(f"{type(stmt).__name__} statements are not supported by the "
                         "lockstep emulation", stmt)

    def is_declaration(self, stmt: ast.stmt) -> bool:
        return (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
                and cuda_attribute(stmt.value.func, self.aliases) in ("shared.array",
                                                                      "local.array"))

    def barrier_call(self, stmt: ast.stmt) -> str | None:
        """``"syncthreads"`` (and the value forms, assigned to one name) when
        ``stmt`` is a barrier placed as a statement of its own; other no-op
        calls (fences) too."""
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if not isinstance(value, ast.Call):
            return None
        what = cuda_attribute(value.func, self.aliases)
        if isinstance(stmt, ast.Expr) and what in NO_OP_CALLS:
            return what
        if isinstance(stmt, ast.Assign) and what in VALUE_BARRIERS and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and len(value.args) == 1:
            return what
        return None

    def _range_arguments(self, stmt: ast.For) -> tuple[ast.expr, ast.expr, ast.expr, int | None]:
        call = stmt.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "range" and "range" not in self.variables
                and 1 <= len(call.args) <= 3 and not call.keywords):
            raise self.fail("the lockstep emulation runs 'for' loops over range(...) only",
                             stmt)
        if not isinstance(stmt.target, ast.Name):
            raise self.fail("a 'for' loop over range(...) takes one loop variable", stmt)
        args = list(call.args)
        if len(args) == 1:
            args = [ast.Constant(0)] + args
        if len(args) == 2:
            args.append(ast.Constant(1))
        step = _literal_int(args[2])
        return args[0], args[1], args[2], step

    # -- control statements, as both tiers run them (each refusal said once) ----------

    def range_loop(self, stmt: ast.For) -> RangeLoop:
        """A ``for`` over ``range(...)``: its number, branch site, variable and
        bounds; any other ``for`` refused."""
        start, stop, step, literal_step = self._range_arguments(stmt)
        target = stmt.target.id
        variable = self.variables[target]
        if variable.width:
            raise self.fail(f"loop variable {target!r} cannot be a tuple", stmt)
        return RangeLoop(self.loop_of[id(stmt)], self.branch_of[id(stmt)].site, variable,
                         start, stop, step, literal_step)

    def return_site(self, stmt: ast.Return) -> int:
        """A ``return``'s branch site; a return with a value refused."""
        if stmt.value is not None and not (isinstance(stmt.value, ast.Constant)
                                           and stmt.value.value is None):
            raise self.fail("a kernel returns nothing", stmt)
        return self.branch_of[id(stmt)].site

    # -- what an emitter takes ---------------------------------------------------------

    def access_rewriter(self, mode: str) -> AccessRewriter:
        """A rewriter of the kernel's accesses into helper calls for ``mode``,
        numbering each access as :attr:`sites` does."""
        numbering = {(s.line, s.column, s.kind): s.site for s in self.sites}
        return AccessRewriter(self.plan, mode, "cpu", numbering)

    def coordinate_rewriter(self) -> CoordinateRewriter:
        return CoordinateRewriter(self.plan)

    def layout(self, round_sites: int = 0) -> LockstepLayout:
        """The layout of the lockstep functions (``round_sites``: rows of the
        compiled tier's round buffer, which only it has)."""
        return LockstepLayout(
            variables=tuple(self.variables.values()), rows=self.rows, depth=self.depth,
            loops=self.loops, block_arrays=self.block_arrays, sites=self.sites,
            branches=tuple(sorted(self.branch_of.values(), key=lambda b: b.site)),
            barriers=tuple(sorted(self.barrier_of.values(), key=lambda b: b.site)),
            # (a global array checked for races: a block's warps in one worker,
            # so that its shadow's intervals see them all, in one order)
            warpwise=not self.plan.barrier_lines and not any(
                a.kind == "shared" for a in self.block_arrays) and not self.race_arrays,
            round_sites=round_sites, warp_sync=uses_syncwarp(self.plan),
            race_arrays=self.race_arrays)


def lower(plan: KernelPlan, types: KernelTypes) -> LoweredKernel:
    """``plan`` lowered for the types of its locals, once per plan and types
    (the loader and ``kernel_types`` keep both, so the compiled tier's two
    modes and the instant tier share one lowering)."""
    key = (id(plan), id(types))
    entry = _LOWERED.get(key)
    if entry is None or entry[0] is not plan or entry[1] is not types:
        while len(_LOWERED) >= 32:
            _LOWERED.pop(next(iter(_LOWERED)))
        entry = _LOWERED[key] = (plan, types, LoweredKernel(plan, types))
    return entry[2]


#: Lowered kernels by the identity of their plan and types (held, so never reused).
_LOWERED: dict[tuple[int, int], tuple[KernelPlan, KernelTypes, LoweredKernel]] = {}


def _literal_int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal_int(node.operand)
        return -value if value is not None else None
    return None


