"""Rules about which elements each thread takes and reads: work indexed by
the thread alone, the seed's ``B[tid, col]`` and loops sized from A, B read
with the wrong index, subscripts shifted past an edge."""
from __future__ import annotations

import ast

import numpy as np

from ...words import counted
from ..hazards import block_name, thread_name
from .diagnosis import Diagnosis
from .source import (
    Context,
    atomic_calls,
    extent_word,
    names_in,
    range_args,
    sources_of,
    subscript_parts,
    subscript_text,
    subscripts,
)


def thread_index_only(ctx: Context) -> Diagnosis | None:
    """The output indexed from ``threadIdx`` without ``blockIdx``: every block
    repeats block 0's elements.  Evidence: elements written by threads of
    more than one block."""
    grid, block = ctx.grid, ctx.block
    blocks = grid[0] * grid[1]
    if blocks < 2:
        return None
    every = subscripts(ctx.kernel, ctx.output, store=True)
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
        f"{block_name(low, grid)} and {block_name(high, grid)}",
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
    for load in subscripts(ctx.kernel, b, store=False):
        elements = subscript_parts(load.slice)
        if len(elements) != 2 or "threadIdx" not in sources_of(elements[0], ctx.env):
            continue
        for loop in ctx.loops_around(load):
            if not isinstance(loop.target, ast.Name):
                continue
            index = loop.target.id
            if index in names_in(load.slice):
                break  # (the sum's index is in B's subscript: not this pattern)
            a_columns = [subscript_parts(s.slice)[1] for s in subscripts(loop, a, store=False)
                         if len(subscript_parts(s.slice)) == 2]
            if not any(index in names_in(column) for column in a_columns):
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
    for store in subscripts(ctx.kernel, ctx.output, store=True):
        elements = subscript_parts(store.slice)
        if len(elements) != 2 or not isinstance(elements[1], ast.Name):
            continue
        column = elements[1].id
        loop = next((lp for lp in ctx.loops_around(store) if isinstance(lp.target, ast.Name)
                     and lp.target.id == column), None)
        args = range_args(loop) if loop is not None else None
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


def shifted_index(ctx: Context) -> Diagnosis | None:
    """``partial[col + 1]``, ``C[x - 1, y - 1]``, ``e = cuda.grid(1) - 40``
    then ``cuda.atomic.add(C, e, ...)``: an index shifted by a constant, so
    the threads at an edge reach past it.  Evidence: the first out-of-bounds
    access of that array is exactly where the shift puts the first thread
    that goes past."""
    grid, block = ctx.grid, ctx.block
    for oob in ctx.result.maps.out_of_bounds:
        shape = ctx.shapes.get(oob.array)
        if not oob.count or oob.first_index is None or shape is None:
            continue
        if len(oob.first_index) == 1 and len(shape) == 2:
            shape = (shape[0] * shape[1],)  # (a 2-D array indexed flat)
        if len(shape) != len(oob.first_index):
            continue
        store = oob.direction == "write"
        for line, text, parts in _indexings(ctx, oob.array, store):
            for dim, element in enumerate(parts):
                shift = _shift(ctx, element)
                if shift is None or dim >= len(shape):
                    continue
                base, offset, assigned_at = shift
                extent, first = shape[dim], oob.first_index[dim]
                if offset > 0 and first >= extent and first in (extent, offset):
                    at, beyond, side = max(extent - offset, 0), first - extent + 1, "past its end"
                elif offset < 0 and first == offset:
                    at, beyond, side = 0, -first, "before its start"
                else:
                    continue
                verb = "writes" if store else "reads"
                amount = "one" if beyond == 1 else f"{beyond:,}"
                unit = extent_word(shape, dim)
                shifted = f"`{text}` at line {line}" + (
                    f", with `{ast.unparse(element)} = {base} {'+' if offset > 0 else '-'} "
                    f"{abs(offset)}` (line {assigned_at})," if assigned_at else "")
                if store and oob.array == ctx.output:
                    fix = (f"line {assigned_at or line}: index each thread's own element, "
                           f"`{base}`, not `{base} {'+' if offset > 0 else '-'} {abs(offset)}`")
                else:
                    test = f"{base} + {offset} < {oob.array}.shape[{dim}]" if offset > 0 else \
                        f"{base} - {-offset} >= 0"
                    fix = f"line {line}: {verb[:-1]} it only where it exists: `if {test}:`"
                index = ", ".join(map(str, oob.first_index))
                return Diagnosis(
                    "shifted-index", tuple(sorted({line} | ({assigned_at} if assigned_at
                                                           else set()))),
                    f"{shifted} shifts `{base}` by {offset:+d}, so the thread "
                    f"with {base} = {at} {verb} {oob.array} {amount} {side} ({oob.array} has "
                    f"{extent:,} {unit})",
                    f"{counted(oob.count, 'out-of-bounds ' + oob.direction)} of {oob.array}; "
                    f"the first by {thread_name(oob.first_thread, grid, block)} at [{index}]",
                    fix)
    return None


