"""Rules about shared memory: a missing barrier, a transposed tile."""
from __future__ import annotations

import ast

from ...words import counted
from ..hazards import shared_elements_raced
from .diagnosis import Diagnosis
from .source import Context, sources_of, statement_path
from .warps import warp_synchronous_pair


def missing_barrier(ctx: Context) -> Diagnosis | None:
    """A shared array written at line a and used by another thread at line b,
    with no barrier between them in the source.  Evidence: the lockstep
    emulation's first race, between exactly those lines."""
    analysis = ctx.result.analysis
    if analysis is None or not analysis.races.count or analysis.races.first is None:
        return None
    earlier, later = analysis.races.first
    a, b = earlier.access.line, later.access.line
    if warp_synchronous_pair(ctx) is not None:
        return None  # (lanes of one warp: warps.warp_synchronous_race names it)
    kernel = ctx.result.kernel
    barriers = kernel.barrier_lines if kernel is not None else ()
    if not a < b or any(a < line < b for line in barriers):
        return None  # (a race around a loop's back edge: not this rule's pattern)
    # Where the barrier goes: before the statement holding line b that is a
    # sibling of the one holding line a (in the innermost body holding both).
    insert = None
    for (body_a, index_a), (body_b, index_b) in zip(statement_path(ctx.kernel.body, a),
                                                    statement_path(ctx.kernel.body, b)):
        if body_a is not body_b:
            break
        if index_a != index_b:
            insert = body_b[index_b]
            break
    if insert is None:
        return None
    races = analysis.races
    element = f"{races.array}[{', '.join(map(str, races.index))}]"
    verb = "read" if later.access.kind == "load" else "written"
    return Diagnosis(
        "missing-barrier", (a, b),
        f"{races.array} is written at line {a} and {verb} at line {b} with no "
        f"cuda.syncthreads() between them, so a thread can use an element that another "
        f"thread of its block has not written yet",
        f"{shared_elements_raced(races.count)}; the first: {earlier.describe()} and "
        f"{later.describe()}, both on {element}",
        f"line {insert.lineno}: insert `{' ' * insert.col_offset}cuda.syncthreads()` before "
        f"`{ast.unparse(insert).splitlines()[0]}`")


def transposed_tile(ctx: Context) -> Diagnosis | None:
    """A shared tile indexed with threadIdx.x (what consecutive lanes differ
    in) in its first subscript: a warp's lanes a row apart, in the same
    banks.  Evidence: 8-way or worse conflicts at that access."""
    analysis = ctx.result.analysis
    if analysis is None:
        return None
    for site in analysis.bank_conflicts:
        if not site.requests or site.max_ways < 8 or site.mean_ways <= site.ideal_ways * 1.01:
            continue
        try:
            access = ast.parse(site.site.text, mode="eval").body
        except SyntaxError:
            continue
        if not (isinstance(access, ast.Subscript) and isinstance(access.slice, ast.Tuple)
                and len(access.slice.elts) >= 2):
            continue
        first, last = access.slice.elts[0], access.slice.elts[-1]
        if "threadIdx.x" not in sources_of(first, ctx.env) or \
                "threadIdx.x" in sources_of(last, ctx.env):
            continue
        array = site.site.array
        swapped = ast.unparse(ast.Subscript(value=access.value, slice=ast.Tuple(
            elts=list(reversed(access.slice.elts)), ctx=ast.Load()), ctx=ast.Load()))
        fix = f"swap the subscripts (`{swapped}`) where the tile is written and read"
        lines = (site.site.line,)
        declaration = _padded_declaration(ctx, array)
        if declaration is not None:
            line, padded, binding = declaration
            fix += f", or pad its rows by one, line {line}: `{padded}`{binding}"
            lines = tuple(sorted({site.site.line, line}))
        return Diagnosis(
            "transposed-tile", lines,
            f"{site.site.text} at line {site.site.line} puts threadIdx.x, in which "
            f"consecutive lanes differ, in {array}'s first subscript, so a warp's lanes are "
            f"a row apart and fall in the same banks",
            f"{site.mean_ways:.1f}-way bank conflicts on average (worst {site.max_ways}-way, "
            f"ideal {site.ideal_ways:.1f}) over {counted(site.requests, 'warp request')}",
            fix)
    return None


def _padded_declaration(ctx: Context, array: str) -> tuple[int, str, str] | None:
    """(line, the declaration with one more column, the module-level binding
    it needs or "") of shared array ``array``."""
    declared = ctx.declarations.get(array)
    if declared is None or not isinstance(declared[1], ast.Tuple):
        return None
    node, shape_expr = declared
    call = node.value
    shape = list(shape_expr.elts)
    # numba reads a shape when it compiles: a number, or a module-level name
    # bound to one; never `TPB + 1` written in the kernel (refused on a GPU)
    last, binding = shape[-1], ""
    if isinstance(last, ast.Constant) and isinstance(last.value, int):
        shape[-1] = ast.Constant(last.value + 1)
    elif isinstance(last, ast.Name):
        padded_name = f"{last.id}_PADDED"
        shape[-1] = ast.Name(id=padded_name, ctx=ast.Load())
        binding = f", with `{padded_name} = {last.id} + 1` at module level"
    else:
        return None
    wider = ast.Tuple(elts=shape, ctx=ast.Load())
    if call.args and call.args[0] is shape_expr:
        padded = ast.Call(func=call.func, args=[wider] + call.args[1:], keywords=call.keywords)
    else:  # (shape=... as a keyword)
        padded = ast.Call(func=call.func, args=call.args, keywords=[
            ast.keyword(arg=k.arg, value=wider if k.value is shape_expr else k.value)
            for k in call.keywords])
    return node.lineno, f"{array} = {ast.unparse(padded)}", binding
