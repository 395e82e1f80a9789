"""Rewrite a kernel's accesses to its arrays, and its thread coordinates.

One kernel source, several derived forms (never a hand-written twin):

* the recording CUDA kernel (``derive_cuda_record``): every access to the
  kernel's arrays routed through checked, recording helpers (write counts,
  writers, iterations, out-of-bounds accesses, read counts).  It still
  compiles for a real GPU.
* the CPU emulation (``lockstep.py``), which runs a whole block in lockstep:
  it uses :class:`AccessRewriter` for each statement's accesses and
  :class:`CoordinateRewriter` for the thread coordinates.

Index expressions are passed as arguments to the helpers, so each is
evaluated once and ``and`` / ``or`` keep short-circuiting: hoisting reads into
statements of their own would count reads the kernel never makes.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import functools
from dataclasses import dataclass

from ..errors import UnsupportedConstruct
from ..records import (
    ATOMICS,
    COUNT,
    DIVISION_SITES,
    ITERATION,
    MARGIN,
    MAX_WRITER,
    MIN_WRITER,
    STORES,
    reads_param,
    record_names,
    written_param,
)
from ..sources.plan import CALLED_ATOMICS, KernelPlan, cuda_attribute, subscript_chain
from .intrinsics import INTRINSICS, LOWERED_NAMES

#: Explicit thread coordinates of an emulated thread.
COORDINATE_PARAMS = ("_tm_tx", "_tm_ty", "_tm_bx", "_tm_by",
                     "_tm_bdx", "_tm_bdy", "_tm_gdx", "_tm_gdy", "_tm_gtid")
_COORDINATES = {
    "threadIdx.x": "_tm_tx", "threadIdx.y": "_tm_ty", "threadIdx.z": 0,
    "blockIdx.x": "_tm_bx", "blockIdx.y": "_tm_by", "blockIdx.z": 0,
    "blockDim.x": "_tm_bdx", "blockDim.y": "_tm_bdy", "blockDim.z": 1,
    "gridDim.x": "_tm_gdx", "gridDim.y": "_tm_gdy", "gridDim.z": 1,
    "warpsize": 32,
}
#: Recording arguments every checked access takes, per target.  The CPU
#: emulation also notes each lane's offset for its warp's request
#: (in ``_tm_req``, by lane ``_tm_l``; see records.py).
OOB_ARGS = {
    "cuda": ("_tm_oob", "_tm_oob_min_thread", "_tm_oob_thread", "_tm_oob_index", "_tm_gtid"),
    "cpu": ("_tm_oob", "_tm_oob_min_thread", "_tm_oob_thread", "_tm_oob_index",
            "_tm_req", "_tm_l", "_tm_gtid"),
}
#: What a written array's store and atomic helpers also take (after its count
#: or atomics map): the writer maps, the store numbers, and the margin where
#: its out-of-bounds writes land; the output's are ``RECORD_PARAMS``', another
#: written array's its own (``records.written_param``).
_WRITER_RECORDS = (MIN_WRITER, MAX_WRITER, ITERATION, STORES, MARGIN)
#: What the CPU emulation's shared-memory helpers also take: the array's
#: shadow (who wrote / read each element in which barrier interval) and where
#: in the block the access happens.
SHARED_ARGS = ("_tm_epoch", "_tm_epoch0", "_tm_race", "_tm_uninit", "_tm_block", "_tm_ws")

#: Global linear thread id on the GPU: block-major, x fastest (as the emulation).
_CUDA_GTID = (
    "_tm_gtid = (_tm_numba.int64(_tm_cuda.blockIdx.y) * _tm_cuda.gridDim.x"
    " + _tm_cuda.blockIdx.x) * (_tm_cuda.blockDim.x * _tm_cuda.blockDim.y)"
    " + _tm_cuda.threadIdx.y * _tm_cuda.blockDim.x + _tm_cuda.threadIdx.x")


def shadow_param(array: str) -> str:
    """Name of the shadow of shared array ``array`` in the emulation."""
    return f"_tm_shadow_{array}"


#: What the CPU emulation's helpers of a global array checked for races also
#: take (record_runtime's _tm_check_global_*): where in the block the access
#: happens, and the record of the first race within a block.
GLOBAL_RACE_ARGS = ("_tm_epoch", "_tm_epoch0", "_tm_grace", "_tm_block", "_tm_ws")


def global_shadow_param(array: str) -> str:
    """The shadow of global array ``array`` checked for races: as a shared
    array's, its barrier intervals numbered per block (helper_library)."""
    return f"_tm_gshadow_{array}"


