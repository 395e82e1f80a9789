"""Derive the CPU emulation: a kernel's block run in lockstep.

All threads (lanes) of a block advance together, statement by statement,
under an active mask, as a GPU's warps do with structured control flow
(Stratton, Stone and Hwu, "MCUDA", LCPC 2008; whole-function vectorisation as
in ISPC).  From the kernel's own syntax tree this writes a numba function
that runs one block:

* every local variable becomes a vector with one entry per lane (its type
  from numba, see ``local_types.py``); shared arrays are the block's, local
  arrays one per lane;
* a simple statement runs for every active lane before the next statement
  starts (lanes in order; in record mode warp by warp, so that each warp's
  request to memory is gathered and measured exactly);
* ``if`` splits the mask, and runs each side only when some lane takes it;
* a loop runs while any lane is still inside; ``break``, ``continue`` and
  ``return`` retire lanes from the masks;
* ``cuda.syncthreads()`` is where every live lane must arrive: in record mode
  a barrier that some threads of the block do not reach is recorded, and
  each barrier starts a new interval (epoch) for the shared-memory race check.

Masks: ``_tm_M[d]`` is the mask at nesting depth d (0: lanes that have not
returned); ``_tm_C[d]`` the condition of the ``if`` at depth d; ``_tm_L[k]``
the lanes still in loop k; ``_tm_I[3k:3k+3]`` its counters (current, stop,
step).  Lanes of a block are numbered as threads: ``thread = ty * bdx + tx``.

What cannot be placed soundly is refused with its line
(:class:`~kernels.errors.EmulationUnsupported`), and the run goes to the
simulator instead.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

import numpy as np

from ..errors import EmulationUnsupported
from ..records import reads_flat_param
from .emitter import OperationEmitter
from .local_types import VALUE_BARRIERS
from .lowering import (
    Barrier,
    Exit,
    ForRange,
    LaneVariable,
    Leave,
    LockstepLayout,
    LoweredKernel,
    Operation,
    Simple,
    Split,
    WhileLoop,
    recording_params,
)
from .transform import AccessSite, written_arrays
from .warp_ops import MATCH, SHUFFLES, placed_operation

_BLOCK_SCALARS = ("_tm_bx", "_tm_by", "_tm_bdx", "_tm_bdy", "_tm_gdx", "_tm_gdy", "_tm_block",
                  "_tm_lane0", "_tm_lane1")


@dataclass(frozen=True)
class LockstepCode:
    """The generated functions of one mode, line by line with the kernel's
    source line of each (None for lines of ThreadMap's own)."""

    lines: tuple[tuple[str, int | None], ...]
    layout: LockstepLayout


def lockstep_code(lowered: LoweredKernel, mode: str) -> LockstepCode:
    """The block function and driver of a lowered kernel for ``mode``
    ("record" or "plain")."""
    return _Writer(lowered, mode).write()


def _name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


class _Writer(OperationEmitter):
    def __init__(self, lowered: LoweredKernel, mode: str):
        super().__init__()
        self.lowered = lowered
        self.plan = plan = lowered.plan
        self.mode = mode
        self.record = mode == "record"
        self.aliases = plan.module.aliases
        self.operations = lowered.operations
        self.sites = lowered.sites
        self.access = lowered.access_rewriter(mode)
        self.coordinates = lowered.coordinate_rewriter()
        self.block_arrays = lowered.block_arrays
        self.variables = lowered.variables
        self.lanes = _LaneRenamer(self.variables, lowered.local_arrays)
        self.item = {a.name: np.dtype(a.dtype).itemsize for a in self.block_arrays}
        self.round_sites = 0

    def write(self) -> LockstepCode:
        plan = self.plan
        body_start = len(self.lines)
        self._statements(self.operations, 0, [], 1)
        body = self.lines[body_start:]
        del self.lines[body_start:]
        layout = self.lowered.layout(self.round_sites)
        params = list(plan.kernel.params)
        if self.record:
            params += recording_params(len(plan.inputs), len(written_arrays(plan)))
        params += list(layout.workspace) + list(layout.array_params(self.mode))
        block_name = f"{plan.name}__tm_block_{self.mode}"
        returned = "_tm_epoch" if self.record else "0"
        self.emit(0, "@_tm_njit(**_TM_OPTS)")
        self.emit(0, f"def {block_name}({', '.join(params + list(_BLOCK_SCALARS))}, _tm_epoch):")
        self.emit(1, "_tm_tpb = _tm_bdx * _tm_bdy")
        self.emit(1, "_tm_nw = (_tm_tpb + 31) // 32")
        self.emit(1, "_tm_g0 = _tm_block * _tm_tpb")
        self.emit(1, "_tm_wg0 = _tm_block * _tm_nw")
        self.emit(1, "_tm_epoch0 = _tm_epoch")
        self.emit(1, "_tm_w0 = _tm_lane0 // 32")
        self.emit(1, "_tm_w1 = (_tm_lane1 + 31) // 32")
        self.emit(1, "for _tm_l in range(_tm_lane0, _tm_lane1):")
        self.emit(2, "_tm_M[0, _tm_l] = True")
        self.emit(2, "_tm_ws[_tm_l] = 0")
        for slot in range(self.round_sites):
            self.emit(1, f"_tm_rb{slot} = _tm_RB[{slot}]")
        self.lines.extend(body)
        self.emit(1, f"return {returned}")
        self.emit(0, "")
        driver = layout.driver_params(plan, self.mode)
        self.emit(0, "@_tm_njit(**_TM_OPTS)")
        self.emit(0, f"def _tm_run_{self.mode}({', '.join(driver)}):")
        self.emit(1, "# Units of work: warps when the warps of a block are independent (no")
        self.emit(1, "# barrier, no shared array), else whole blocks; see LockstepLayout.")
        self.emit(1, "_tm_tpb = _tm_bdx * _tm_bdy")
        self.emit(1, f"_tm_parts = (_tm_tpb + 31) // 32 if {layout.warpwise} else 1")
        self.emit(1, "for _tm_u in range(_tm_u0, _tm_u1):")
        self.emit(2, "if _tm_ctl[0] != 0:")
        self.emit(3, "return _tm_epoch")
        self.emit(2, "_tm_block = _tm_u // _tm_parts")
        self.emit(2, "_tm_part = _tm_u - _tm_block * _tm_parts")
        self.emit(2, "_tm_lane0 = _tm_part * 32 if _tm_parts > 1 else 0")
        self.emit(2, "_tm_lane1 = min(_tm_lane0 + 32, _tm_tpb) if _tm_parts > 1 else _tm_tpb")
        self.emit(2, "_tm_by = _tm_block // _tm_gdx")
        self.emit(2, "_tm_bx = _tm_block - _tm_by * _tm_gdx")
        for array in self.block_arrays:
            # A shared array is the block's; a local array, its lanes' rows.
            size = "1" if array.kind == "shared" else str(int(np.prod(array.shape)))
            first, last = (("0", f"{array.flat_param}.size") if array.kind == "shared" else
                           (f"_tm_lane0 * {size}", f"_tm_lane1 * {size}"))
            self.emit(2, f"for _tm_p in range({first}, {last}):")
            self.emit(3, f"{array.flat_param}[_tm_p] = {array.poison}")
        call = ", ".join(params + list(_BLOCK_SCALARS) + ["_tm_epoch"])
        self.emit(2, f"_tm_epoch = {block_name}({call}) + 1")
        self.emit(1, "return _tm_epoch")
        return LockstepCode(tuple(self.lines), layout)

    # -- statements --------------------------------------------------------------------

    def _statements(self, body: tuple[Operation, ...], depth: int,
                    loops: list[tuple[int, int]], indent: int) -> None:
        if self.record:
            super()._statements(body, depth, loops, indent)
            return
        start = len(self.lines)
        # Fission at barriers (MCUDA): the plain run needs lockstep only
        # where a barrier orders the threads, so a stretch of statements
        # without barriers or early exits runs thread by thread, its
        # locals in registers.  (The recording run stays in lockstep
        # throughout: its warp requests must be the warps' real ones.)
        stretch: list[ast.stmt] = []
        for op in body:
            if self._thread_by_thread(op.stmt):
                stretch.append(op.stmt)
                continue
            self._per_thread(stretch, depth, indent)
            stretch = []
            self._statement(op, depth, loops, indent)
        self._per_thread(stretch, depth, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass")

    def _thread_by_thread(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` can run for one thread at a time: no barrier in
        it, and no exit from it (return, or break / continue of a loop
        outside it)."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return):
                return False
            if isinstance(node, ast.stmt) and self.lowered.barrier_call(node) in (
                    {"syncthreads"} | VALUE_BARRIERS):
                return False
            if isinstance(node, ast.stmt) and placed_operation(node, self.aliases):
                return False  # (an exchange among the lanes of a warp)
        return not _escapes(stmt, inside_loop=False)

    def _per_thread(self, stretch: list[ast.stmt], depth: int, indent: int) -> None:
        """Run ``stretch`` for each active lane in turn, locals as scalars."""
        body: list[tuple[str, int]] = []
        for stmt in stretch:
            if self.lowered.is_declaration(stmt) or self.lowered.barrier_call(stmt) is not None or (
                    isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                continue
            rewritten = self.access.rewrite_body([copy.deepcopy(stmt)])
            self.access.take_sites()
            for new in rewritten:
                new = ast.fix_missing_locations(self.coordinates.visit(new))
                body.extend(_unparse_with_lines(new))
        if not body:
            return
        names = _names_in(body)
        used = [v for v in self.variables.values() if v.name in names]
        line = body[0][1]
        self.emit(indent, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
        self.emit(indent + 1, f"if _tm_M[{depth}, _tm_l]:", line)
        for text in self._prelude([t for t, _ in body]):
            self.emit(indent + 2, text, line)
        self._locals_in(used, indent + 2, line)
        for array in self.block_arrays:
            if array.kind == "local" and array.name in names:
                self.emit(indent + 2, f"{array.name} = {array.param}[_tm_l]", line)
        for text, source in body:
            self.emit(indent + 2, text, source)
        self._locals_out(used, indent + 2, line)

    def _locals_in(self, used: list[LaneVariable], indent: int, line: int) -> None:
        """Lane ``_tm_l``'s entries of ``used`` into locals of the same names."""
        for variable in used:
            self.emit(indent, f"{variable.name} = {_entries(variable)}", line)

    def _locals_out(self, used: list[LaneVariable], indent: int, line: int) -> None:
        """The locals back into lane ``_tm_l``'s entries."""
        for variable in used:
            if variable.width:
                for i in range(variable.width):
                    self.emit(indent, f"_tm_V_{variable.dtype}[{variable.row + i}, _tm_l] = "
                                      f"{variable.name}[{i}]", line)
            else:
                self.emit(indent, f"_tm_V_{variable.dtype}[{variable.row}, _tm_l] = "
                                  f"{variable.name}", line)

    # -- expressions -------------------------------------------------------------------

    def _lane_statements(self, statements: list[ast.stmt]) -> list[str]:
        """Kernel statements, their accesses checked, as lines for one lane."""
        return self._unparsed(statements, self.lanes.statement)

    def _expression(self, expr: ast.expr) -> tuple[str, list[int]]:
        """An expression of the kernel, for one lane, and the sites it touches."""
        rewritten = self.access.visit(copy.deepcopy(expr))
        rewritten = self.coordinates.visit(rewritten)
        rewritten = self.lanes.visit(rewritten)
        return ast.unparse(ast.fix_missing_locations(rewritten)), self.access.take_sites()

    def _prelude(self, lines: list[str]) -> list[str]:
        """Lane coordinates the lines use, read at the top of the lane loop."""
        text = "\n".join(lines)
        prelude = []
        if re.search(r"\b_tm_gtid\b", text):
            prelude.append("_tm_gtid = _tm_g0 + _tm_l")
        if re.search(r"\b_tm_tx\b", text):
            prelude.append("_tm_tx = _tm_LX[_tm_l]")
        if re.search(r"\b_tm_ty\b", text):
            prelude.append("_tm_ty = _tm_LY[_tm_l]")
        return prelude

    def _analysed(self, sites: list[int]) -> list[AccessSite]:
        """Sites whose warp requests are measured (global and shared memory)."""
        seen = []
        for number in sites:
            site = self.sites[number]
            if site.space != "local" and site not in seen:
                seen.append(site)
        return seen

    def _flushes(self, sites: list[AccessSite], indent: int,
                 rounds: dict[int, str] | None = None) -> None:
        """Flush each site's warp request; ``rounds`` (global sites only) names
        where a site's requests are when not in ``_tm_req``: the rounds of a
        loop recorded lane by lane (``"_tm_rb0, _tm_most"``), flushed at once."""
        for site in sites:
            if site.space == "shared" and self.item[site.array] == 4:
                self.emit(indent, f"_tm_flush_shared_request_words(_tm_req, _tm_i64({site.site}), "
                                  "_tm_accw, _tm_wg0 + _tm_w)")
                continue
            if site.space == "shared":
                self.emit(indent, f"_tm_flush_shared_request(_tm_req, _tm_i64({site.site}), "
                                  f"_tm_i64({self.item[site.array]}), _tm_accw, _tm_wg0 + _tm_w)")
                continue
            # An input's loads also count its reads here.
            # (each input's by its place among the plan's inputs: A, B, or a
            # described kernel's any number)
            reads = site.kind == "load" and site.array in self.plan.inputs
            function = "_tm_flush_input_request" if reads else "_tm_flush_global_request"
            counts = f", {reads_flat_param(self.plan.inputs.index(site.array))}" if reads else ""
            where = ""
            if rounds is not None:
                function += "_rounds"
                where = f"{rounds[site.site]}, "
            self.emit(indent, f"{function}({where}_tm_req, _tm_i64({site.site}), _tm_accw, "
                              f"_tm_wg0 + _tm_w{counts})")

    def _lanes(self, indent: int, mask: str, body: list[str], sites: list[int], line: int,
               by_warp: bool = False, warp_head: list[str] = (), warp_tail: list[str] = (),
               otherwise: list[str] = ()) -> None:
        """A loop over the lanes for which ``mask`` holds, running ``body``;
        warp by warp when there are requests to measure (or ``by_warp``), with
        ``warp_head`` / ``warp_tail`` around each warp."""
        analysed = self._analysed(sites) if self.record else []
        by_warp = by_warp or bool(analysed)
        lines = self._prelude(body) + body
        if by_warp:
            self.emit(indent, "for _tm_w in range(_tm_w0, _tm_w1):", line)
            for text in warp_head:
                self.emit(indent + 1, text, line)
            self.emit(indent + 1, "for _tm_l in range(_tm_w * 32, min(_tm_w * 32 + 32, _tm_lane1)):",
                      line)
            inner = indent + 2
        else:
            self.emit(indent, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
            inner = indent + 1
        self.emit(inner, f"if {mask}:", line)
        for text in lines:
            self.emit(inner + 1, text, line)
        if otherwise:
            self.emit(inner, "else:", line)
            for text in otherwise:
                self.emit(inner + 1, text, line)
        if by_warp:
            self._flushes(analysed, indent + 1)
            for text in warp_tail:
                self.emit(indent + 1, text, line)

    def _simple(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        statements = self.access.rewrite_body([copy.deepcopy(stmt)])
        sites = self.access.take_sites()
        self._lanes(indent, f"_tm_M[{depth}, _tm_l]", self._lane_statements(statements), sites,
                    stmt.lineno)

    def _if(self, op: Split, depth: int, loops, indent: int) -> None:
        stmt, site = op.stmt, op.site.site
        test, sites = self._expression(stmt.test)
        inner = depth + 1
        then, other = f"_tm_any_t{depth}", f"_tm_any_e{depth}"
        line = stmt.lineno
        self.emit(indent, f"{then} = False", line)
        self.emit(indent, f"{other} = False", line)
        body = [f"_tm_c = bool({test})", f"_tm_C[{depth}, _tm_l] = _tm_c",
                f"_tm_M[{inner}, _tm_l] = _tm_c"]
        if self.record:
            body += ["_tm_na += 1", "if _tm_c:", "    _tm_nt += 1"]
            self._lanes(indent, f"_tm_M[{depth}, _tm_l]", body, sites, line, by_warp=True,
                        warp_head=["_tm_na = _tm_i64(0)", "_tm_nt = _tm_i64(0)"],
                        warp_tail=[_branch_record(site),
                                   "if _tm_nt > 0:", f"    {then} = True",
                                   "if _tm_nt < _tm_na:", f"    {other} = True"],
                        otherwise=[f"_tm_M[{inner}, _tm_l] = False"])
        else:
            body += ["if _tm_c:", f"    {then} = True", "else:", f"    {other} = True"]
            self._lanes(indent, f"_tm_M[{depth}, _tm_l]", body, sites, line,
                        otherwise=[f"_tm_M[{inner}, _tm_l] = False"])
        self.emit(indent, f"if {then}:", line)
        self._statements(op.body, inner, loops, indent + 1)
        if op.orelse:
            self.emit(indent, f"if {other}:", line)
            self.emit(indent + 1, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
            self.emit(indent + 2, f"_tm_M[{inner}, _tm_l] = _tm_M[{depth}, _tm_l] and not "
                                  f"_tm_C[{depth}, _tm_l]", line)
            self._statements(op.orelse, inner, loops, indent + 1)

    def _loop_lanes(self, indent: int, k: int, depth: int, site: int, line: int,
                    test: list[str], sites: list[int], go_on: list[str] = (),
                    leave: bool = True) -> None:
        """One test of loop k for every lane still in it (``test``: lines that
        leave the lane's verdict in ``_tm_c``); the lanes that go on run
        ``go_on``.  Leaves the Python loop when no lane goes on."""
        inner = depth + 1
        flag = f"_tm_any{depth}"
        self.emit(indent, "if _tm_ctl[0] != 0:", line)
        self.emit(indent + 1, "return " + ("_tm_epoch" if self.record else "0"), line)
        self.emit(indent, f"{flag} = False", line)
        on = list(go_on) + [f"_tm_M[{inner}, _tm_l] = True"] + (
            ["_tm_nt += 1"] if self.record else [f"{flag} = True"])
        off = [f"_tm_L[{k}, _tm_l] = False", f"_tm_M[{inner}, _tm_l] = False"]
        body = (["_tm_na += 1"] if self.record else []) + list(test) + ["if _tm_c:"] + [
            "    " + t for t in on] + ["else:"] + ["    " + t for t in off]
        if self.record:
            self._lanes(indent, f"_tm_L[{k}, _tm_l]", body, sites, line, by_warp=True,
                        warp_head=["_tm_na = _tm_i64(0)", "_tm_nt = _tm_i64(0)"],
                        warp_tail=[_branch_record(site), "if _tm_nt > 0:", f"    {flag} = True"],
                        otherwise=[f"_tm_M[{inner}, _tm_l] = False"])
        else:
            self._lanes(indent, f"_tm_L[{k}, _tm_l]", body, sites, line,
                        otherwise=[f"_tm_M[{inner}, _tm_l] = False"])
        if leave:
            self.emit(indent, f"if not {flag}:", line)
            self.emit(indent + 1, "break", line)

    def _for(self, op: ForRange, depth: int, loops, indent: int) -> None:
        stmt, loop = op.stmt, op.loop
        k, site, target = loop.number, loop.site, loop.variable.name
        start, stop, step, literal_step = loop.start, loop.stop, loop.step, loop.literal_step
        inner = depth + 1
        line = stmt.lineno
        cur, end, inc = f"_tm_I[{3 * k}, _tm_l]", f"_tm_I[{3 * k + 1}, _tm_l]", \
            f"_tm_I[{3 * k + 2}, _tm_l]"
        texts, sites = [], []
        for value in (start, stop, step):
            text, touched = self._expression(value)
            texts.append(text)
            sites += touched
        self.emit(indent, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
        self.emit(indent + 1, f"_tm_L[{k}, _tm_l] = _tm_M[{depth}, _tm_l]", line)
        init = [f"{cur} = {texts[0]}", f"{end} = {texts[1]}"]
        if literal_step is None:
            init.append(f"{inc} = {texts[2]}")
        self._lanes(indent, f"_tm_M[{depth}, _tm_l]", init, sites, line)
        if literal_step is None:
            test = (f"({inc} > 0 and {cur} < {end}) or ({inc} < 0 and {cur} > {end})")
            advance = f"{cur} += {inc}"
        else:
            test = f"{cur} {'<' if literal_step > 0 else '>'} {end}"
            advance = f"{cur} += {literal_step}" if literal_step else f"{cur} = {end}"
        store = self.lanes.statement(ast.Assign(
            targets=[ast.Name(target, ast.Store())], value=ast.Name("_tm_i", ast.Load())))
        # A lane that goes on takes the counter's value, then the counter
        # advances (the body may assign the loop variable, as Python allows).
        go_on = [f"_tm_i = {cur}", ast.unparse(ast.fix_missing_locations(store[0])), advance]
        if self.record and all(isinstance(b, Simple) for b in op.body):  # (straight-line)
            if LANE_BY_LANE and self._lane_by_lane_for(stmt, k, depth, site, literal_step,
                                                       indent):
                return
            self._fused_for(op, k, depth, site, test, go_on, loops, indent)
            return
        self.emit(indent, "while True:", line)
        self._loop_lanes(indent + 1, k, depth, site, line, [f"_tm_c = {test}"], [], go_on)
        self._statements(op.body, inner, loops + [(k, inner)], indent + 1)

    def _fused_for(self, op: ForRange, k: int, depth: int, site: int, test: str,
                   go_on: list[str], loops, indent: int) -> None:
        """A range loop whose body is straight-line: each lane's test for the
        next iteration runs in the same pass as its last statement (the test
        touches only the lane's own counters, so no other lane can tell), which
        saves a pass over the block per iteration.  No lane leaves such a
        body early, so the lanes in the loop are the lanes running it."""
        inner = depth + 1
        line = op.line
        flag = f"_tm_any{depth}"
        first = f"_tm_first{k}"
        self.emit(indent, f"{first} = True", line)
        self.emit(indent, "while True:", line)
        self.emit(indent + 1, f"if {first}:", line)
        self.emit(indent + 2, f"{first} = False", line)
        self._loop_lanes(indent + 2, k, depth, site, line, [f"_tm_c = {test}"], [], go_on,
                         leave=False)
        self.emit(indent + 1, f"if not {flag}:", line)
        self.emit(indent + 2, "break", line)
        for b in op.body[:-1]:
            self._simple(b.stmt, inner, indent + 1)
        last = op.body[-1].stmt
        statements = self.access.rewrite_body([copy.deepcopy(last)])
        sites = self.access.take_sites()
        lines = self._lane_statements(statements)
        on = list(go_on) + ["_tm_nt += 1"]
        off = [f"_tm_L[{k}, _tm_l] = False", f"_tm_M[{inner}, _tm_l] = False"]
        body = lines + ["_tm_na += 1", f"_tm_c = {test}", "if _tm_c:"] + [
            "    " + t for t in on] + ["else:"] + ["    " + t for t in off]
        self.emit(indent + 1, "if _tm_ctl[0] != 0:", line)
        self.emit(indent + 2, "return _tm_epoch", line)
        self.emit(indent + 1, f"{flag} = False", line)
        self._lanes(indent + 1, f"_tm_L[{k}, _tm_l]", body, sites, last.lineno, by_warp=True,
                    warp_head=["_tm_na = _tm_i64(0)", "_tm_nt = _tm_i64(0)"],
                    warp_tail=[_branch_record(site), "if _tm_nt > 0:", f"    {flag} = True"])

    def _lane_by_lane_for(self, stmt: ast.For, k: int, depth: int, site: int,
                          literal_step: int | None, indent: int) -> bool:
        """Record a range loop whose body only computes (assignments whose
        accesses are loads from global memory) lane by lane instead of in
        lockstep, its locals in registers: each lane of a warp runs up to
        ``ROUNDS`` iterations and notes its loads' offsets by round, then the
        warp's requests and loop tests are measured round by round, as the
        lockstep would have met them.  The same figures: nothing in such a body
        can tell the order in which lanes run it (no lane stores, so no load
        sees another lane's write), and every figure recorded is a sum, a
        minimum or a maximum, or per thread in the thread's own order.  About
        twice as fast as lockstep: per iteration the lockstep reads and writes
        every local from memory.  False (nothing written) for other bodies."""
        statements = self.access.rewrite_body(copy.deepcopy(stmt.body))
        numbers = self.access.take_sites()
        sites = [self.sites[n] for n in numbers]
        if not all(s.kind == "load" and s.space == "global" for s in sites) or not all(
                isinstance(b, (ast.Assign, ast.AugAssign, ast.AnnAssign)) for b in stmt.body):
            return False
        names = {n.id for b in stmt.body for n in ast.walk(b) if isinstance(n, ast.Name)}
        if any(a.name in names for a in self.block_arrays) or any(
                self.variables[n].width for n in names if n in self.variables):
            return False
        for call in (n for b in stmt.body for n in ast.walk(b) if isinstance(n, ast.Call)):
            # Pure functions only: a call could print, or touch memory unseen.
            func = call.func
            pure = (isinstance(func, ast.Name) and func.id in _PURE_BUILTINS) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and self.aliases.get(func.value.id, func.value.id) in ("math", "numpy", "cmath"))
            if not pure:
                return False
        slots = {number: slot for slot, number in enumerate(dict.fromkeys(numbers))}
        self.round_sites = max(self.round_sites, len(slots))
        body: list[tuple[str, int]] = []
        for new in statements:
            new = _RoundNotes(slots).visit(self.coordinates.visit(new))
            body.extend(_unparse_with_lines(ast.fix_missing_locations(new)))
        target = stmt.target.id
        inner = depth + 1
        line = stmt.lineno
        used = [v for v in self.variables.values() if v.name in _names_in(body) | {target}]
        if literal_step is None:
            test = "(_tm_inc > 0 and _tm_cur < _tm_end) or (_tm_inc < 0 and _tm_cur > _tm_end)"
            advance = "_tm_cur += _tm_inc"
        else:
            test = f"_tm_cur {'<' if literal_step > 0 else '>'} _tm_end"
            advance = f"_tm_cur += {literal_step}" if literal_step else "_tm_cur = _tm_end"
        cur, end, inc = (f"_tm_I[{3 * k + i}, _tm_l]" for i in range(3))
        emit = self.emit
        emit(indent, "for _tm_w in range(_tm_w0, _tm_w1):", line)
        emit(indent + 1, "_tm_lw0 = _tm_w * 32", line)
        emit(indent + 1, "_tm_lw1 = min(_tm_lw0 + 32, _tm_lane1)", line)
        emit(indent + 1, "while True:", line)
        i = indent + 2
        emit(i, "if _tm_ctl[0] != 0:", line)
        emit(i + 1, "return _tm_epoch", line)
        emit(i, "_tm_live = False", line)
        emit(i, "_tm_most = 0", line)
        emit(i, "_tm_in = 0", line)
        emit(i, f"for _tm_q in range({ROUNDS + 1}):", line)
        emit(i + 1, "_tm_H[0, _tm_q] = 0", line)
        emit(i + 1, "_tm_H[1, _tm_q] = 0", line)
        emit(i, "for _tm_l in range(_tm_lw0, _tm_lw1):", line)
        emit(i + 1, f"if not _tm_L[{k}, _tm_l]:", line)
        emit(i + 2, "continue", line)
        emit(i + 1, "_tm_in += 1", line)
        for text in self._prelude([t for t, _ in body]):
            emit(i + 1, text, line)
        self._locals_in(used, i + 1, line)
        emit(i + 1, f"_tm_cur = {cur}", line)
        emit(i + 1, f"_tm_end = {end}", line)
        if literal_step is None:
            emit(i + 1, f"_tm_inc = {inc}", line)
        emit(i + 1, "_tm_r = 0", line)
        emit(i + 1, "_tm_out = False", line)
        emit(i + 1, f"while _tm_r < {ROUNDS}:", line)
        emit(i + 2, f"if not ({test}):", line)
        emit(i + 3, "_tm_out = True", line)
        emit(i + 3, "break", line)
        emit(i + 2, f"{target} = _tm_cur", line)
        emit(i + 2, advance, line)
        for text, source in body:
            emit(i + 2, text, source)
        emit(i + 2, "_tm_r += 1", line)
        self._locals_out(used, i + 1, line)
        emit(i + 1, f"{cur} = _tm_cur", line)
        emit(i + 1, "_tm_H[0, _tm_r] += 1", line)
        emit(i + 1, "if _tm_out:", line)
        emit(i + 2, "_tm_H[1, _tm_r] += 1", line)
        emit(i + 2, f"_tm_L[{k}, _tm_l] = False", line)
        emit(i + 2, f"_tm_M[{inner}, _tm_l] = False", line)
        emit(i + 1, "else:", line)
        emit(i + 2, "_tm_live = True", line)
        emit(i + 1, "if _tm_r > _tm_most:", line)
        emit(i + 2, "_tm_most = _tm_r", line)
        # The warp's rounds: every body round's requests, then each test, where
        # the lanes that ran more than r bodies go on, and those that ran r and
        # left arrived too (_tm_H: lanes by bodies run, and those that left).
        self._flushes(self._analysed(list(slots)), i,
                      {number: f"_tm_rb{slot}, _tm_most" for number, slot in slots.items()})
        emit(i, "_tm_nt = _tm_i64(_tm_in)", line)
        emit(i, "for _tm_r in range(_tm_most + 1):", line)
        emit(i + 1, "_tm_nt -= _tm_H[0, _tm_r]", line)
        emit(i + 1, "_tm_na = _tm_nt + _tm_H[1, _tm_r]", line)
        emit(i + 1, _branch_record(site), line)
        emit(i, "if not _tm_live:", line)
        emit(i + 1, "break", line)
        return True

    def _while(self, op: WhileLoop, depth: int, loops, indent: int) -> None:
        stmt, k, site = op.stmt, op.number, op.site
        inner = depth + 1
        line = stmt.lineno
        self.emit(indent, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
        self.emit(indent + 1, f"_tm_L[{k}, _tm_l] = _tm_M[{depth}, _tm_l]", line)
        self.emit(indent, "while True:", line)
        test, sites = self._expression(stmt.test)
        self._loop_lanes(indent + 1, k, depth, site, line, [f"_tm_c = bool({test})"], sites)
        self._statements(op.body, inner, loops + [(k, inner)], indent + 1)

    def _retire(self, depths: range, loops: list[int]) -> list[str]:
        return [f"_tm_M[{d}, _tm_l] = False" for d in depths] + [
            f"_tm_L[{k}, _tm_l] = False" for k in loops]

    def _return(self, op: Exit, depth: int, loops, indent: int) -> None:
        site = op.site
        retire = self._retire(range(depth + 1), [k for k, _ in loops])
        line = op.line
        if self.record:
            # Lanes of the warp still alive (arrived) and those returning (taken).
            self.emit(indent, "for _tm_w in range(_tm_w0, _tm_w1):", line)
            self.emit(indent + 1, "_tm_na = _tm_i64(0)", line)
            self.emit(indent + 1, "_tm_nt = _tm_i64(0)", line)
            self.emit(indent + 1, "for _tm_l in range(_tm_w * 32, min(_tm_w * 32 + 32, _tm_lane1)):",
                      line)
            self.emit(indent + 2, "if _tm_M[0, _tm_l]:", line)
            self.emit(indent + 3, "_tm_na += 1", line)
            self.emit(indent + 2, f"if _tm_M[{depth}, _tm_l]:", line)
            self.emit(indent + 3, "_tm_nt += 1", line)
            for text in retire:
                self.emit(indent + 3, text, line)
            # A warp none of whose lanes is here does not run the return (the
            # unit, a block, may have other warps that do).
            self.emit(indent + 1, "if _tm_nt > 0:", line)
            self.emit(indent + 2, _branch_record(site), line)
        else:
            self._lanes(indent, f"_tm_M[{depth}, _tm_l]", retire, [], line)

    def _leave(self, op: Leave, depth: int, loops, indent: int) -> None:
        k, body_depth = loops[-1]
        retire = self._retire(range(body_depth, depth + 1), [k] if op.broke else [])
        self._lanes(indent, f"_tm_M[{depth}, _tm_l]", retire, [], op.line)

    _CONTROL = {Split: _if, ForRange: _for, WhileLoop: _while, Exit: _return, Leave: _leave}

    def _barrier(self, op: Barrier, depth: int, indent: int) -> None:
        stmt, what, site = op.stmt, op.what, op.site
        if site is None:
            return  # a fence: memory is sequentially consistent here
        line = op.line
        if what in VALUE_BARRIERS:
            predicate, sites = self._expression(stmt.value.args[0])
            self.emit(indent, "_tm_cnt = _tm_i64(0)", line)
            self._lanes(indent, f"_tm_M[{depth}, _tm_l]",
                        [f"if {predicate}:", "    _tm_cnt += 1"], sites, line)
        self.emit(indent, "_tm_na = _tm_i64(0)", line)
        self.emit(indent, "_tm_first = _tm_i64(-1)", line)
        self.emit(indent, "for _tm_l in range(_tm_lane0, _tm_lane1):", line)
        self.emit(indent + 1, f"if _tm_M[{depth}, _tm_l]:", line)
        self.emit(indent + 2, "_tm_na += 1", line)
        self.emit(indent + 1, "elif _tm_first < 0:", line)
        self.emit(indent + 2, "_tm_first = _tm_l", line)
        if self.record:
            self.emit(indent, "if 0 < _tm_na < _tm_tpb:", line)
            self.emit(indent + 1, f"_tm_record_missed_barrier(_tm_bar, _tm_i64({site}), _tm_block, "
                                  "_tm_tpb, _tm_na, _tm_first)", line)
            self.emit(indent, "_tm_epoch += 1", line)
        if what in VALUE_BARRIERS:
            value = {"syncthreads_count": "_tm_cnt",
                     "syncthreads_and": "1 if _tm_cnt == _tm_na else 0",
                     "syncthreads_or": "1 if _tm_cnt > 0 else 0"}[what]
            store = self.lanes.statement(ast.Assign(
                targets=[ast.Name(stmt.targets[0].id, ast.Store())],
                value=ast.Name("_tm_val", ast.Load())))
            self.emit(indent, f"_tm_val = {value}", line)
            self._lanes(indent, f"_tm_M[{depth}, _tm_l]",
                        [ast.unparse(ast.fix_missing_locations(s)) for s in store], [], line)

    def _warp(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        """A warp operation placed by warp_ops.py (``name = cuda.op(names)``,
        or ``cuda.syncwarp(name)``): each warp's active lanes at this point
        exchange their arguments, which every lane computed before.  In record
        mode, a lane's call that names in its mask a lane of the warp that has
        not exited but is not here (or leaves out the calling lane itself), and
        a shuffle that reads a lane not taking part (inactive, or outside the
        mask), are noted in ``_tm_warp``: on a GPU both give undefined results
        (the emulation then gives the lane its own value)."""
        what = placed_operation(stmt, self.aliases)
        call = stmt.value
        line = stmt.lineno

        def entry(node: ast.expr, lane: str) -> str:
            variable = self.variables[node.id]
            return f"_tm_V_{variable.dtype}[{variable.row}, {lane}]"

        self.emit(indent, "for _tm_w in range(_tm_w0, _tm_w1):", line)
        body = indent + 1
        self.emit(body, "_tm_wl = _tm_w * 32", line)
        self.emit(body, "_tm_wh = min(_tm_wl + 32, _tm_lane1)", line)
        self.emit(body, "_tm_act = _tm_i64(0)", line)
        self.emit(body, "_tm_live = _tm_i64(0)", line)
        self.emit(body, "for _tm_l in range(_tm_wl, _tm_wh):", line)
        self.emit(body + 1, f"if _tm_M[{depth}, _tm_l]:", line)
        self.emit(body + 2, "_tm_act |= _tm_i64(1) << (_tm_l - _tm_wl)", line)
        self.emit(body + 1, "if _tm_M[0, _tm_l]:", line)
        self.emit(body + 2, "_tm_live |= _tm_i64(1) << (_tm_l - _tm_wl)", line)
        self.emit(body, "if _tm_act == 0:", line)
        self.emit(body + 1, "continue", line)
        self.emit(body, "for _tm_l in range(_tm_wl, _tm_wh):", line)
        self.emit(body + 1, f"if not _tm_M[{depth}, _tm_l]:", line)
        self.emit(body + 2, "continue", line)
        lane = body + 1
        self.emit(lane, "_tm_j = _tm_l - _tm_wl", line)
        if call.args:
            self.emit(lane, f"_tm_mk = _tm_i64({entry(call.args[0], '_tm_l')}) & 0xFFFFFFFF",
                      line)
            if self.record:
                self.emit(lane, "if (_tm_mk & _tm_live & ~_tm_act) != 0 or "
                                "((_tm_mk >> _tm_j) & 1) == 0:", line)
                self.emit(lane + 1, f"_tm_record_warp_hazard(_tm_warp, 1, _tm_block, _tm_l, "
                                    f"{line}, _tm_mk, _tm_act, _tm_live)", line)
        if what == "syncwarp":
            if self.record:  # (orders the warp's shared accesses: helper _tm_syncwarp_between)
                self.emit(lane, "_tm_ws[_tm_l] += 1", line)
            return
        result = entry(stmt.targets[0], "_tm_l")
        if what in SHUFFLES:
            mode = SHUFFLES[what]
            self.emit(lane, f"_tm_b = _tm_i64({entry(call.args[2], '_tm_l')}) & 31", line)
            source = {"idx": "_tm_b", "up": "_tm_j - _tm_b", "down": "_tm_j + _tm_b",
                      "bfly": "_tm_j ^ _tm_b"}[mode]
            self.emit(lane, f"_tm_s = {source}", line)
            if mode in ("up", "down"):  # (past the warp's edge: the lane's own value)
                self.emit(lane, "if _tm_s < 0 or _tm_s > 31:", line)
                self.emit(lane + 1, "_tm_s = _tm_j", line)
            self.emit(lane, "if ((_tm_act >> _tm_s) & 1) == 0 or ((_tm_mk >> _tm_s) & 1) == 0:",
                      line)
            if self.record:
                self.emit(lane + 1, f"_tm_record_warp_hazard(_tm_warp, 0, _tm_block, _tm_l, "
                                    f"{line}, _tm_s, _tm_mk, _tm_act)", line)
            self.emit(lane + 1, "_tm_s = _tm_j", line)
            self.emit(lane, f"{result} = {entry(call.args[1], '_tm_wl + _tm_s')}", line)
            return
        if what == "activemask":
            self.emit(lane, f"{result} = _tm_act", line)
            return
        if what == "lanemask_lt":
            self.emit(lane, f"{result} = (_tm_i64(1) << _tm_j) - 1", line)
            return
        # A vote (or a match): over the lanes of the mask that are here.
        self.emit(lane, "_tm_in = _tm_mk & _tm_act", line)
        self.emit(lane, "_tm_yes = _tm_i64(0)", line)
        self.emit(lane, "for _tm_s in range(_tm_wh - _tm_wl):", line)
        other = entry(call.args[1], "_tm_wl + _tm_s")
        test = f"{other} == {entry(call.args[1], '_tm_l')}" if what == MATCH else f"{other} != 0"
        self.emit(lane + 1, f"if ((_tm_in >> _tm_s) & 1) != 0 and {test}:", line)
        self.emit(lane + 2, "_tm_yes |= _tm_i64(1) << _tm_s", line)
        if what == MATCH:
            self.emit(lane, f"{result} = _tm_yes", line)
            return
        value = {"ballot_sync": "_tm_yes", "any_sync": "_tm_yes != 0",
                 "all_sync": "_tm_yes == _tm_in",
                 "eq_sync": "_tm_yes == 0 or _tm_yes == _tm_in"}[what]
        self.emit(lane, f"{result} = {value}", line)


#: Whether load-only loop bodies are recorded lane by lane (False: lockstep
#: throughout; the tests compare the two).
LANE_BY_LANE = True
#: Iterations a lane runs before its warp's requests are measured, in a loop
#: run lane by lane (the round buffer holds ROUNDS x 32 offsets per site).
ROUNDS = 64
#: Calls a body run lane by lane may make (besides math / numpy functions).
_PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "int", "bool", "round", "complex"})


class _RoundNotes(ast.NodeTransformer):
    """A load's note goes to its round buffer, by round: ``_tm_ld2_in(A, i, j,
    slot, site, ..., _tm_req, _tm_l, g)`` becomes ``_tm_ld2_in(A, i, j, slot,
    _tm_r, ..., _tm_rb<s>, _tm_l, g)`` (the helper notes ``req[site, lane]``)."""

    def __init__(self, slots: dict[int, int]):
        self.slots = slots

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and re.fullmatch(r"_tm_ld\d_(in|out)", node.func.id):
            ndim = int(node.func.id[6])
            site = node.args[ndim + 2]
            number = site.args[0].value  # _tm_i64(<site>)
            node.args[ndim + 2] = _name("_tm_r")
            node.args[-3] = _name(f"_tm_rb{self.slots[number]}")
        return node


def _branch_record(site: int) -> str:
    """The call that records a warp's lanes at branch site ``site``: how many
    arrived (``_tm_na``) and how many took it (``_tm_nt``)."""
    return f"_tm_record_branch(_tm_br, _tm_brw, _tm_i64({site}), _tm_wg0 + _tm_w, _tm_na, _tm_nt)"


def _escapes(stmt: ast.stmt, inside_loop: bool) -> bool:
    """Whether a break / continue in ``stmt`` leaves a loop that encloses it."""
    if isinstance(stmt, (ast.Break, ast.Continue)):
        return not inside_loop
    if isinstance(stmt, (ast.For, ast.While)):
        return any(_escapes(s, True) for s in stmt.body + stmt.orelse)
    if isinstance(stmt, ast.If):
        return any(_escapes(s, inside_loop) for s in stmt.body + stmt.orelse)
    return False


def _unparse_with_lines(stmt: ast.stmt) -> list[tuple[str, int]]:
    """``stmt``'s source lines, each with the kernel line it comes from."""
    text = ast.unparse(stmt)
    reparsed = ast.parse(text).body[0]
    starts: dict[int, int] = {}
    for old, new in zip(ast.walk(stmt), ast.walk(reparsed)):
        if isinstance(old, ast.stmt) and hasattr(old, "lineno"):
            starts.setdefault(new.lineno, old.lineno)
    out, current = [], getattr(stmt, "lineno", 0)
    for number, part in enumerate(text.split("\n"), start=1):
        current = starts.get(number, current)
        out.append((part, current))
    return out


def _names_in(lines: list[tuple[str, int]]) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", "\n".join(t for t, _ in lines)))


def _entries(variable: LaneVariable) -> str:
    """A lane variable's value for lane ``_tm_l``, as source."""
    array = f"_tm_V_{variable.dtype}"
    if variable.width:
        return "(" + ", ".join(f"{array}[{variable.row + i}, _tm_l]"
                               for i in range(variable.width)) + ",)"
    return f"{array}[{variable.row}, _tm_l]"


class _LaneRenamer(ast.NodeTransformer):
    """Local variables become their lane's entry; local arrays their lane's view."""

    def __init__(self, variables: dict[str, LaneVariable], local_arrays: set[str]):
        self.variables = variables
        self.local_arrays = local_arrays

    def _entry(self, variable: LaneVariable, offset: int, ctx: ast.expr_context) -> ast.expr:
        index = ast.Tuple(elts=[ast.Constant(variable.row + offset), _name("_tm_l")],
                          ctx=ast.Load())
        return ast.Subscript(value=_name(f"_tm_V_{variable.dtype}"), slice=index, ctx=ctx)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        variable = self.variables.get(node.id)
        if variable is not None:
            if variable.width:
                if not isinstance(node.ctx, ast.Load):
                    raise EmulationUnsupported(
                        f"tuple variable {node.id!r} can only be assigned as a whole "
                        f"('{node.id} = ...')", (getattr(node, "lineno", 0),))
                return ast.copy_location(ast.Tuple(
                    elts=[self._entry(variable, i, ast.Load()) for i in range(variable.width)],
                    ctx=ast.Load()), node)
            return ast.copy_location(self._entry(variable, 0, node.ctx), node)
        if node.id in self.local_arrays:
            return ast.copy_location(ast.Subscript(value=_name(f"_tm_local_{node.id}"),
                                                   slice=_name("_tm_l"), ctx=ast.Load()), node)
        return node

    def statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        """``stmt`` for one lane; a whole tuple variable assigned entry by entry."""
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return []
            if len(targets) == 1 and isinstance(targets[0], ast.Name) \
                    and (self.variables.get(targets[0].id) or LaneVariable("", "", 0)).width:
                variable = self.variables[targets[0].id]
                out = [ast.Assign(targets=[ast.Name("_tm_tuple", ast.Store())],
                                  value=self.visit(stmt.value))]
                for i in range(variable.width):
                    out.append(ast.Assign(
                        targets=[self._entry(variable, i, ast.Store())],
                        value=ast.Subscript(value=_name("_tm_tuple"), slice=ast.Constant(i),
                                            ctx=ast.Load())))
                return [ast.copy_location(s, stmt) for s in out]
            if isinstance(stmt, ast.AnnAssign):
                stmt = ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)
        return [self.visit(stmt)]
