"""Rules about loops: chunks that run past C, loops over K's tiles bounded
by the launch, loops bounded or stepped by a fixed number."""
from __future__ import annotations

import ast

import numpy as np

from ...words import counted
from ..hazards import thread_name
from .diagnosis import Diagnosis
from .source import (
    LAUNCH,
    Context,
    called,
    extent_word,
    names_in,
    range_loops,
    shape_ref,
    sources_of,
    subscript_parts,
    subscripts,
)


def _chunk_loops(ctx: Context) -> list[tuple[ast.For, ast.expr, ast.expr, ast.expr]]:
    """(loop, start, stop, chunk) of each ``for i in range(start, start +
    chunk)`` (or ``chunk + start``): a thread's chunk of the elements."""
    found = []
    for loop, args in range_loops(ctx):
        if len(args) != 2 or not isinstance(args[1], ast.BinOp) \
                or not isinstance(args[1].op, ast.Add):
            continue
        start, stop = args
        if ast.dump(stop.left) == ast.dump(start):
            found.append((loop, start, stop, stop.right))
        elif ast.dump(stop.right) == ast.dump(start):
            found.append((loop, start, stop, stop.left))
    return found


def unguarded_chunk_end(ctx: Context) -> Diagnosis | None:
    """``for i in range(start, start + chunk)`` with a ceiling-divided chunk
    and no test against C's size: the last threads run past its end.
    Evidence: writes outside C, with more chunked elements than C holds."""
    oob = next((o for o in ctx.result.maps.out_of_bounds
                if o.array == ctx.output and o.direction == "write" and o.count), None)
    if oob is None:
        return None
    shape = ctx.shapes.get(ctx.output) or tuple(ctx.result.maps.count.shape)
    for loop, start, stop, chunk_expr in _chunk_loops(ctx):
        stores = subscripts(loop, ctx.output, store=True)
        if not stores or any(isinstance(node, ast.If) for store in stores
                             for node in _between(ctx, store, loop)):
            continue
        chunk = ctx.value(chunk_expr)
        # (the threads the chunks are dealt to: the grid's where the start is
        # placed by blockIdx, else one block's, each block from the start)
        threads = ctx.block[0] * ctx.block[1] * (
            ctx.grid[0] * ctx.grid[1] if "blockIdx" in sources_of(start, ctx.env) else 1)
        variable = loop.target.id
        # (a chunk of flat elements is measured against the output's size; a
        # chunk of rows, `C[r, c]` with r the loop's, against its rows)
        unit, extent, end = "elements", int(np.prod(shape)), f"{ctx.output}.size"
        for store in stores:
            parts = subscript_parts(store.slice)
            dim = next((d for d, p in enumerate(parts) if isinstance(p, ast.Name)
                        and p.id == variable), None)
            if len(parts) == len(shape) > 1 and dim is not None:
                unit = extent_word(shape, dim)
                extent, end = shape[dim], f"{ctx.output}.shape[{dim}]"
                break
        if chunk is None or threads * chunk <= extent:
            continue
        return Diagnosis(
            "unguarded-chunk-end", (loop.lineno,),
            f"each thread's loop at line {loop.lineno} covers `{ast.unparse(chunk_expr)}` = "
            f"{chunk:,} {unit} from `{ast.unparse(start)}`, rounded up, and nothing stops it "
            f"at the end of {ctx.output}: {threads:,} threads x {chunk:,} = "
            f"{threads * chunk:,} {unit}, past its {extent:,}",
            f"{counted(oob.count, 'out-of-bounds write')} of {ctx.output}; the first by "
            f"{thread_name(oob.first_thread, ctx.grid, ctx.block)} at "
            f"[{', '.join(map(str, oob.first_index or ()))}]",
            f"line {loop.lineno}: `for {variable} in range({ast.unparse(start)}, "
            f"min({ast.unparse(stop)}, {end})):`")
    return None