def global_ranges_param(array: str) -> str:
    """Per element of global array ``array``: the lowest and highest access
    key (thread x sites + site) of its plain reads, plain writes and atomic
    updates, and whether a race within a block met it (records.py)."""
    return f"_tm_granges_{array}"


def _per_plan(derive):
    """``derive(plan)`` worked out once per plan (plans are cached by the
    loader, so a sweep's 64 runs share one): it walks a copy of the kernel's
    tree, ~4 ms a run."""
    cache: dict[int, tuple[KernelPlan, object]] = {}

    @functools.wraps(derive)
    def remembered(plan: KernelPlan):
        entry = cache.get(id(plan))
        if entry is None or entry[0] is not plan:
            if len(cache) >= 32:
                cache.pop(next(iter(cache)))
            entry = cache[id(plan)] = (plan, derive(plan))
        return entry[1]

    return remembered


@_per_plan
def race_checked_arrays(plan: KernelPlan) -> tuple[str, ...]:
    """The global arrays of a described kernel whose accesses can race (issue
    22, point 4): stored into and also read, updated atomically, or not the
    output; or updated atomically and read.  An array only read cannot race;
    one only updated atomically (a histogram's bins) neither; the output
    only stored into is checked by its writer maps (two threads storing one
    element are a collision).  A matmul-convention run keeps its maps only:
    there C's collisions are the finding."""
    if plan.matmul:
        return ()
    loads: set[str] = set()
    stores: set[str] = set()
    atomics: set[str] = set()
    for node in ast.walk(plan.kernel.node):
        if isinstance(node, ast.AugAssign):
            root, _, _ = subscript_chain(node.target) if isinstance(
                node.target, ast.Subscript) else (None, None, None)
            if isinstance(root, ast.Name):
                loads.add(root.id)
        if isinstance(node, ast.Subscript):
            root, _, _ = subscript_chain(node)
            if isinstance(root, ast.Name):
                (stores if isinstance(node.ctx, ast.Store) else loads).add(root.id)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            what = cuda_attribute(node.func, plan.module.aliases) or ""
            if what.startswith("atomic."):
                atomics.add(node.args[0].id)
    return tuple(name for name in plan.arrays
                 if (name in stores and (name in loads or name in atomics
                                         or name != plan.output))
                 or (name in atomics and name in loads))


def written_arrays(plan: KernelPlan) -> tuple[str, ...]:
    """The arrays besides the output that a described kernel stores into or
    updates atomically, in parameter order: each keeps write maps of its own
    (``records.WRITE_RECORDS``).  Under the matmul convention, none: C's are
    the maps, as they always were."""
    if plan.matmul:
        return ()
    return tuple(name for name in plan.arrays
                 if name in plan.stored_arrays and name != plan.output)


@dataclass(frozen=True)
class AccessSite:
    """One place in the source where the kernel reads or writes an array: a
    parameter (global memory), a shared array or a local array."""

    site: int
    kind: str  # "load", "store" or "atomic"
    array: str
    role: str  # "A", "B", "C", "shared" or "local"
    line: int
    column: int
    text: str

    @property
    def space(self) -> str:
        """``"global"``, ``"shared"`` or ``"local"`` memory."""
        return self.role if self.role in ("shared", "local") else "global"

    def label(self) -> str:
        return f"line {self.line}: {self.kind} {self.text}"


@dataclass(frozen=True)
class ArraySlot:
    """An array the helpers check: its slot in the out-of-bounds table."""

    name: str
    slot: int
    ndim: int
    #: "in" (an input: reads counted), "out" (the output: writes recorded),
    #: "sh" (a shared array) or "lc" (a local array)
    role: str
    input_index: int = -1
    #: A and B name the inputs under the matmul convention; else their names
    matmul: bool = True
    #: a global array checked for races (race_checked_arrays): its CPU
    #: helpers keep its shadow and access ranges
    races: bool = False
    #: which written array's records its stores and atomic updates fill (0:
    #: the output's; 1 on: ``written_arrays``; -1: it is not written)
    write_index: int = -1

    def helper_role(self, op: str) -> str:
        """The role of the helper of access ``op`` ("ld", "st", "at..."): an
        input that is also written reads as an input (its reads counted) and
        writes as an output (its writes recorded)."""
        return "out" if op != "ld" and self.write_index > 0 else self.role

    @property
    def site_role(self) -> str:
        return {"out": "C", "sh": "shared", "lc": "local"}.get(self.role) \
            or ("AB"[self.input_index] if self.matmul else self.name)


