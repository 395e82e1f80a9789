"""Rules about guards: bounds tests joined with the wrong operator or taken
from another array's shape, and early returns and barriers in branches."""
from __future__ import annotations

import ast

from ...words import counted
from ..hazards import block_name, thread_name
from .diagnosis import Diagnosis
from .source import (
    LAUNCH,
    Context,
    extent_word,
    shape_ref,
    sources_of,
    subscript_parts,
    subscripts,
)


def wrong_operator_guard(ctx: Context) -> Diagnosis | None:
    """``if x >= M and y >= N: return`` (needs ``or``), or ``if x < M or
    y < N:`` around a store (needs ``and``): a thread with one coordinate in
    range stores whatever the other is.  Evidence: writes outside the output,
    the first with one coordinate inside its range and the other outside."""
    result = ctx.result
    shape = ctx.shapes.get(ctx.output) or result.maps.count.shape  # (as the kernel indexes it)
    oob = next((o for o in result.maps.out_of_bounds
                if o.array == ctx.output and o.direction == "write" and o.count), None)
    if oob is None or oob.first_index is None or len(shape) != 2:
        return None
    inside = [0 <= i < n for i, n in zip(oob.first_index, shape)]
    if all(inside) or not any(inside):
        return None  # (not a thread that only one of the tests would stop)
    for node in ast.walk(ctx.kernel):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp)
                and len(node.test.values) >= 2):
            continue
        if isinstance(node.test.op, ast.And):
            diagnosis = _and_return(node, ctx, oob)
        else:
            diagnosis = _or_store(node, ctx, oob)
        if diagnosis is not None:
            return diagnosis
    return None


def _compares(tests: list[ast.expr], ops: tuple, ctx: Context) -> bool:
    # (each test's left side a thread's coordinate: made of the launch)
    return all(isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ops)
               and sources_of(t.left, ctx.env) & set(LAUNCH) for t in tests)


def _evidence(ctx: Context, oob) -> str:
    index = ", ".join(map(str, oob.first_index))
    return (f"{counted(oob.count, 'out-of-bounds write')} of {ctx.output}; the first by "
            f"{thread_name(oob.first_thread, ctx.grid, ctx.block)} at [{index}]")


def _rejoined(tests: list[ast.expr], op: ast.boolop) -> str:
    """``if <tests joined by op>:``, the suggested line."""
    return f"if {ast.unparse(ast.BoolOp(op=op, values=tests))}:"


def _named(tests: list[ast.expr], word: str) -> str:
    return f" {word} ".join(f"`{ast.unparse(t)}`" for t in tests)


def _and_return(node: ast.If, ctx: Context, oob) -> Diagnosis | None:
    tests = node.test.values
    if not (len(node.body) == 1 and isinstance(node.body[0], ast.Return)
            and _compares(tests, (ast.GtE, ast.Gt), ctx)):
        return None
    every = "both" if len(tests) == 2 else "all"
    shape = " x ".join(map(str, ctx.shapes.get(ctx.output) or ctx.result.maps.count.shape))
    return Diagnosis(
        "and-guard", (node.lineno,),
        f"the guard at line {node.lineno} returns only when {_named(tests, 'and')} {every} "
        f"hold, so a thread with one coordinate inside {ctx.output} and the other outside "
        f"goes on and stores outside {ctx.output} ({shape})",
        _evidence(ctx, oob),
        f"line {node.lineno}: `{_rejoined(tests, ast.Or())}` (return when any coordinate is "
        "out of range)")


def _or_store(node: ast.If, ctx: Context, oob) -> Diagnosis | None:
    tests = node.test.values
    if not _compares(tests, (ast.Lt, ast.LtE), ctx) or not any(
            subscripts(statement, ctx.output, store=True) for statement in node.body):
        return None
    shape = " x ".join(map(str, ctx.result.maps.count.shape))
    return Diagnosis(
        "and-guard", (node.lineno,),
        f"the guard at line {node.lineno} lets a thread store when {_named(tests, 'or')} "
        f"holds, so a thread with one coordinate inside {ctx.output} and the other outside "
        f"stores outside {ctx.output} ({shape})",
        _evidence(ctx, oob),
        f"line {node.lineno}: `{_rejoined(tests, ast.And())}` (store only when every "
        "coordinate is in range)")


