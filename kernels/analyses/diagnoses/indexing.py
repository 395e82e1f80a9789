"""Rules about which elements each thread takes: work indexed by the thread
alone, the seed's ``B[tid, col]`` and loops sized from A, chunks that run
past C, loops bounded by the launch or by a fixed number."""
from __future__ import annotations

import ast

import numpy as np

from ...words import counted
from ..hazards import thread_name
from .diagnosis import Diagnosis
from .source import Context, names_in, sources_of, subscript_text


def _subscripts(node: ast.AST, array: str, store: bool) -> list[ast.Subscript]:
    kind = ast.Store if store else ast.Load
    return [s for s in ast.walk(node) if isinstance(s, ast.Subscript)
            and isinstance(s.ctx, kind) and isinstance(s.value, ast.Name)
            and s.value.id == array]


def _elements(index: ast.expr) -> list[ast.expr]:
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def _range_args(loop: ast.For) -> list[ast.expr] | None:
    call = loop.iter
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
            and call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords:
        return list(call.args)
    return None


def _loops(ctx: Context) -> list[tuple[ast.For, list[ast.expr]]]:
    """Every ``for name in range(...)`` of the kernel, with range's arguments;
    ``r = range(...)`` then ``for i in r`` too (the seed's idiom)."""
    found = []
    for node in ast.walk(ctx.kernel):
        if not (isinstance(node, ast.For) and isinstance(node.target, ast.Name)):
            continue
        args = _range_args(node)
        if args is None and isinstance(node.iter, ast.Name):
            assigned = ctx._assigned.get(node.iter.id) or []
            if len(assigned) == 1 and assigned[0] is not None:
                args = _range_args(ast.For(target=node.target, iter=assigned[0], body=[],
                                           orelse=[]))
        if args is not None:
            found.append((node, args))
    return found


