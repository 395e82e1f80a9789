"""Warp-level operations, placed where the lockstep emulation can run them.

A shuffle, a vote or ``syncwarp`` is an exchange among the lanes of a warp:
each lane's result depends on the other lanes' arguments at the same point of
the program.  The lockstep emulation runs a statement lane after lane, so a
statement such as ``v += cuda.shfl_up_sync(m, v, 1)`` would let lane 1 read
lane 0's ``v`` after lane 0 had already updated it.  This module rewrites the
kernel's body so that every warp operation is a statement of its own whose
arguments are plain variables, computed before it by every lane::

    v += cuda.shfl_up_sync(0xffffffff, v, 1)

becomes (each new statement keeps the original's line)::

    _tm_wk0_0 = 0xffffffff
    _tm_wk0_1 = v
    _tm_wk0_2 = 1
    _tm_wk0 = cuda.shfl_up_sync(_tm_wk0_0, _tm_wk0_1, _tm_wk0_2)
    v += _tm_wk0

The exchange itself (``lockstep._Writer._warp`` in the compiled tier, the
instant tier's ``VectorRuntime.warp_op``) then reads each source lane's
argument from its lane vector, all lanes' arguments being in place.
numba types the new variables as it types the rest (``local_types.py``).

Refused, with the line (the kernel then runs only on a GPU): a warp operation
that only some lanes of a statement would evaluate (behind ``and`` / ``or`` or
in one side of ``x if c else y``), or in a ``while`` loop's test (evaluated
again at each turn: assign it to a variable in the loop instead).
"""
from __future__ import annotations

import ast
import copy

from ..errors import EmulationUnsupported
from ..sources.plan import KernelPlan, cuda_attribute
from .loop_else import has_loop_else, without_loop_else

#: Shuffles and the PTX mode each is (``shfl.sync.<mode>``).
SHUFFLES = {"shfl_sync": "idx", "shfl_up_sync": "up", "shfl_down_sync": "down",
            "shfl_xor_sync": "bfly"}
#: Votes: ``(mask, predicate)``.
VOTES = frozenset({"ballot_sync", "any_sync", "all_sync", "eq_sync"})
#: ``match_any_sync(mask, value)``: the lanes of the mask holding the same value.
#: (``match_all_sync`` returns an (int, bool) pair, which no lane variable holds:
#: it runs only on a GPU.)
MATCH = "match_any_sync"
#: Queries of the warp's lanes: no argument.
QUERIES = frozenset({"activemask", "lanemask_lt"})
#: Every warp-level operation the emulation runs (``syncwarp`` is a statement).
WARP_OPERATIONS = frozenset(SHUFFLES) | VOTES | QUERIES | {MATCH, "syncwarp"}
#: What ``syncwarp()`` without a mask means: every lane of the warp.
FULL_MASK = 0xFFFFFFFF


def warp_operation(node: ast.AST, aliases: dict) -> str | None:
    """The warp operation ``node`` calls (``"shfl_down_sync"``), or None."""
    if isinstance(node, ast.Call):
        what = cuda_attribute(node.func, aliases)
        if what in WARP_OPERATIONS:
            return what
    return None


