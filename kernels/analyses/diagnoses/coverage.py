"""Rules about how the output's elements are dealt to threads: a stride
taken from the launch's other axis, a flat index whose rows are the wrong
width, a flat loop that stops short of the output, and a loop counter that
is not started again for each pass of the loop around it.

Each reads the kernel's meaning through :class:`Context` (which axis of the
launch a name follows, the value of an expression on this run) and fires
only where the run's maps show the effect: elements written twice, or never.
"""
from __future__ import annotations

import ast

import numpy as np

from ...words import counted
from .diagnosis import Diagnosis
from .loops import strided_loops
from .source import Context, range_loops, sources_of, subscript_parts, subscripts


def _write_effect(ctx: Context) -> tuple[int, int]:
    """(elements of the output written by more than one thread, never written)."""
    count = ctx.result.maps.count
    return int(ctx.result.verdict.collided), int(np.count_nonzero(count == 0))


def _launch_name(ctx: Context, kind: str, axis: str) -> str:
    """The kernel's own name for the grid's size (``kind`` gridsize) along
    ``axis``, else the expression that makes it."""
    index = "xyz".index(axis)
    named = next((name for name, (made, at) in ctx.unpacked.items()
                  if made == kind and at == index), None)
    return f"`{named}`" if named is not None else \
        f"`cuda.blockDim.{axis} * cuda.gridDim.{axis}`"


def other_axis_stride(ctx: Context) -> Diagnosis | None:
    """A grid-stride loop that starts at a coordinate along one axis of the
    launch and steps by the grid's size along another (``for j in range(y,
    n, sx)`` where ``sy`` was needed): where the other axis is narrower,
    threads meet on the same elements; where wider, elements are skipped.
    Evidence: elements of the output written twice, or never."""
    collided, unwritten = _write_effect(ctx)
    for loop, start, step in strided_loops(ctx):
        start_axes, step_axes = ctx.axes(start), ctx.axes(step)
        if len(start_axes) != 1 or len(step_axes) != 1 or start_axes == step_axes \
                or not subscripts(loop, ctx.output, store=True):
            continue
        (along,), (other,) = start_axes, step_axes
        value, extent = ctx.value(step), ctx.grid_extent(along)
        if value is None or value == extent:
            continue
        if value < extent and collided:
            effect = (f"threads {value:,} apart along {along} store the same elements")
            evidence = f"{counted(collided, 'element')} of {ctx.output} written by more " \
                       "than one thread"
        elif value > extent and unwritten:
            effect = (f"of each {value:,} elements along {along}, the {value - extent:,} "
                      f"after the first {extent:,} are no thread's")
            evidence = f"{counted(unwritten, 'element')} of {ctx.output} never written"
        else:
            continue
        line = getattr(step, "lineno", loop.lineno)
        return Diagnosis(
            "other-axis-stride", tuple(sorted({loop.lineno, line})),
            f"the loop at line {loop.lineno} starts at `{ast.unparse(start)}`, along the "
            f"launch's {along} axis ({extent:,} threads wide), but steps by "
            f"`{ast.unparse(step)}` = {value:,}, the grid's size along {other}: {effect}",
            evidence,
            f"line {line}: step by the grid's size along {along}, "
            f"{_launch_name(ctx, 'gridsize', along)}")
    return None


def flat_index_width(ctx: Context) -> Diagnosis | None:
    """A flat index ``row * width + col`` made of two coordinates of the
    launch whose ``width`` (a launch quantity: ``cuda.blockDim.x``) is not
    how far ``col`` runs (the grid's width, ``cuda.gridsize(2)[0]``):
    narrower, and neighbouring rows overlap; wider, and gaps open between
    them.  Evidence: elements of the output written twice, or never."""
    collided, unwritten = _write_effect(ctx)
    stored = {element.id for store in subscripts(ctx.kernel, ctx.output, store=True)
              for element in subscript_parts(store.slice) if isinstance(element, ast.Name)}
    for node in ast.walk(ctx.kernel):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in stored
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add)):
            continue
        for product, col in ((node.value.left, node.value.right),
                             (node.value.right, node.value.left)):
            if not (isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)):
                continue
            for row, width in ((product.left, product.right), (product.right, product.left)):
                col_axes, row_axes = ctx.axes(col), ctx.axes(row)
                # (col a coordinate across the grid, the width a launch
                # quantity: a width from the data, `n`, is the guard's business)
                if len(col_axes) != 1 or len(row_axes) != 1 or col_axes == row_axes \
                        or "blockIdx" not in sources_of(col, ctx.env) \
                        or not sources_of(width, ctx.env) & {"blockDim", "gridDim"}:
                    continue
                (along,) = col_axes
                value, extent = ctx.value(width), ctx.grid_extent(along)
                if value is None or value == extent:
                    continue
                if value < extent and collided:
                    effect = (f"thread ({ast.unparse(col)}, {ast.unparse(row)}) meets "
                              f"({ast.unparse(col)} - {value:,}, {ast.unparse(row)} + 1) on "
                              "one element")
                    evidence = (f"{counted(collided, 'element')} of {ctx.output} written by "
                                "more than one thread"
                                + (f"; {counted(unwritten, 'element')} never written"
                                   if unwritten else ""))
                elif value > extent and unwritten:
                    effect = f"{value - extent:,} elements of each row of {value:,} are skipped"
                    evidence = f"{counted(unwritten, 'element')} of {ctx.output} never written"
                else:
                    continue
                return Diagnosis(
                    "flat-index-width", (node.lineno,),
                    f"the flat index at line {node.lineno}, `{ast.unparse(node.value)}`, "
                    f"makes rows `{ast.unparse(width)}` = {value:,} wide, but "
                    f"`{ast.unparse(col)}` runs along the grid's {along} axis, 0 to "
                    f"{extent - 1:,} ({extent:,} wide): {effect}",
                    evidence,
                    f"line {node.lineno}: rows as wide as the grid, "
                    f"`{ast.unparse(row)} * (cuda.gridDim.{along} * cuda.blockDim.{along}) + "
                    f"{ast.unparse(col)}`")
    return None