def array_slots(plan: KernelPlan) -> tuple[ArraySlot, ...]:
    """Parameter arrays first (slots 0..2, as in ``plan.arrays``), then the
    shared / local arrays whose rank is known."""
    slots = []
    raced = race_checked_arrays(plan)
    written = written_arrays(plan)
    for slot, name in enumerate(plan.arrays):
        if name == plan.output:
            slots.append(ArraySlot(name, slot, plan.ndim[name], "out", races=name in raced,
                                   write_index=0))
        else:
            slots.append(ArraySlot(name, slot, plan.ndim[name], "in",
                                   plan.inputs.index(name), plan.matmul, name in raced,
                                   written.index(name) + 1 if name in written else -1))
    for local in plan.local_arrays:
        if local.ndim in (1, 2):
            slots.append(ArraySlot(local.name, len(slots), local.ndim,
                                   "sh" if local.kind == "shared" else "lc"))
    return tuple(slots)


@_per_plan
def access_sites(plan: KernelPlan) -> tuple[AccessSite, ...]:
    """Every access of the kernel to its checked arrays, numbered in source
    order (line, then column, then load before store)."""
    func = copy.deepcopy(plan.kernel.node)
    rewriter = AccessRewriter(plan, "record", "cuda")
    rewriter.rewrite_body(func.body)
    found = sorted(rewriter.found, key=_site_key)
    return tuple(dataclasses.replace(site, site=number) for number, site in enumerate(found))


_KIND_ORDER = {"load": 0, "store": 1, "atomic": 2}


def _site_key(site: AccessSite) -> tuple[int, int, int]:
    return (site.line, site.column, _KIND_ORDER[site.kind])


#: Division operators whose divisor is checked, by helper name.
_DIVISION_OPS = {ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod"}


def _nonzero_constant(plan: KernelPlan, node: ast.expr) -> bool:
    """A divisor that cannot be zero: a literal or a module constant."""
    if isinstance(node, ast.Name) and node.id in plan.module.values:
        value = plan.module.values[node.id]  # (allow.evaluate's value)
    else:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node = node.operand
        if not isinstance(node, ast.Constant):
            return False
        value = node.value
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0


@_per_plan
def division_sites(plan: KernelPlan) -> tuple[tuple[int, int, str], ...]:
    """Each division (``/``, ``//``, ``%``, and their ``op=``) in the kernel
    whose divisor may be zero, as (line, column, text), in source order: the
    recording forms count divisions by zero there."""
    found = []
    for node in ast.walk(plan.kernel.node):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _DIVISION_OPS:
            divisor = node.right if isinstance(node, ast.BinOp) else node.value
            if not _nonzero_constant(plan, divisor):
                found.append((node.lineno, node.col_offset, ast.unparse(node)))
    return tuple(sorted(found))


def derive_cuda_record(plan: KernelPlan) -> ast.FunctionDef:
    """The recording CUDA kernel (undecorated): the kernel's own body with
    every access checked and recorded."""
    func = copy.deepcopy(plan.kernel.node)
    rewriter = AccessRewriter(plan, "record", "cuda")
    func.body = rewriter.rewrite_body(func.body)
    func.body.insert(0, ast.parse(_CUDA_GTID).body[0])
    params = list(plan.kernel.params) + record_names(len(plan.inputs),
                                                     len(written_arrays(plan)))
    func.name = f"{plan.name}__tm_record"
    func.args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                              kwonlyargs=[], kw_defaults=[], defaults=[])
    func.decorator_list = []
    func.returns = None
    return ast.fix_missing_locations(func)


def _name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def _call(func: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=_name(func), args=args, keywords=[])


def _int64(value: int) -> ast.Call:
    """``_tm_i64(value)``: an int64 constant (``_tm_i64`` is numba's int64)."""
    return _call("_tm_i64", [ast.Constant(value)])