def _indexings(ctx: Context, array: str, store: bool
               ) -> list[tuple[int, str, list[ast.expr]]]:
    """(line, the access as written, index parts) of each access to
    ``array``: its subscripts, and for writes ``cuda.atomic.*(array, index,
    ...)`` too."""
    found = [(s.lineno, ast.unparse(s), subscript_parts(s.slice))
             for s in subscripts(ctx.kernel, array, store)]
    if store:
        found += [(call.lineno, ast.unparse(call), subscript_parts(call.args[1]))
                  for call in atomic_calls(ctx.kernel, array)]
    return found


def _shift(ctx: Context, element: ast.expr) -> tuple[str, int, int | None] | None:
    """(what is shifted, c, the line of the name's assignment or None) for
    ``x + c`` or ``x - c`` (c a literal int), directly or through a name
    assigned once from it."""
    assigned_at = None
    if isinstance(element, ast.Name):
        values = ctx.assigned.get(element.id) or []
        definitions = [node for node in ast.walk(ctx.kernel) if isinstance(node, ast.Assign)
                       and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                       and node.targets[0].id == element.id]
        if len(values) != 1 or values[0] is None or len(definitions) != 1:
            return None
        element, assigned_at = values[0], definitions[0].lineno
    if isinstance(element, ast.BinOp) and isinstance(element.op, (ast.Add, ast.Sub)) \
            and isinstance(element.right, ast.Constant) \
            and isinstance(element.right.value, int) and element.right.value > 0 \
            and (isinstance(element.left, ast.Name) or assigned_at is not None):
        value = element.right.value
        return (ast.unparse(element.left), value if isinstance(element.op, ast.Add) else -value,
                assigned_at)
    return None


def crossed_index(ctx: Context) -> Diagnosis | None:
    """In ``A[r, k] * B[k, c]`` for ``C[r, c]``: B read transposed
    (``B[c, k]``), or B's column taken from C's row (``B[k, r]``).
    Evidence: elements of C off their bound."""
    a, b = ctx.role("A"), ctx.role("B")
    wrong = ctx.result.verdict.errors.wrong
    if a is None or b is None or not wrong:
        return None
    for store in subscripts(ctx.kernel, ctx.output, store=True):
        elements = subscript_parts(store.slice)
        if len(elements) != 2:
            continue
        row_names, column_names = names_in(elements[0]), names_in(elements[1])
        for load in subscripts(ctx.kernel, b, store=False):
            b_row, b_column = (subscript_parts(load.slice) + [None, None])[:2]
            product = ctx.parents.get(load)
            if b_column is None or not (isinstance(product, ast.BinOp)
                                        and isinstance(product.op, ast.Mult)):
                continue
            other = product.left if product.right is load else product.right
            if not (isinstance(other, ast.Subscript) and isinstance(other.value, ast.Name)
                    and other.value.id == a and len(subscript_parts(other.slice)) == 2):
                continue
            a_column = names_in(subscript_parts(other.slice)[1])
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