def rounded_down_chunk(ctx: Context) -> Diagnosis | None:
    """``for i in range(start, start + chunk)`` with ``chunk`` a quotient
    rounded down (``int(C.size / cuda.gridsize(1))``, ``C.size // threads``):
    the remainder is no thread's, and the last elements of C are never
    written.  Evidence: exactly the elements past threads x chunk unwritten."""
    maps = ctx.result.maps
    size = int(maps.count.size)
    for loop, start, stop, chunk_expr in _chunk_loops(ctx):
        if not subscripts(loop, ctx.output, store=True):
            continue
        chunk = ctx.value(chunk_expr)
        threads = ctx.block[0] * ctx.block[1] * ctx.grid[0] * ctx.grid[1]
        if not chunk or threads * chunk >= size:
            continue
        flat = maps.count.reshape(-1)
        covered = threads * chunk
        if np.count_nonzero(flat[covered:] == 0) != size - covered \
                or np.count_nonzero(flat[:covered] == 0):
            continue  # (not exactly the tail left: some other cause)
        rounding = next((ast.unparse(n) for n in ast.walk(_defining(ctx, chunk_expr))
                         if isinstance(n, ast.Call) and called(n) == "int"
                         or isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv)),
                        None)
        if rounding is None:
            continue
        variable = loop.target.id
        defined = getattr(_defining(ctx, chunk_expr), "lineno", loop.lineno)
        return Diagnosis(
            "rounded-down-chunk", tuple(sorted({defined, loop.lineno})),
            f"each thread's loop at line {loop.lineno} covers `{ast.unparse(chunk_expr)}` = "
            f"{chunk:,} elements, rounded down by `{rounding}`: {threads:,} threads x "
            f"{chunk:,} = {covered:,} elements, short of {ctx.output}'s {size:,}, and the "
            f"remaining {size - covered:,} are no thread's",
            f"the last {counted(size - covered, 'element')} of {ctx.output} never written, "
            "and every other written",
            f"line {defined}: round up, and stop at the end: `{ast.unparse(chunk_expr)} = "
            f"-(-{ctx.output}.size // cuda.gridsize(1))`, and `for {variable} in "
            f"range({ast.unparse(start)}, min({ast.unparse(stop)}, {ctx.output}.size)):`")
    return None


def _defining(ctx: Context, expr: ast.expr) -> ast.expr:
    """``expr``, or, for a name assigned once, the expression assigned to it."""
    if isinstance(expr, ast.Name):
        assigned = ctx.assigned.get(expr.id)
        if assigned and len(assigned) == 1 and assigned[0] is not None:
            return assigned[0]
    return expr


def _between(ctx: Context, node: ast.AST, ancestor: ast.AST) -> list[ast.AST]:
    """The nodes between ``node`` and its ``ancestor`` (both excluded)."""
    path = []
    node = ctx.parents.get(node)
    while node is not None and node is not ancestor:
        path.append(node)
        node = ctx.parents.get(node)
    return path


def launch_bounded_loop(ctx: Context) -> Diagnosis | None:
    """A loop over tiles bounded by the launch (``range(cuda.gridDim.x)``)
    where the data's size is needed: its tiles, ``i * TPB``, cover less of
    the array they step through than it holds (a matmul's K, a described
    kernel's row or column).  Evidence: that array's elements past what the
    loop covers never read."""
    for loop, args in range_loops(ctx):
        bound = args[0] if len(args) == 1 else args[1]
        made_of = sources_of(bound, ctx.env)
        if not made_of & {"gridDim", "blockDim"} or any(
                "shape[" in source or source.endswith(".size") for source in made_of):
            continue
        variable = loop.target.id
        trips = ctx.value(bound)
        for array, dim, tile_expr in _tiles_of(ctx, loop, variable):
            tile = ctx.value(tile_expr)
            shape = ctx.shapes.get(array)
            reads = ctx.reads_of(array)
            if trips is None or tile is None or shape is None or reads is None \
                    or dim >= len(shape) or trips * tile >= shape[dim]:
                continue
            extent = shape[dim]
            past = reads[(slice(None),) * dim + (slice(trips * tile, None),)]
            # (a slice of the array along dim, none of whose elements was read)
            other = tuple(d for d in range(reads.ndim) if d != dim)
            unread = int(np.count_nonzero(past.sum(axis=other) == 0)) if other else \
                int(np.count_nonzero(past == 0))
            if not unread:
                continue
            quantity = "cuda.gridDim" if "gridDim" in made_of else "cuda.blockDim"
            tile_text = ast.unparse(tile_expr)
            what = extent_word(shape, dim)
            matmul_k = ctx.matmul and array == ctx.role("A") and dim == 1
            covered = f"K = {extent:,}" if matmul_k else f"{array}'s {extent:,} {what}"
            wrong = ctx.result.verdict.errors.wrong
            return Diagnosis(
                "launch-bounded-loop", (loop.lineno,),
                f"the loop over tiles at line {loop.lineno} runs `{ast.unparse(bound)}` = "
                f"{trips:,} times, a launch quantity ({quantity}), so its tiles of {tile_text} "
                f"= {tile:,} cover {trips * tile:,} of {covered}",
                f"{what} {trips * tile:,}-{extent - 1:,} of {array} never read "
                f"({counted(unread, what[:-1] if what.endswith('s') else what)})"
                + (f"; {counted(wrong, 'element')} of {ctx.output} off their bound"
                   if wrong else ""),
                f"line {loop.lineno}: `for {variable} in range(({array}.shape[{dim}] + "
                f"{tile_text} - 1) // {tile_text}):`")
    return None