class AccessRewriter(ast.NodeTransformer):
    """Route every access to a checked array through a helper call.

    ``mode`` is "record" or "plain"; ``target`` "cuda" or "cpu" (which
    recording arguments the helpers take).  ``numbering`` maps each access
    to its site number (see :func:`access_sites`); without it, sites are
    only collected (in ``found``) and numbered -1.
    """

    def __init__(self, plan: KernelPlan, mode: str, target: str,
                 numbering: dict[tuple[int, int, str], int] | None = None):
        self.plan = plan
        self.slots = {s.name: s for s in array_slots(plan)}
        self.mode = mode
        self.target = target
        self.numbering = numbering
        self.temp_counter = 0
        self.found: list[AccessSite] = []
        #: site numbers met since the last call of take_sites()
        self._recent: list[int] = []
        self.divisions = {(line, column): min(number, DIVISION_SITES - 1) for number, (
            line, column, _) in enumerate(division_sites(plan))} if mode == "record" else {}

    def fail(self, message: str, node: ast.AST) -> UnsupportedConstruct:
        return UnsupportedConstruct(f"kernel {self.plan.name!r}: {message}",
                                    self.plan.module.path, getattr(node, "lineno", None))

    def take_sites(self) -> list[int]:
        """Site numbers rewritten since the last call (in rewriting order)."""
        recent, self._recent = self._recent, []
        return recent

    def _site(self, slot: ArraySlot, kind: str, node: ast.AST, text: str) -> int:
        line, column = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        self.found.append(AccessSite(-1, kind, slot.name, slot.site_role, line, column, text))
        if self.numbering is None:
            return -1
        site = self.numbering[(line, column, kind)]
        self._recent.append(site)
        return site

    def rewrite_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    # -- what an access is ------------------------------------------------------------

    def _tracked(self, node: ast.expr) -> tuple[ArraySlot, list[ast.expr]] | None:
        if not isinstance(node, ast.Subscript):
            return None
        root, indices, _ = subscript_chain(node)
        if not (isinstance(root, ast.Name) and root.id in self.slots):
            return None
        slot = self.slots[root.id]
        if len(indices) != slot.ndim:
            what = "a row view" if len(indices) < slot.ndim else "too many indices"
            raise self.fail(f"{ast.unparse(node)} indexes the {slot.ndim}-D array {root.id!r} "
                            f"with {len(indices)} index(es) ({what}); index single elements "
                            f"with {slot.ndim}", node)
        return slot, [self.visit(i) for i in indices]

    @staticmethod
    def _text(slot: ArraySlot, indices: list[ast.expr], node: ast.AST) -> str:
        """The access as the user wrote it (``C[i][j]``, ``cuda.atomic.add(...)``)."""
        if isinstance(node, (ast.Subscript, ast.Call)):
            return ast.unparse(node)
        return f"{slot.name}[{', '.join(ast.unparse(i) for i in indices)}]"

    def _helper(self, op: str, slot: ArraySlot, indices: list[ast.expr],
                value: ast.expr | list | None, node: ast.AST, kind: str) -> ast.Call:
        """``_tm_<op><ndim>_<role>(array, indices..., [value], slot, site,
        [what this role records], out-of-bounds arguments, [shared ones])``."""
        # (a compare-and-swap takes two values: the one compared with, the new one)
        values = value if isinstance(value, list) else [] if value is None else [value]
        base = [_name(slot.name)] + indices + values
        if self.mode == "plain":
            return _call(f"_tm_{op}{slot.ndim}", base)
        site = self._site(slot, kind, node, self._text(slot, indices, node))
        names: tuple[str, ...] = ()
        role = slot.helper_role(op)
        if role == "in" and op == "ld" and self.target == "cuda":
            # (the CPU emulation counts reads per warp request instead)
            names = (reads_param(slot.input_index),)
        elif role == "out" and op != "ld":
            names = tuple(written_param(slot.write_index, record) for record in (
                (COUNT if op == "st" else ATOMICS),) + _WRITER_RECORDS)
        names += OOB_ARGS[self.target]
        if slot.role == "sh" and self.target == "cpu":
            names += (shadow_param(slot.name),) + SHARED_ARGS
        checked = slot.races and self.target == "cpu"
        if checked:
            names += (global_shadow_param(slot.name), global_ranges_param(slot.name)) \
                + GLOBAL_RACE_ARGS
        # Slot and site are passed as int64, not literals: numba would compile
        # the helper once per literal value (tens of seconds for a kernel).
        return _call(f"_tm_{op}{slot.ndim}_{role}{'r' if checked else ''}",
                     base + [_int64(slot.slot), _int64(site)] + [_name(n) for n in names])

    def _load(self, slot: ArraySlot, indices: list[ast.expr], node: ast.AST) -> ast.Call:
        return self._helper("ld", slot, indices, None, node, "load")

    def _store(self, slot: ArraySlot, indices: list[ast.expr], value: ast.expr,
               node: ast.AST) -> ast.Call:
        return self._helper("st", slot, indices, value, node, "store")

    def _atomic(self, op: str, slot: ArraySlot, indices: list[ast.expr],
                value: ast.expr | list, node: ast.AST) -> ast.Call:
        return self._helper(f"at{op}", slot, indices, value, node, "atomic")

    # -- visitors ---------------------------------------------------------------------

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        tracked = self._tracked(node)
        if tracked is None:
            return self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            raise self.fail(f"{ast.unparse(node)} is stored to in a way ThreadMap does not "
                            "support; use 'X[i, j] = value'", node)
        slot, indices = tracked
        return ast.copy_location(self._load(slot, indices, node), node)

    def visit_Assign(self, node: ast.Assign) -> ast.stmt | list[ast.stmt]:
        if len(node.targets) == 1 and self._tracked_root(node.targets[0]):
            # Python (and numba) evaluate the value before the target's index.
            # When the index itself reads arrays or calls anything, bind the
            # value first so that order (and the first out-of-bounds access
            # recorded) stays the kernel's.
            value = self.visit(node.value)
            slot, indices = self._tracked(node.targets[0])
            statements: list[ast.stmt] = []
            if any(isinstance(n, (ast.Call, ast.Subscript)) for i in indices
                   for n in ast.walk(i)) and not isinstance(value, (ast.Name, ast.Constant)):
                temp = f"_tm_t{self.temp_counter}"
                self.temp_counter += 1
                statements.append(ast.copy_location(
                    ast.Assign(targets=[ast.Name(temp, ast.Store())], value=value), node))
                value = _name(temp)
            call = self._store(slot, indices, value, node.targets[0])
            statements.append(ast.copy_location(ast.Expr(call), node))
            return statements if len(statements) > 1 else statements[0]
        return self.generic_visit(node)

    def _tracked_root(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Subscript):
            return False
        root, _, _ = subscript_chain(node)
        return isinstance(root, ast.Name) and root.id in self.slots

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        tracked = self._tracked(node.target)
        if tracked and node.value is not None:
            slot, indices = tracked
            store = self._store(slot, indices, self.visit(node.value), node.target)
            return ast.copy_location(ast.Expr(store), node)
        return self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt | list[ast.stmt]:
        tracked = self._tracked(node.target)
        if tracked is None:
            if isinstance(node.target, ast.Name) and (node.lineno, node.col_offset) in \
                    self.divisions:
                # x //= y: x = x // y, through the division helper.
                value = ast.BinOp(left=_name(node.target.id), op=node.op,
                                  right=self.visit(node.value))
                return ast.copy_location(ast.Assign(
                    targets=[ast.Name(node.target.id, ast.Store())],
                    value=self._division(value, node)), node)
            return self.generic_visit(node)
        slot, indices = tracked
        # X[i, j] op= v reads X[i, j] once and writes it once; the index is
        # evaluated once, before the value, as Python and CUDA do.
        statements: list[ast.stmt] = []
        temps = []
        for index in indices:
            temp = f"_tm_t{self.temp_counter}"
            self.temp_counter += 1
            statements.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(temp, ast.Store())], value=index), node))
            temps.append(temp)
        loaded = self._load(slot, [_name(t) for t in temps], node.target)
        combined = self._division(
            ast.BinOp(left=loaded, op=node.op, right=self.visit(node.value)), node)
        store = self._store(slot, [_name(t) for t in temps], combined, node.target)
        statements.append(ast.copy_location(ast.Expr(store), node))
        return statements

    def _division(self, node: ast.BinOp, position: ast.AST) -> ast.expr:
        """``a / b``, ``a // b``, ``a % b`` through a helper that counts
        divisions by zero (recording forms; ``node``'s operands already
        rewritten), located at ``position``."""
        site = self.divisions.get((position.lineno, position.col_offset))
        if site is None or type(node.op) not in _DIVISION_OPS:
            return node
        return ast.copy_location(_call(
            f"_tm_{_DIVISION_OPS[type(node.op)]}",
            [node.left, node.right, _int64(site), _name("_tm_divz"), _name("_tm_divz_thread"),
             _name("_tm_gtid")]), position)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        position = node
        node = self.generic_visit(node)
        return self._division(node, position)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        what = cuda_attribute(node.func, self.plan.module.aliases)
        if what and what.startswith("atomic.") and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.slots:
            op = what.split(".", 1)[1]
            if op not in CALLED_ATOMICS:
                # Only possible on shared / local arrays (the plan refuses other
                # atomics on parameters): left as written, unchecked.
                return self.generic_visit(node)
            slot = self.slots[node.args[0].id]
            args = list(node.args)
            if op == "compare_and_swap":  # (ary, old, val): cas on element 0 of a 1-D array
                if len(args) != 3 or node.keywords or slot.ndim != 1:
                    raise self.fail(f"cuda.{what} takes (array, old, value) on a 1-D array",
                                    node)
                op, args = "cas", [args[0], ast.copy_location(ast.Constant(0), node)] + args[1:]
            expected = 4 if op == "cas" else 3
            if len(args) != expected or node.keywords:
                raise self.fail(f"cuda.{what} takes (array, index, "
                                f"{'old, ' if op == 'cas' else ''}value)", node)
            index = args[1]
            indices = list(index.elts) if isinstance(index, ast.Tuple) else [index]
            if len(indices) != slot.ndim:
                raise self.fail(f"cuda.{what} on the {slot.ndim}-D array {slot.name!r} needs "
                                f"an index of {slot.ndim} (a literal tuple for 2-D)", node)
            indices = [self.visit(i) for i in indices]
            values = [self.visit(a) for a in args[2:]]
            return ast.copy_location(self._atomic(
                op, slot, indices, values if op == "cas" else values[0], node), node)
        return self.generic_visit(node)

    # Statements whose bodies hold further statements that may expand to lists.
    def _visit_block(self, node: ast.stmt) -> ast.stmt:
        for field in ("body", "orelse"):
            if hasattr(node, field):
                setattr(node, field, self.rewrite_body(getattr(node, field)))
        for field in ("test", "iter", "target"):
            if hasattr(node, field):
                setattr(node, field, self.visit(getattr(node, field)))
        return node

    visit_For = visit_While = visit_If = _visit_block


