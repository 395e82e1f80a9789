"""Rules about warp-level operations: a shuffle or vote that some lanes of its
mask never reach, and a mask that leaves out lanes that call."""
from __future__ import annotations

import ast

from ...derived.warp_ops import FULL_MASK, WARP_OPERATIONS
from ...words import counted
from ..hazards import lanes_named, shared_elements_raced
from .diagnosis import Diagnosis
from .source import Context, called


def _warp_calls(ctx: Context, line: int) -> list[ast.Call]:
    """The warp operations called at ``line`` (cuda.shfl_down_sync(...))."""
    return [node for node in ast.walk(ctx.kernel) if isinstance(node, ast.Call)
            and called(node) in WARP_OPERATIONS and node.lineno == line]


def _mask_hazard(ctx: Context):
    analysis = getattr(ctx.result, "analysis", None)
    return next((h for h in getattr(analysis, "warp", ()) if h.kind == "mask"), None)


def warp_call_in_branch(ctx: Context) -> Diagnosis | None:
    """A warp operation inside an ``if`` that only some lanes of its mask
    take (``if lane < offset: v += cuda.shfl_down_sync(FULL, v, offset)``).
    Evidence: calls whose mask names lanes that had not exited but did not
    reach the call."""
    hazard = _mask_hazard(ctx)
    if hazard is None:
        return None
    absent = hazard.mask & hazard.other & ~hazard.active
    calls = _warp_calls(ctx, hazard.line)
    if not absent or len(calls) != 1:
        return None
    call = calls[0]
    branch = ctx.parents.get(call)
    while branch is not None and not isinstance(branch, (ast.If, ast.FunctionDef)):
        branch = ctx.parents.get(branch)
    if not isinstance(branch, ast.If):
        return None
    statement = ctx.parents.get(call)
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = ctx.parents.get(statement)
    name = called(call)
    test = ast.unparse(branch.test)
    use = ast.unparse(statement).replace(ast.unparse(call), "value") \
        if isinstance(statement, (ast.Assign, ast.AugAssign)) else None
    fix = (f"call it on every lane before line {branch.lineno}, and use its value inside: "
           f"`value = {ast.unparse(call)}`, then `if {test}: {use}`" if use else
           f"call it on every lane, before the `if {test}:` at line {branch.lineno}")
    return Diagnosis(
        "warp-call-in-branch", (branch.lineno, call.lineno),
        f"cuda.{name} at line {call.lineno} is inside `if {test}:` (line {branch.lineno}), "
        f"so {lanes_named(absent)} of its mask 0x{hazard.mask:08x} never reach it: every lane "
        "a warp operation's mask names must call it, or the result is undefined (a hang, or "
        "a value read from a lane that is not there)",
        f"{counted(hazard.count, 'call')} with lanes of the mask missing; the first by "
        f"{hazard.thread} (lane {hazard.lane}), with active lanes 0x{hazard.active:08x}",
        fix)


def mask_leaves_out_callers(ctx: Context) -> Diagnosis | None:
    """A literal mask smaller than the lanes that call (``0xFFFF`` where the
    whole warp runs the call).  Evidence: calls by lanes outside their own
    mask, with every named lane there."""
    hazard = _mask_hazard(ctx)
    if hazard is None or hazard.mask & hazard.other & ~hazard.active:
        return None
    calls = _warp_calls(ctx, hazard.line)
    if len(calls) != 1 or not calls[0].args:
        return None
    call = calls[0]
    mask = call.args[0]
    value = mask.value if isinstance(mask, ast.Constant) else ctx.constants.get(
        mask.id) if isinstance(mask, ast.Name) else None
    if not isinstance(value, int) or value & FULL_MASK == FULL_MASK:
        return None
    name = called(call)
    outside = hazard.active & ~value
    fixed = ast.unparse(call).replace(ast.unparse(mask), "0xFFFFFFFF", 1)
    return Diagnosis(
        "mask-leaves-out-callers", (call.lineno,),
        f"the mask 0x{value:X} of cuda.{name} at line {call.lineno} names "
        f"{lanes_named(value & FULL_MASK)}, but {lanes_named(outside)} call it too: a lane "
        "outside its own call's mask gets an undefined value, and so does a lane that reads "
        "one",
        f"{counted(hazard.count, 'call')} by lanes outside their mask; the first by "
        f"{hazard.thread} (lane {hazard.lane}), with active lanes 0x{hazard.active:08x}",
        f"line {call.lineno}: `{fixed}` (the mask names every lane that calls it; "
        "cuda.activemask() gives the lanes here)")