_NEGATED = {ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.Lt: ast.GtE, ast.LtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


def negated(test: ast.expr) -> ast.expr:
    """``not test``, by De Morgan where it can (``y >= M or x >= N`` ->
    ``y < M and x < N``)."""
    if isinstance(test, ast.BoolOp):
        op = ast.And() if isinstance(test.op, ast.Or) else ast.Or()
        return ast.BoolOp(op=op, values=[negated(v) for v in test.values])
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED:
        return ast.Compare(left=test.left, ops=[_NEGATED[type(test.ops[0])]()],
                           comparators=test.comparators)
    return ast.UnaryOp(op=ast.Not(), operand=test)


def early_return_before_barrier(ctx: Context) -> Diagnosis | None:
    """``if ...: return`` before a barrier: the threads that left never reach
    it.  Evidence: the barrier reached by only some threads of a block."""
    analysis = ctx.result.analysis
    if analysis is None or not analysis.barrier_divergence:
        return None
    barrier = analysis.barrier_divergence[0]
    returns = [node for node in ast.walk(ctx.kernel) if isinstance(node, ast.If)
               and len(node.body) == 1 and isinstance(node.body[0], ast.Return)
               and node.lineno < barrier.line]
    if not returns:
        return None
    guard = max(returns, key=lambda node: node.lineno)
    line = guard.body[0].lineno
    lines = sorted({b.line for b in analysis.barrier_divergence})
    named = f"the barrier at line {lines[0]}, which" if len(lines) == 1 else \
        f"the barriers at lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}, which"
    return Diagnosis(
        "early-return-before-barrier", (line, barrier.line),
        f"the threads that return at line {line} never reach {named} every thread of a "
        f"block must reach",
        f"the barrier at line {barrier.line} was reached by {barrier.arrived:,} of "
        f"{barrier.arrived + barrier.missing:,} threads of block "
        f"{block_name(barrier.first_block, barrier.grid)} (first missing: "
        f"{thread_name(barrier.first_missing_thread, barrier.grid, barrier.block)}); "
        f"{counted(barrier.blocks, 'block')} affected",
        f"guard the work, not the barrier: drop the return at line {line} and put the loads "
        f"and the store under `if {ast.unparse(negated(guard.test))}:`, with every "
        f"cuda.syncthreads() outside it")


def barrier_in_branch(ctx: Context) -> Diagnosis | None:
    """``if t < s: ...; cuda.syncthreads()``: a barrier under a test that
    differs between the threads of a block, which the threads failing it
    never reach.  Evidence: that barrier reached by only some threads of a
    block.  (A return before a barrier is early-return-before-barrier's.)"""
    analysis = ctx.result.analysis
    if analysis is None or not analysis.barrier_divergence:
        return None
    barrier = analysis.barrier_divergence[0]
    call = next((node for node in ast.walk(ctx.kernel) if isinstance(node, ast.Expr)
                 and node.lineno == barrier.line), None)
    guard = ctx.parents.get(call) if call is not None else None
    if not isinstance(guard, ast.If) or call not in guard.body:
        return None
    if any(isinstance(node, ast.If) and len(node.body) == 1
           and isinstance(node.body[0], ast.Return) and node.lineno < barrier.line
           for node in ast.walk(ctx.kernel)):
        return None  # (early-return-before-barrier names it)
    test = ast.unparse(guard.test)
    after = guard.end_lineno or guard.lineno
    return Diagnosis(
        "barrier-in-branch", (barrier.line,),
        f"the cuda.syncthreads() at line {barrier.line} is under `if {test}:` (line "
        f"{guard.lineno}), so the threads of a block that fail the test never reach a "
        f"barrier the others wait at",
        f"the barrier at line {barrier.line} was reached by {barrier.arrived:,} of "
        f"{barrier.arrived + barrier.missing:,} threads of block "
        f"{block_name(barrier.first_block, barrier.grid)} (first missing: "
        f"{thread_name(barrier.first_missing_thread, barrier.grid, barrier.block)}); "
        f"{counted(barrier.blocks, 'block')} affected",
        f"line {barrier.line}: move `cuda.syncthreads()` out of the `if`, after line {after}, "
        "where every thread of the block reaches it")


def guard_of_other_array(ctx: Context) -> Diagnosis | None:
    """A guard that bounds a coordinate by one array's shape where it
    indexes another of a different extent (``if i < out.shape[0] and j <
    out.shape[1]:`` around ``out[j, i] = a[i, j]``, a transpose): the threads
    past the indexed array's edge pass the test.  Evidence: out-of-bounds
    accesses of that array, the first past its extent in that dimension."""
    for guard in (node for node in ast.walk(ctx.kernel) if isinstance(node, ast.If)):
        tests = guard.test.values if isinstance(guard.test, ast.BoolOp) \
            and isinstance(guard.test.op, ast.And) else [guard.test]
        bounds: dict[str, tuple[str, int, int]] = {}  # coordinate -> (array, dim, extent)
        for test in tests:
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.Lt) and isinstance(test.left, ast.Name)
                    and sources_of(test.left, ctx.env) & set(LAUNCH)):
                continue
            found = shape_ref(test.comparators[0])
            extent = ctx.value(test.comparators[0]) if found is not None else None
            if extent is not None:
                bounds[test.left.id] = (found[0], found[1], extent)
        if not bounds:
            continue
        accesses = [(access, store) for statement in guard.body for store in (False, True)
                    for access in ast.walk(statement)
                    if isinstance(access, ast.Subscript) and isinstance(access.value, ast.Name)
                    and isinstance(access.ctx, ast.Store if store else ast.Load)]
        for access, store in accesses:
            array = access.value.id
            shape = ctx.shapes.get(array)
            parts = subscript_parts(access.slice)
            if shape is None or len(parts) != len(shape):
                continue
            for dim, element in enumerate(parts):
                if not isinstance(element, ast.Name) or element.id not in bounds:
                    continue
                tested, tested_dim, extent = bounds[element.id]
                if tested == array or extent <= shape[dim]:
                    continue
                direction = "write" if store else "read"
                oob = next((o for o in ctx.result.maps.out_of_bounds
                            if o.array == array and o.direction == direction and o.count
                            and o.first_index is not None and dim < len(o.first_index)
                            and o.first_index[dim] >= shape[dim]), None)
                if oob is None:
                    continue
                what = extent_word(shape, dim)
                fixed = " and ".join(f"{p.id} < {array}.shape[{d}]" for d, p in enumerate(parts)
                                     if isinstance(p, ast.Name) and p.id in bounds)
                coordinate = element.id
                return Diagnosis(
                    "guard-of-other-array", (guard.lineno,),
                    f"the guard at line {guard.lineno} bounds `{coordinate}` by "
                    f"`{tested}.shape[{tested_dim}]` = {extent:,}, but `{coordinate}` indexes "
                    f"{array}'s {what} (`{ast.unparse(access)}`), of which this run's {array} "
                    f"has {shape[dim]:,}: the threads with `{coordinate}` from {shape[dim]:,} "
                    f"to {extent - 1:,} pass the test",
                    f"{counted(oob.count, 'out-of-bounds ' + direction)} of {array}; the first "
                    f"by {thread_name(oob.first_thread, ctx.grid, ctx.block)} at "
                    f"[{', '.join(map(str, oob.first_index))}]",
                    f"line {guard.lineno}: test each index against the array it indexes, "
                    f"`if {fixed}:`")
    return None