class CoordinateRewriter(ast.NodeTransformer):
    """Replace CUDA's thread coordinates by the emulated thread's parameters,
    and its scalar intrinsics by their lane forms (``_tm_popc``)."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.aliases = plan.module.aliases

    def fail(self, message: str, node: ast.AST) -> UnsupportedConstruct:
        return UnsupportedConstruct(f"kernel {self.plan.name!r}: {message}",
                                    self.plan.module.path, getattr(node, "lineno", None))

    def _value(self, what: str) -> ast.expr:
        value = _COORDINATES[what]
        return _name(value) if isinstance(value, str) else ast.Constant(value)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        what = cuda_attribute(node, self.aliases)
        if what is None:
            return self.generic_visit(node)
        if what in _COORDINATES:
            return ast.copy_location(self._value(what), node)
        if what == "laneid":
            lane = ast.parse("(_tm_tx + _tm_bdx * _tm_ty) % 32", mode="eval").body
            return ast.copy_location(lane, node)
        if what.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
            raise self.fail(f"use cuda.{what.split('.')[0]}.x/.y/.z directly", node)
        return self.generic_visit(node)

    visit_Name = visit_Attribute

    def visit_Call(self, node: ast.Call) -> ast.expr:
        what = cuda_attribute(node.func, self.aliases)
        if what in LOWERED_NAMES:
            # A scalar intrinsic: one call of its lane form, which each tier
            # emits as its own (intrinsics.py).
            arity = INTRINSICS[what].arity
            if node.keywords or len(node.args) != arity:
                raise self.fail(f"cuda.{what}() takes {arity} argument{'s' if arity > 1 else ''}"
                                ", by position", node)
            node = self.generic_visit(node)
            return ast.copy_location(ast.Call(func=_name(LOWERED_NAMES[what]),
                                              args=node.args, keywords=[]), node)
        if what not in ("grid", "gridsize"):
            return self.generic_visit(node)
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) \
                or node.args[0].value not in (1, 2):
            raise self.fail(f"cuda.{what}() takes a literal 1 or 2 here", node)
        ndim = node.args[0].value
        if what == "grid":
            parts = ["(_tm_bx * _tm_bdx + _tm_tx)", "(_tm_by * _tm_bdy + _tm_ty)"]
        else:
            parts = ["(_tm_gdx * _tm_bdx)", "(_tm_gdy * _tm_bdy)"]
        text = parts[0] if ndim == 1 else f"({parts[0]}, {parts[1]})"
        return ast.copy_location(ast.parse(text, mode="eval").body, node)