def thread_index_only(ctx: Context) -> Diagnosis | None:
    """The output indexed from ``threadIdx`` without ``blockIdx``: every block
    repeats block 0's elements.  Evidence: elements written by threads of
    more than one block."""
    grid, block = ctx.grid, ctx.block
    blocks = grid[0] * grid[1]
    if blocks < 2:
        return None
    every = _subscripts(ctx.kernel, ctx.output, store=True)
    stores = [s for s in every if "threadIdx" in sources_of(s.slice, ctx.env)]
    if not stores or any("blockIdx" in sources_of(s.slice, ctx.env) for s in every):
        return None
    maps = ctx.result.maps
    per_block = block[0] * block[1]
    crossed = (maps.count >= 1) & (maps.min_writer // per_block != maps.max_writer // per_block)
    shared = int(np.count_nonzero(crossed))
    if not shared:
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(crossed)), crossed.shape))
    low, high = (int(maps.min_writer[first]) // per_block,
                 int(maps.max_writer[first]) // per_block)
    lines = tuple(sorted({s.lineno for s in stores}))
    kernel = ctx.result.kernel
    one_d = (kernel.launch_dims if kernel is not None else len(ctx.result.request.block)) == 1
    return Diagnosis(
        "thread-index-only", lines,
        f"{ctx.output}[{subscript_text(stores[0].slice)}] at line {lines[0]} is indexed from "
        f"cuda.threadIdx but never cuda.blockIdx, so each of the {blocks:,} blocks computes "
        f"the same elements as block 0",
        f"{counted(shared, 'element')} of {ctx.output} written by threads of more than one "
        f"block; the first, [{', '.join(map(str, first))}], by blocks "
        f"({low % grid[0]}, {low // grid[0]}) and ({high % grid[0]}, {high // grid[0]})",
        f"index with the global thread id, `cuda.grid({1 if one_d else 2})` (blockIdx * "
        f"blockDim + threadIdx), and share the work among the whole grid's threads, "
        f"`cuda.gridsize({1 if one_d else 2})`, not the block's")


def thread_as_reduction_index(ctx: Context) -> Diagnosis | None:
    """The seed's ``B[tid, col]``: B's row taken from the thread where the
    sum's own index belongs.  Evidence: B's rows read are the threads', not
    0..K-1 (rows past B's end, or rows never read), or C is wrong."""
    a, b = ctx.role("A"), ctx.role("B")
    if a is None or b is None:
        return None
    for load in _subscripts(ctx.kernel, b, store=False):
        elements = _elements(load.slice)
        if len(elements) != 2 or "threadIdx" not in sources_of(elements[0], ctx.env):
            continue
        for loop in ctx.loops_around(load):
            if not isinstance(loop.target, ast.Name):
                continue
            index = loop.target.id
            if index in names_in(load.slice):
                break  # (the sum's index is in B's subscript: not this pattern)
            if not any(len(_elements(s.slice)) == 2 and index in names_in(_elements(s.slice)[1])
                       for s in _subscripts(loop, a, store=False)):
                continue
            evidence = _b_rows_evidence(ctx, b)
            if evidence is None:
                return None
            fixed = f"{b}[{index}, {ast.unparse(elements[1])}]"
            return Diagnosis(
                "thread-as-reduction-index", (load.lineno,),
                f"`{ast.unparse(load)}` at line {load.lineno} takes {b}'s row from the thread "
                f"(`{ast.unparse(elements[0])}`), where the sum over `{index}` (line "
                f"{loop.lineno}) needs `{fixed}`: each thread multiplies a row of {a} by its "
                f"own row of {b}",
                evidence,
                f"line {load.lineno}: `{fixed}`")
    return None


def _b_rows_evidence(ctx: Context, b: str) -> str | None:
    k = ctx.shapes[b][0]
    reads = ctx.result.maps.reads_b
    unread = int(np.count_nonzero(reads.reshape(k, -1).sum(axis=1) == 0)) if reads.size else 0
    oob = next((o for o in ctx.result.maps.out_of_bounds
                if o.array == b and o.direction == "read" and o.count), None)
    if oob is not None and oob.first_index is not None and oob.first_index[0] >= k:
        return (f"{b} has {counted(k, 'row')} (K); threads read past them: "
                f"{counted(oob.count, 'out-of-bounds read')} of {b}, the first at "
                f"[{', '.join(map(str, oob.first_index))}]")
    if unread:
        return f"{counted(unread, 'row')} of {b}'s {k:,} never read"
    wrong = ctx.result.verdict.errors.wrong
    if wrong:
        return (f"{counted(wrong, 'element')} of {ctx.output} off their bound (every row of "
                f"{b} read, each by its own thread for the whole sum)")
    return None


def work_from_a(ctx: Context) -> Diagnosis | None:
    """C's columns bounded by A's rows (``n = A.shape[0]`` for both loops):
    right only where C is square.  Evidence: columns of C never written, or
    written past its end."""
    a = ctx.role("A")
    shape = ctx.result.maps.count.shape
    if a is None or len(shape) != 2 or shape[0] == shape[1]:
        return None
    rows_of_a = f"{a}.shape[0]"
    for store in _subscripts(ctx.kernel, ctx.output, store=True):
        elements = _elements(store.slice)
        if len(elements) != 2 or not isinstance(elements[1], ast.Name):
            continue
        column = elements[1].id
        loop = next((lp for lp in ctx.loops_around(store) if isinstance(lp.target, ast.Name)
                     and lp.target.id == column), None)
        args = _range_args(loop) if loop is not None else None
        if args is None:
            continue
        bound = args[0] if len(args) == 1 else args[1]
        made_of = sources_of(bound, ctx.env)
        if rows_of_a not in made_of or f"{ctx.output}.shape[1]" in made_of:
            continue
        m, n = shape
        maps = ctx.result.maps
        if n > m:
            unwritten = int(np.count_nonzero(maps.count[:, m:] == 0))
            if not unwritten:
                return None
            evidence = (f"columns {m:,}-{n - 1:,} of {ctx.output} never written "
                        f"({counted(unwritten, 'element')})")
        else:
            oob = next((o for o in maps.out_of_bounds
                        if o.array == ctx.output and o.direction == "write" and o.count), None)
            if oob is None:
                return None
            evidence = (f"{counted(oob.count, 'out-of-bounds write')} of {ctx.output}, the "
                        f"first at [{', '.join(map(str, oob.first_index or ()))}]")
        return Diagnosis(
            "work-from-a", (loop.lineno,),
            f"`{column}`, {ctx.output}'s column, runs to `{ast.unparse(bound)}` = {a}.shape[0] "
            f"= {m:,} (A's rows) at line {loop.lineno}, but {ctx.output} has {n:,} columns: "
            f"the work is derived from A, not from {ctx.output}",
            evidence,
            f"line {loop.lineno}: `for {column} in range({ctx.output}.shape[1]):`")
    return None


def unguarded_chunk_end(ctx: Context) -> Diagnosis | None:
    """``for i in range(start, start + chunk)`` with a ceiling-divided chunk
    and no test against C's size: the last threads run past its end.
    Evidence: writes outside C, with more chunked elements than C holds."""
    oob = next((o for o in ctx.result.maps.out_of_bounds
                if o.array == ctx.output and o.direction == "write" and o.count), None)
    if oob is None:
        return None
    size = int(ctx.result.maps.count.size)
    for loop, args in _loops(ctx):
        if len(args) != 2 or not isinstance(args[1], ast.BinOp) \
                or not isinstance(args[1].op, ast.Add):
            continue
        start, stop = args
        if ast.dump(stop.left) == ast.dump(start):
            chunk_expr = stop.right
        elif ast.dump(stop.right) == ast.dump(start):
            chunk_expr = stop.left
        else:
            continue
        stores = _subscripts(loop, ctx.output, store=True)
        if not stores or any(isinstance(node, ast.If) for store in stores
                             for node in _between(ctx, store, loop)):
            continue
        chunk = ctx.value(chunk_expr)
        per_block = ctx.block[0] * ctx.block[1]
        if chunk is None or per_block * chunk <= size:
            continue
        variable = loop.target.id
        return Diagnosis(
            "unguarded-chunk-end", (loop.lineno,),
            f"each thread's loop at line {loop.lineno} covers `{ast.unparse(chunk_expr)}` = "
            f"{chunk:,} elements from `{ast.unparse(start)}`, rounded up, and nothing stops it "
            f"at the end of {ctx.output}: {per_block:,} threads x {chunk:,} = "
            f"{per_block * chunk:,} elements, past its {size:,}",
            f"{counted(oob.count, 'out-of-bounds write')} of {ctx.output}; the first by "
            f"{thread_name(oob.first_thread, ctx.grid, ctx.block)} at "
            f"[{', '.join(map(str, oob.first_index or ()))}]",
            f"line {loop.lineno}: `for {variable} in range({ast.unparse(start)}, "
            f"min({ast.unparse(stop)}, {ctx.output}.size)):`")
    return None


def _between(ctx: Context, node: ast.AST, ancestor: ast.AST) -> list[ast.AST]:
    """The nodes between ``node`` and its ``ancestor`` (both excluded)."""
    path = []
    node = ctx.parents.get(node)
    while node is not None and node is not ancestor:
        path.append(node)
        node = ctx.parents.get(node)
    return path


def launch_bounded_loop(ctx: Context) -> Diagnosis | None:
    """A loop over K's tiles bounded by the launch (``range(cuda.gridDim.x)``)
    where the data's size is needed.  Evidence: columns of A past what the
    loop covers never read."""
    a = ctx.role("A")
    if a is None:
        return None
    k = ctx.shapes[a][1]
    for loop, args in _loops(ctx):
        bound = args[0] if len(args) == 1 else args[1]
        made_of = sources_of(bound, ctx.env)
        if not made_of & {"gridDim", "blockDim"} or any(
                "shape[" in source or source.endswith(".size") for source in made_of):
            continue
        variable = loop.target.id
        tile_expr = _tile_of(loop, variable, a)
        trips, tile = ctx.value(bound), ctx.value(tile_expr) if tile_expr is not None else None
        if tile_expr is None or trips is None or tile is None or trips * tile >= k:
            continue
        reads = ctx.result.maps.reads_a.reshape(-1, k)
        unread = int(np.count_nonzero(reads[:, trips * tile:].sum(axis=0) == 0))
        if not unread:
            return None
        quantity = "cuda.gridDim" if "gridDim" in made_of else "cuda.blockDim"
        tile_text = ast.unparse(tile_expr)
        return Diagnosis(
            "launch-bounded-loop", (loop.lineno,),
            f"the loop over tiles at line {loop.lineno} runs `{ast.unparse(bound)}` = {trips:,} "
            f"times, a launch quantity ({quantity}), so its tiles of {tile_text} = {tile:,} "
            f"cover {trips * tile:,} of K = {k:,}",
            f"columns {trips * tile:,}-{k - 1:,} of {a} never read "
            f"({counted(unread, 'column')}); "
            f"{counted(ctx.result.verdict.errors.wrong, 'element')} of {ctx.output} off "
            f"their bound",
            f"line {loop.lineno}: `for {variable} in range(({a}.shape[1] + {tile_text} - 1) // "
            f"{tile_text}):`")
    return None


def _tile_of(loop: ast.For, variable: str, a: str) -> ast.expr | None:
    """``TPB`` where A's column subscript in ``loop`` holds ``variable * TPB``."""
    for load in _subscripts(loop, a, store=False):
        elements = _elements(load.slice)
        if len(elements) != 2:
            continue
        for node in ast.walk(elements[1]):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                if isinstance(node.left, ast.Name) and node.left.id == variable:
                    return node.right
                if isinstance(node.right, ast.Name) and node.right.id == variable:
                    return node.left
    return None


def fixed_size(ctx: Context) -> Diagnosis | None:
    """A loop bounded or stepped by a module constant or a literal that this
    run's sizes or launch do not match (``n = 1600`` against A of 100 x 37, a
    stride of 1024 on 512 threads).  Evidence: accesses past the array's end,
    or elements never written or written twice."""
    threads = ctx.block[0] * ctx.block[1] * ctx.grid[0] * ctx.grid[1]
    for loop, args in _loops(ctx):
        variable = loop.target.id
        bound = args[0] if len(args) == 1 else args[1]
        diagnosis = _fixed_bound(ctx, loop, variable, bound)
        if diagnosis is not None:
            return diagnosis
        if len(args) == 3:
            diagnosis = _fixed_step(ctx, loop, variable, args[2], threads)
            if diagnosis is not None:
                return diagnosis
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
        for access in _subscripts(loop, array, store=False) + _subscripts(loop, array,
                                                                            store=True):
            elements = _elements(access.slice)
            for dim, element in enumerate(elements):
                if not (isinstance(element, ast.Name) and element.id == variable) \
                        or dim >= len(shape) or value == shape[dim]:
                    continue
                extent = shape[dim]
                what = "rows" if dim == 0 else "columns"
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
                    # and B and writes every element of C)
                    k_dim = {ctx.role("A"): 1, ctx.role("B"): 0}.get(array)
                    if array != ctx.output and dim != k_dim:
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
        part = maps.count[value:] if dim == 0 else maps.count[:, value:]
        unwritten = int(np.count_nonzero(part == 0))
        return (f"{counted(unwritten, 'element')} of {array} past index {value:,} never "
                "written") if unwritten else None
    reads = maps.reads_a if array == ctx.role("A") else maps.reads_b
    part = reads[value:] if dim == 0 else reads[:, value:]
    unread = int(np.count_nonzero(part == 0))
    return (f"{counted(unread, 'element')} of {array} past index {value:,} never read"
            if unread else None)


def _fixed_step(ctx: Context, loop: ast.For, variable: str, step: ast.expr, threads: int):
    fixed = _fixed(ctx, step)
    if fixed is None:
        return None
    named, value = fixed
    if value == threads or not _subscripts(loop, ctx.output, store=True):
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
    return Diagnosis(
        "fixed-size", (loop.lineno,),
        f"the loop at line {loop.lineno} steps by {named}, but this launch has "
        f"{threads:,} threads ({grid} blocks of {block}): {effect}",
        evidence,
        "step by the launch's own thread count, `cuda.gridsize(1)`, from `cuda.grid(1)`")


def shifted_index(ctx: Context) -> Diagnosis | None:
    """``partial[col + 1]``, ``C[x - 1, y - 1]``: a subscript shifted by a
    constant, so the thread at the edge reaches one (or c) past it.
    Evidence: the first out-of-bounds access of that array is exactly there."""
    grid, block = ctx.grid, ctx.block
    for oob in ctx.result.maps.out_of_bounds:
        shape = ctx.shapes.get(oob.array)
        if not oob.count or oob.first_index is None or shape is None \
                or len(shape) != len(oob.first_index):
            continue
        store = oob.direction == "write"
        for access in _subscripts(ctx.kernel, oob.array, store=store):
            for dim, element in enumerate(_elements(access.slice)):
                shift = _shift(element)
                if shift is None or dim >= len(shape):
                    continue
                name, offset = shift
                extent = shape[dim]
                edge = extent - 1 + offset if offset > 0 else offset
                if oob.first_index[dim] != edge:
                    continue
                side = "end" if offset > 0 else "start"
                past = f"{abs(offset)} past its {side}" if abs(offset) > 1 else \
                    f"one past its {side}"
                at = extent - 1 if offset > 0 else 0
                verb = "writes" if store else "reads"
                if store and oob.array == ctx.output:
                    elements = _elements(access.slice)
                    unshifted = [ast.Name(id=_shift(e)[0]) if _shift(e) else e for e in elements]
                    fixed = f"{oob.array}[{', '.join(ast.unparse(e) for e in unshifted)}]"
                    fix = f"line {access.lineno}: `{fixed}` (each thread's own element)"
                else:
                    test = f"{name} + {offset} < {oob.array}.shape[{dim}]" if offset > 0 else \
                        f"{name} - {-offset} >= 0"
                    fix = (f"line {access.lineno}: {verb[:-1]} it only where it exists: "
                           f"`if {test}:`")
                index = ", ".join(map(str, oob.first_index))
                return Diagnosis(
                    "shifted-index", (access.lineno,),
                    f"`{ast.unparse(access)}` at line {access.lineno} shifts `{name}` by "
                    f"{offset:+d}, so the thread with {name} = {at} {verb} {oob.array} "
                    f"{past} ({oob.array} has {extent:,} "
                    f"{'elements' if len(shape) == 1 else ('rows' if dim == 0 else 'columns')})",
                    f"{counted(oob.count, 'out-of-bounds ' + oob.direction)} of {oob.array}; "
                    f"the first by {thread_name(oob.first_thread, grid, block)} at [{index}]",
                    fix)
    return None


def _shift(element: ast.expr) -> tuple[str, int] | None:
    """(name, c) for ``name + c`` or ``name - c`` (c a literal int)."""
    if isinstance(element, ast.BinOp) and isinstance(element.op, (ast.Add, ast.Sub)) \
            and isinstance(element.left, ast.Name) and isinstance(element.right, ast.Constant) \
            and isinstance(element.right.value, int) and element.right.value > 0:
        value = element.right.value
        return element.left.id, value if isinstance(element.op, ast.Add) else -value
    return None


def crossed_index(ctx: Context) -> Diagnosis | None:
    """In ``A[r, k] * B[k, c]`` for ``C[r, c]``: B read transposed
    (``B[c, k]``), or B's column taken from C's row (``B[k, r]``).
    Evidence: elements of C off their bound."""
    a, b = ctx.role("A"), ctx.role("B")
    wrong = ctx.result.verdict.errors.wrong
    if a is None or b is None or not wrong:
        return None
    for store in _subscripts(ctx.kernel, ctx.output, store=True):
        elements = _elements(store.slice)
        if len(elements) != 2:
            continue
        row_names, column_names = names_in(elements[0]), names_in(elements[1])
        for load in _subscripts(ctx.kernel, b, store=False):
            b_row, b_column = (_elements(load.slice) + [None, None])[:2]
            product = ctx.parents.get(load)
            if b_column is None or not (isinstance(product, ast.BinOp)
                                        and isinstance(product.op, ast.Mult)):
                continue
            other = product.left if product.right is load else product.right
            if not (isinstance(other, ast.Subscript) and isinstance(other.value, ast.Name)
                    and other.value.id == a and len(_elements(other.slice)) == 2):
                continue
            a_column = names_in(_elements(other.slice)[1])
            k = next((lp.target.id for lp in ctx.loops_around(load)
                      if isinstance(lp.target, ast.Name) and lp.target.id in a_column), None)
            if k is None:
                continue
            b_row_names, b_column_names = names_in(b_row), names_in(b_column)
            c_text = subscript_text(store.slice)
            evidence = f"{counted(wrong, 'element')} of {ctx.output} off their bound"
            if k in b_column_names and k not in b_row_names and b_row_names & column_names:
                fixed = f"{b}[{k}, {ast.unparse(b_row)}]"
                return Diagnosis(
                    "crossed-index", (load.lineno,),
                    f"`{ast.unparse(load)}` at line {load.lineno} reads {b} transposed: its row "
                    f"is `{ast.unparse(b_row)}`, {ctx.output}'s column index, and its column "
                    f"`{k}`, the sum's index, where {ctx.output}[{c_text}] (line "
                    f"{store.lineno}) needs `{fixed}`",
                    evidence, f"line {load.lineno}: `{fixed}`")
            if k in b_row_names and not b_column_names & column_names \
                    and b_column_names & row_names:
                fixed = f"{b}[{ast.unparse(b_row)}, {ast.unparse(elements[1])}]"
                crossed = sorted(b_column_names & row_names)[0]
                return Diagnosis(
                    "crossed-index", (load.lineno,),
                    f"`{ast.unparse(load)}` at line {load.lineno} takes {b}'s column from "
                    f"`{crossed}`, {ctx.output}'s row index, where {ctx.output}[{c_text}] (line "
                    f"{store.lineno}) needs {b}'s column to be its own, "
                    f"`{ast.unparse(elements[1])}`",
                    evidence, f"line {load.lineno}: `{fixed}`")
    return None