def _tiles_of(ctx: Context, loop: ast.For, variable: str) -> list[tuple[str, int, ast.expr]]:
    """(array, dim, ``TPB``) where a read of an array in ``loop`` has
    ``variable * TPB`` in its index at ``dim``: the tiles the loop steps
    through (A first for a matmul: its columns are K)."""
    found = []
    arrays = sorted(ctx.shapes, key=lambda name: name != ctx.role("A"))
    for array in arrays:
        for load in subscripts(loop, array, store=False):
            for dim, element in enumerate(subscript_parts(load.slice)):
                # (`col = m * TPB + t`, then `A[row, col]`: the name's one value)
                for node in ast.walk(_defining(ctx, element)):
                    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                        if isinstance(node.left, ast.Name) and node.left.id == variable:
                            found.append((array, dim, node.right))
                        elif isinstance(node.right, ast.Name) and node.right.id == variable:
                            found.append((array, dim, node.left))
    return found


def fixed_size(ctx: Context) -> Diagnosis | None:
    """A loop bounded or stepped by a module constant or a literal that this
    run's sizes or launch do not match (``n = 1600`` against A of 100 x 37, a
    stride of 1024 on 512 threads).  Evidence: accesses past the array's end,
    or elements never written or written twice."""
    threads = ctx.block[0] * ctx.block[1] * ctx.grid[0] * ctx.grid[1]
    for loop, args in range_loops(ctx):
        variable = loop.target.id
        bound = args[0] if len(args) == 1 else args[1]
        diagnosis = _fixed_bound(ctx, loop, variable, bound)
        if diagnosis is not None:
            return diagnosis
        if len(args) == 3:
            diagnosis = _fixed_step(ctx, loop, variable, args[2], threads)
            if diagnosis is not None:
                return diagnosis
    for guard in (node for node in ast.walk(ctx.kernel) if isinstance(node, ast.If)):
        diagnosis = _fixed_guard(ctx, guard)
        if diagnosis is not None:
            return diagnosis
    return None