def _lane_names(kernel: ast.FunctionDef) -> set[str]:
    """Locals that hold a thread's lane in its warp: ``t % 32``, ``t & 31``,
    ``cuda.laneid``."""
    names = set()
    for node in ast.walk(kernel):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if isinstance(value, ast.BinOp) and isinstance(value.right, ast.Constant) and (
                isinstance(value.op, ast.Mod) and value.right.value == 32
                or isinstance(value.op, ast.BitAnd) and value.right.value == 31) \
                or isinstance(value, ast.Attribute) and value.attr == "laneid":
            names.add(node.targets[0].id)
    return names


def warp_synchronous_pair(ctx: Context):
    """The first shared-memory race when it is the pre-Volta warp-synchronous
    idiom: its two threads are lanes of one warp, and the later access sits
    in an ``if`` on the lane (``if lane < offset:``); else None."""
    analysis = getattr(ctx.result, "analysis", None)
    if analysis is None or not analysis.races.count or analysis.races.first is None:
        return None
    earlier, later = analysis.races.first
    tpb = ctx.block[0] * ctx.block[1]
    if earlier.thread // tpb != later.thread // tpb or \
            (earlier.thread % tpb) // 32 != (later.thread % tpb) // 32:
        return None
    lanes = _lane_names(ctx.kernel)
    for node in ast.walk(ctx.kernel):
        if isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id in lanes
                                            for n in ast.walk(node.test)) \
                and any(getattr(n, "lineno", None) == later.access.line
                        for stmt in node.body for n in ast.walk(stmt)):
            return earlier, later, node
    return None


def warp_synchronous_race(ctx: Context) -> Diagnosis | None:
    """Lanes of one warp passing values through shared memory with no
    ``cuda.syncwarp()``, trusting the warp to run in lockstep (true before
    Volta).  Evidence: the first shared-memory race, between two lanes of one
    warp, the later access under an ``if`` on the lane."""
    found = warp_synchronous_pair(ctx)
    if found is None:
        return None
    earlier, later, branch = found
    races = ctx.result.analysis.races
    element = f"{races.array}[{', '.join(map(str, races.index))}]"
    a, b = earlier.access.line, later.access.line
    statement = next((n for n in branch.body for n in ast.walk(n)
                      if isinstance(n, (ast.Assign, ast.AugAssign)) and n.lineno == b), None)
    if isinstance(statement, ast.AugAssign) and later.access.kind == "load":
        target = ast.unparse(statement.target)
        op = ast.unparse(ast.BinOp(ast.Name("x"), statement.op, ast.Name("y")))[2:-2]
        split = (f"`v = {later.access.text}`, `cuda.syncwarp()`, `{target} {op}= v`, "
                 "`cuda.syncwarp()`")
        first = f"`cuda.syncwarp()` after line {a}; and at " if a < branch.lineno else "at "
        fix = (f"{first}line {b}, read the partner's element into a local, wait for the "
               f"warp, then write: {split}, with each cuda.syncwarp() outside the `if "
               f"{ast.unparse(branch.test)}:` so that every lane of the warp reaches it")
    else:
        fix = (f"put `cuda.syncwarp()` between line {a} and line {b}, outside the `if "
               f"{ast.unparse(branch.test)}:` so that every lane of the warp reaches it")
    return Diagnosis(
        "warp-synchronous-race", (a, b),
        f"lanes of one warp pass values through {races.array} (written at line {a}, read at "
        f"line {b}) with no cuda.syncwarp() between: since Volta (sm_70) a warp's lanes are "
        "not kept in lockstep, so a lane can read its partner's element before the partner "
        "has written it",
        f"{shared_elements_raced(races.count)}; the first: {earlier.describe()} and "
        f"{later.describe()}, both on {element}, lanes of one warp",
        fix)