def placed_operation(stmt: ast.stmt, aliases: dict) -> str | None:
    """The warp operation ``stmt`` is, once placed (``name = cuda.op(names)``
    or ``cuda.syncwarp(name)``), or None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        what = warp_operation(stmt.value, aliases)
        return what if what != "syncwarp" else None
    if isinstance(stmt, ast.Expr) and warp_operation(stmt.value, aliases) == "syncwarp":
        return "syncwarp"
    return None


def holds_warp_operation(node: ast.AST, aliases: dict) -> bool:
    return any(warp_operation(n, aliases) for n in ast.walk(node))


def warp_operations(plan: KernelPlan) -> bool:
    """Whether the kernel uses any warp-level operation."""
    return any(holds_warp_operation(stmt, plan.module.aliases) for stmt in plan.kernel.node.body)


def uses_syncwarp(plan: KernelPlan) -> bool:
    """Whether the kernel calls cuda.syncwarp() (its race check then keeps the
    syncwarps each shared access had passed: record_runtime._tm_syncwarp_between)."""
    return any(warp_operation(node, plan.module.aliases) == "syncwarp"
               for node in ast.walk(plan.kernel.node))


def placed_body(plan: KernelPlan) -> list[ast.stmt]:
    """The kernel's body as the emulation runs it: each loop's ``else`` made
    into a flag and an ``if`` (loop_else.py), and every warp operation placed
    as a statement of its own (the body itself, unchanged, when it has
    neither).  numba types this body, and the lowering lowers it."""
    key = (plan.module.path, plan.module.text, plan.name)
    if key not in _PLACED:
        body = plan.kernel.node.body
        if has_loop_else(body):
            body = without_loop_else(copy.deepcopy(body))
        if warp_operations(plan):
            body = _Placer(plan.module.aliases).body(copy.deepcopy(body))
        _PLACED[key] = body
        while len(_PLACED) > 64:
            _PLACED.pop(next(iter(_PLACED)))
    return _PLACED[key]


_PLACED: dict[tuple, list[ast.stmt]] = {}


class _Placer:
    def __init__(self, aliases: dict):
        self.aliases = aliases
        self.count = 0

    def body(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in statements:
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        before: list[ast.stmt] = []
        if isinstance(stmt, ast.While):
            if holds_warp_operation(stmt.test, self.aliases):
                raise EmulationUnsupported(
                    "a warp operation in a while loop's test runs at every turn: assign it "
                    "to a variable before the loop and again at the end of its body",
                    (stmt.lineno,))
            stmt.body = self.body(stmt.body)
            return [stmt]
        if isinstance(stmt, ast.If):
            stmt.test = self.expression(stmt.test, stmt, before)
            stmt.body = self.body(stmt.body)
            stmt.orelse = self.body(stmt.orelse)
            return before + [stmt]
        if isinstance(stmt, ast.For):
            stmt.iter = self.expression(stmt.iter, stmt, before)
            stmt.body = self.body(stmt.body)
            return before + [stmt]
        if isinstance(stmt, ast.Expr) and warp_operation(stmt.value, self.aliases) \
                == "syncwarp":
            call = stmt.value
            if not call.args and not call.keywords:
                call.args = [ast.copy_location(ast.Constant(FULL_MASK), call)]
            self._arguments(call, stmt, before, self._fresh())
            return before + [stmt]
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
            value = getattr(stmt, "value", None)
            if value is not None:
                stmt.value = self.expression(value, stmt, before)
            return before + [stmt]
        return [stmt]

    def _fresh(self) -> str:
        name = f"_tm_wk{self.count}"
        self.count += 1
        return name

    def _assign(self, name: str, value: ast.expr, where: ast.stmt) -> ast.stmt:
        stmt = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
        return ast.fix_missing_locations(ast.copy_location(stmt, where))

    def _arguments(self, call: ast.Call, where: ast.stmt, before: list[ast.stmt],
                   name: str) -> None:
        if call.keywords:
            raise EmulationUnsupported(
                f"pass the arguments of cuda.{cuda_attribute(call.func, self.aliases)} by "
                "position", (where.lineno,))
        for i, argument in enumerate(call.args):
            argument = self.expression(argument, where, before)
            before.append(self._assign(f"{name}_{i}", argument, where))
            call.args[i] = ast.copy_location(ast.Name(f"{name}_{i}", ast.Load()), argument)

    def expression(self, node: ast.expr, where: ast.stmt, before: list[ast.stmt]) -> ast.expr:
        """``node`` with each warp operation in it (innermost first) placed
        in ``before`` and replaced by its variable."""
        if not holds_warp_operation(node, self.aliases):
            return node
        what = warp_operation(node, self.aliases)
        if what is not None:
            if what == "syncwarp":
                raise EmulationUnsupported("cuda.syncwarp() returns nothing: call it as a "
                                           "statement of its own", (where.lineno,))
            name = self._fresh()
            self._arguments(node, where, before, name)
            before.append(self._assign(name, node, where))
            return ast.copy_location(ast.Name(name, ast.Load()), node)
        if isinstance(node, ast.BoolOp) and any(
                holds_warp_operation(v, self.aliases) for v in node.values[1:]) or \
                isinstance(node, ast.IfExp) and (holds_warp_operation(node.body, self.aliases)
                                                 or holds_warp_operation(node.orelse,
                                                                         self.aliases)):
            raise EmulationUnsupported(
                "a warp operation behind 'and', 'or' or 'x if c else y' runs on only some "
                "lanes: assign it to a variable first", (where.lineno,))
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self.expression(value, where, before))
            elif isinstance(value, list):
                setattr(node, field, [self.expression(v, where, before)
                                      if isinstance(v, ast.expr) else v for v in value])
        return node