def _fixed_guard(ctx: Context, guard: ast.If) -> Diagnosis | None:
    """``if x < n and y < n:`` with ``n`` a module constant (``n = bpg * tpb``)
    past the extent of an array the guarded code indexes with ``x``: the
    threads past that extent pass the test.  Evidence: out-of-bounds accesses
    of that array, the first past the extent in that dimension."""
    tests = guard.test.values if isinstance(guard.test, ast.BoolOp) \
        and isinstance(guard.test.op, ast.And) else [guard.test]
    for test in tests:
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Lt, ast.LtE))
                and isinstance(test.left, ast.Name)
                and sources_of(test.left, ctx.env) & set(LAUNCH)):
            continue
        fixed = _fixed(ctx, test.comparators[0])
        if fixed is None:
            continue
        named, value = fixed
        coordinate = test.left.id
        # (the output first: its edge is what the guard is for)
        for array, shape in sorted(ctx.shapes.items(), key=lambda item: item[0] != ctx.output):
            for access in (a for statement in guard.body
                           for a in subscripts(statement, array, store=False)
                           + subscripts(statement, array, store=True)):
                for dim, element in enumerate(subscript_parts(access.slice)):
                    if not (isinstance(element, ast.Name) and element.id == coordinate) \
                            or dim >= len(shape) or value <= shape[dim]:
                        continue
                    direction = "write" if isinstance(access.ctx, ast.Store) else "read"
                    oob = next((o for o in ctx.result.maps.out_of_bounds
                                if o.array == array and o.direction == direction and o.count
                                and o.first_index is not None
                                and o.first_index[dim] >= shape[dim]), None)
                    if oob is None:
                        continue
                    what = extent_word(shape, dim)
                    return Diagnosis(
                        "fixed-size", (guard.lineno,),
                        f"{named} bounds `{coordinate}` in the guard at line {guard.lineno}, "
                        f"but this run's {array} has {shape[dim]:,} {what}: the threads past "
                        f"its edge pass the test",
                        f"{counted(oob.count, 'out-of-bounds ' + direction)} of {array}, the "
                        f"first at [{', '.join(map(str, oob.first_index))}]",
                        f"line {guard.lineno}: test against the array's own size, "
                        f"`{coordinate} < {array}.shape[{dim}]`")
    return None


def _fixed(ctx: Context, expr: ast.expr) -> tuple[str, int] | None:
    """(how it is named, its value) where ``expr`` is a module constant or an
    integer literal above 1."""
    value = ctx.value(expr)
    if value is None:
        return None
    name = ctx.fixed_by_module(expr)
    if name is not None:
        line = ctx.constant_lines.get(name)
        return (f"`{name}` = {value:,}" + (f" (line {line})" if line else ""), value)
    if isinstance(expr, ast.Constant) and value > 1:
        return f"the literal {value:,}", value
    return None


def _fixed_bound(ctx: Context, loop: ast.For, variable: str, bound: ast.expr):
    fixed = _fixed(ctx, bound)
    if fixed is None:
        return None
    named, value = fixed
    for array, shape in ctx.shapes.items():
        for access in subscripts(loop, array, store=False) + subscripts(loop, array,
                                                                            store=True):
            elements = subscript_parts(access.slice)
            for dim, element in enumerate(elements):
                if not (isinstance(element, ast.Name) and element.id == variable) \
                        or dim >= len(shape) or value == shape[dim]:
                    continue
                extent = shape[dim]
                what = extent_word(shape, dim)
                if value > extent:
                    direction = "write" if isinstance(access.ctx, ast.Store) else "read"
                    oob = next((o for o in ctx.result.maps.out_of_bounds
                                if o.array == array and o.direction == direction and o.count
                                and o.first_index is not None
                                and o.first_index[dim] >= extent), None)
                    if oob is None:
                        continue
                    evidence = (f"{counted(oob.count, 'out-of-bounds ' + direction)} of "
                                f"{array}, the first at "
                                f"[{', '.join(map(str, oob.first_index))}]")
                    effect = f"the loop runs past {array}'s end"
                else:
                    # (short of K, or of C: a matmul reads every element of A
                    # and B and writes every element of C; a described
                    # kernel, any array it indexes by the loop's variable)
                    k_dim = {ctx.role("A"): 1, ctx.role("B"): 0}.get(array)
                    if array != ctx.output and dim != k_dim and ctx.matmul:
                        continue
                    evidence = _short_evidence(ctx, array, dim, value, extent)
                    if evidence is None:
                        continue
                    effect = f"the loop stops short of {array}'s end"
                return Diagnosis(
                    "fixed-size", (loop.lineno,),
                    f"{named} bounds the loop at line {loop.lineno}, but this run's {array} "
                    f"has {extent:,} {what}: {effect}",
                    evidence,
                    f"line {loop.lineno}: bound it by the array's own size, "
                    f"`range({array}.shape[{dim}])`")
    return None