def short_flat_loop(ctx: Context) -> Diagnosis | None:
    """A loop over flat indices of the output (``i = e // w``, ``j = e %
    w``, then ``out[i, j]``; or ``out[e]``) whose stop is short of the
    output's size (``rows * cols`` where ``rows * rows`` was needed): its
    last elements are no thread's.  Evidence: exactly the output's elements
    from the stop on never written, every one before it written."""
    shape = ctx.shapes.get(ctx.output)
    if not shape:
        return None
    size = int(np.prod(shape))
    for loop, args in range_loops(ctx):
        if len(args) < 2:
            continue
        variable = loop.target.id
        if not _flat_over_output(ctx, loop, variable, shape):
            continue
        stop = ctx.value(args[1])
        if stop is None or not 0 < stop < size:
            continue
        flat = ctx.result.maps.count.reshape(-1)
        if flat.size != size or np.count_nonzero(flat[stop:]) \
                or np.count_nonzero(flat[:stop] == 0):
            continue  # (not exactly the tail left: some other cause)
        tail = size - stop
        rows = ""
        if len(shape) == 2 and stop % shape[1] == 0:
            rows = f" (rows {stop // shape[1]:,}-{shape[0] - 1:,})"
        return Diagnosis(
            "short-flat-loop", (loop.lineno,),
            f"the loop at line {loop.lineno} runs `{variable}`, a flat index into "
            f"{ctx.output}, up to `{ast.unparse(args[1])}` = {stop:,}, but {ctx.output} has "
            f"{size:,} elements: the last {tail:,}{rows} are no thread's",
            f"{counted(tail, 'element')} of {ctx.output} from flat index {stop:,} on never "
            "written, and every one before it written",
            f"line {loop.lineno}: run it to the output's size, `{ctx.output}.size`")
    return None


def _flat_over_output(ctx: Context, loop: ast.For, variable: str,
                      shape: tuple[int, ...]) -> bool:
    """Whether ``loop``'s stores to the output index it by ``variable``
    flat: ``out[e]`` for a 1-D output, ``out[e // w, e % w]`` (directly or
    through names) with ``w`` its row length for a 2-D one."""
    derived: dict[str, tuple[str, int | None]] = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            part = _flat_part(ctx, node.value, variable)
            if part is not None:
                derived[node.targets[0].id] = part
    for store in subscripts(loop, ctx.output, store=True):
        parts = subscript_parts(store.slice)
        if len(parts) == 1 and len(shape) == 1 and isinstance(parts[0], ast.Name) \
                and parts[0].id == variable:
            return True
        if len(parts) == 2 and len(shape) == 2:
            read = [derived.get(p.id) if isinstance(p, ast.Name) else _flat_part(ctx, p, variable)
                    for p in parts]
            if read[0] is not None and read[1] is not None and read[0][0] == "//" \
                    and read[1][0] == "%" and read[0][1] == read[1][1] == shape[1]:
                return True
    return False


def _flat_part(ctx: Context, expr: ast.expr, variable: str) -> tuple[str, int | None] | None:
    """("//", w) for ``variable // w``, ("%", w) for ``variable % w``."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.FloorDiv, ast.Mod)) \
            and isinstance(expr.left, ast.Name) and expr.left.id == variable:
        return ("//" if isinstance(expr.op, ast.FloorDiv) else "%", ctx.value(expr.right))
    return None


def counter_not_reset(ctx: Context) -> Diagnosis | None:
    """Nested loops whose inner ``while`` counter is set once, before the
    outer loop, and never again: after the first pass of the outer loop it
    stays past its bound, and every later pass skips the inner loop.
    Evidence: elements of the output never written."""
    _, unwritten = _write_effect(ctx)
    if not unwritten:
        return None
    for outer in ast.walk(ctx.kernel):
        if not isinstance(outer, (ast.While, ast.For)):
            continue
        for inner in (n for statement in outer.body for n in ast.walk(statement)
                      if isinstance(n, ast.While)):
            stepped = {s.target.id for s in inner.body if isinstance(s, ast.AugAssign)
                       and isinstance(s.target, ast.Name)}
            tested = {n.id for n in ast.walk(inner.test) if isinstance(n, ast.Name)}
            for counter in sorted(stepped & tested):
                sets = [n for n in ast.walk(ctx.kernel) if isinstance(n, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == counter
                                for t in n.targets)]
                inside = [n for n in sets if outer.lineno <= n.lineno
                          <= (outer.end_lineno or outer.lineno)]
                before = [n for n in sets if n.lineno < outer.lineno]
                if inside or len(before) != 1 or not subscripts(inner, ctx.output, store=True):
                    continue
                (first,) = before
                return Diagnosis(
                    "counter-not-reset", (first.lineno,),
                    f"`{counter}` is set once, at line {first.lineno}, before the loop at line "
                    f"{outer.lineno}; the loop at line {inner.lineno} steps it past its bound "
                    f"on the first pass, and every later pass of the loop at line "
                    f"{outer.lineno} finds it still there and skips its work",
                    f"{counted(unwritten, 'element')} of {ctx.output} never written",
                    f"line {first.lineno}: set `{ast.unparse(first)}` again at the top of the "
                    f"loop at line {outer.lineno}, just before line {inner.lineno}")
    return None