def _short_evidence(ctx: Context, array: str, dim: int, value: int, extent: int) -> str | None:
    maps = ctx.result.maps
    if array == ctx.output:
        # (as the kernel indexes it: a 1-D output is drawn wrapped, a 3-D one stacked)
        count = maps.count.reshape(ctx.shapes[array]) \
            if maps.count.size == int(np.prod(ctx.shapes[array])) else maps.count
        part = count[(slice(None),) * dim + (slice(value, None),)]
        unwritten = int(np.count_nonzero(part == 0))
        return (f"{counted(unwritten, 'element')} of {array} past index {value:,} never "
                "written") if unwritten else None
    reads = ctx.reads_of(array)
    if reads is None or dim >= reads.ndim:
        return None
    part = reads[(slice(None),) * dim + (slice(value, None),)]
    unread = int(np.count_nonzero(part == 0))
    return (f"{counted(unread, 'element')} of {array} past index {value:,} never read"
            if unread else None)


def _fixed_step(ctx: Context, loop: ast.For, variable: str, step: ast.expr, threads: int):
    fixed = _fixed(ctx, step)
    if fixed is None:
        return None
    named, value = fixed
    if value == threads or not subscripts(loop, ctx.output, store=True):
        return None
    maps = ctx.result.maps
    if value > threads:
        unwritten = int(np.count_nonzero(maps.count == 0))
        if not unwritten:
            return None
        effect = f"elements {threads:,}-{value - 1:,} of every {value:,} are never written"
        evidence = f"{counted(unwritten, 'element')} of {ctx.output} never written"
    else:
        collided = ctx.result.verdict.collided
        if not collided:
            return None
        effect = f"threads {value:,} apart store the same elements"
        evidence = f"{counted(collided, 'element')} of {ctx.output} written by more than one thread"
    grid = " x ".join(map(str, ctx.result.request.grid))
    block = " x ".join(map(str, ctx.result.request.block))
    # (a range kept in a variable, `work = range(..., 1024)` then `for e in work:`,
    # is read as the loop's own: its step is where the line to fix is)
    written = getattr(step, "lineno", loop.lineno)
    where = f"at line {loop.lineno}" if written == loop.lineno else \
        f"at line {loop.lineno} (its range at line {written})"
    return Diagnosis(
        "fixed-size", tuple(sorted({loop.lineno, written})),
        f"the loop {where} steps by {named}, but this launch has "
        f"{threads:,} threads ({grid} blocks of {block}): {effect}",
        evidence,
        "step by the launch's own thread count, `cuda.gridsize(1)`, from `cuda.grid(1)`")




def block_stride(ctx: Context) -> Diagnosis | None:
    """A grid-wide loop (from ``cuda.grid(1)``) that steps by the block
    (``cuda.blockDim.x``), as ``for i in range(start, n, step)`` or as a
    ``while`` with ``i += step``: threads of different blocks a block apart
    meet on the same elements.  Evidence: elements of the output written by
    more than one thread."""
    threads = ctx.block[0] * ctx.block[1] * ctx.grid[0] * ctx.grid[1]
    collided = ctx.result.verdict.collided
    if not collided:
        return None
    for loop, start, step in strided_loops(ctx):
        made = sources_of(step, ctx.env)
        if "blockDim" not in made or "gridDim" in made \
                or "blockIdx" not in sources_of(start, ctx.env):
            continue
        value = ctx.value(step)
        if value is None or value >= threads or not subscripts(loop, ctx.output, store=True):
            continue
        line = getattr(step, "lineno", loop.lineno)
        return Diagnosis(
            "block-stride", tuple(sorted({loop.lineno, line})),
            f"the loop at line {loop.lineno} starts each thread at `{ast.unparse(start)}`, "
            f"across the grid, but steps by `{ast.unparse(step)}` = {value:,}, one block: "
            f"the grid has {threads:,} threads, so threads of different blocks {value:,} "
            "apart store the same elements",
            f"{counted(collided, 'element')} of {ctx.output} written by more than one thread",
            f"line {line}: step by the whole grid, `cuda.gridsize(1)`")
    return None


def strided_loops(ctx: Context) -> list[tuple[ast.stmt, ast.expr, ast.expr]]:
    """(loop, start, step) of each ``for v in range(start, stop, step)`` and
    each ``while`` whose body does ``v += step`` for a ``v`` bound once
    before it (``i = cuda.grid(1)``)."""
    found = [(loop, args[0], args[2]) for loop, args in range_loops(ctx) if len(args) == 3]
    for loop in (node for node in ast.walk(ctx.kernel) if isinstance(node, ast.While)):
        for statement in loop.body:
            if not (isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add)
                    and isinstance(statement.target, ast.Name)):
                continue
            bound = [value for value in ctx.assigned.get(statement.target.id, [])
                     if value is not None]
            if len(bound) == 1:
                found.append((loop, bound[0], statement.value))
    return found


def bound_past_size(ctx: Context) -> Diagnosis | None:
    """``range(..., A.shape[1] + i % 3)``: a loop bound that adds to the
    array's own size, so some threads index past it.  Evidence: reads (or
    writes) past that dimension of the array."""
    for loop, args in range_loops(ctx):
        bound = args[0] if len(args) == 1 else args[1]
        if not (isinstance(bound, ast.BinOp) and isinstance(bound.op, ast.Add)):
            continue
        for size, extra in ((bound.left, bound.right), (bound.right, bound.left)):
            found = shape_ref(size)
            if found is None or found[0] not in ctx.shapes:
                continue
            array, dim = found
            extent = ctx.shapes[array][dim] if dim < len(ctx.shapes[array]) else None
            variable = loop.target.id
            indexed = any(dim < len(parts) and isinstance(parts[dim], ast.Name)
                          and parts[dim].id == variable
                          for parts in (subscript_parts(s.slice)
                                        for s in subscripts(loop, array, store=False)))
            oob = next((o for o in ctx.result.maps.out_of_bounds
                        if o.array == array and o.direction == "read" and o.count
                        and o.first_index is not None and extent is not None
                        and dim < len(o.first_index) and o.first_index[dim] >= extent), None)
            if not indexed or oob is None:
                continue
            what = extent_word(ctx.shapes[array], dim)
            start = ast.unparse(args[0]) + ", " if len(args) > 1 else ""
            return Diagnosis(
                "bound-past-size", (loop.lineno,),
                f"the loop at line {loop.lineno} runs `{variable}` up to "
                f"`{ast.unparse(bound)}`, past {array}'s {extent:,} {what} wherever "
                f"`{ast.unparse(extra)}` is above 0",
                f"{counted(oob.count, 'out-of-bounds read')} of {array}; the first by "
                f"{thread_name(oob.first_thread, ctx.grid, ctx.block)} at "
                f"[{', '.join(map(str, oob.first_index))}]",
                f"line {loop.lineno}: `for {variable} in range({start}{ast.unparse(size)}):`")
    return None


def skipped_terms(ctx: Context) -> Diagnosis | None:
    """A test inside the sum over k that leaves some of its terms out
    (``if (k + col) % 2 == 0: tmp += ...``).  Evidence: wrong values on
    random inputs and on all-ones inputs too (a short sum is short there)."""
    ones, errors = ctx.ones_errors, ctx.result.verdict.errors
    a = ctx.role("A")
    if a is None or ones is None or not errors.wrong or not ones.wrong:
        return None
    for loop, _ in range_loops(ctx):
        variable = loop.target.id
        for node in ast.walk(loop):
            if not isinstance(node, ast.If) or variable not in names_in(node.test):
                continue
            sizes = [n for n in ast.walk(node.test) if shape_ref(n) is not None
                     or (isinstance(n, ast.Attribute) and n.attr == "size")]
            if sizes:
                continue  # (a bounds test: not this rule)
            sums = [s for statement in node.body for s in ast.walk(statement)
                    if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                    and any(isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
                            and x.value.id == a for x in ast.walk(s.value))]
            if not sums:
                continue
            k = ctx.result.request.k
            return Diagnosis(
                "skipped-terms", (node.lineno,),
                f"the test `{ast.unparse(node.test)}` at line {node.lineno} leaves terms out "
                f"of the sum over `{variable}` (line {loop.lineno}): each element adds only "
                f"some of its {k:,} products",
                f"{counted(errors.wrong, 'element')} of {ctx.output} off their bound on random "
                f"inputs, and {counted(ones.wrong, 'element')} on all-ones inputs, where a "
                f"short sum is less than K = {k:,}",
                f"line {node.lineno}: drop the test: every `{variable}` from 0 to K - 1 belongs "
                "in the sum")
    return None
