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
    if a == b:
        return _within_one_statement(ctx, a, earlier, later)
    if a > b:
        return _across_the_back_edge(ctx, a, b, barriers, earlier, later)
    if any(a < line < b for line in barriers):
        return None
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


def _evidence(ctx: Context, earlier, later) -> str:
    races = ctx.result.analysis.races
    element = f"{races.array}[{', '.join(map(str, races.index))}]"
    return (f"{shared_elements_raced(races.count)}; the first: {earlier.describe()} and "
            f"{later.describe()}, both on {element}")


def _within_one_statement(ctx: Context, line: int, earlier, later) -> Diagnosis | None:
    """``temp[t] += temp[t - offset]``: one statement reads an element of a
    shared array that another thread's same statement writes, with no
    barrier between its read and its write (a Hillis-Steele scan in place)."""
    array = ctx.result.analysis.races.array
    statement = next((node for node in ast.walk(ctx.kernel)
                      if isinstance(node, (ast.Assign, ast.AugAssign))
                      and node.lineno == line), None)
    if statement is None:
        return None
    target = statement.target if isinstance(statement, ast.AugAssign) else \
        statement.targets[0] if len(statement.targets) == 1 else None
    reads = [node for node in ast.walk(statement.value) if isinstance(node, ast.Subscript)
             and isinstance(node.value, ast.Name) and node.value.id == array]
    if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
            and target.value.id == array and reads):
        return None
    read = ast.unparse(reads[0])
    written = ast.unparse(target)
    value = ast.unparse(statement.value).replace(read, "v", 1)
    update = f"{written} += {value}" if isinstance(statement, ast.AugAssign) else \
        f"{written} = {value}"
    # (under a test, the barrier goes outside it: every thread must reach it)
    guard = ctx.parents.get(statement)
    if isinstance(guard, ast.If) and statement in guard.body and not guard.orelse:
        test = ast.unparse(guard.test)
        fix = (f"line {guard.lineno}: read under the test, wait outside it, then write: "
               f"`v = {read} if {test} else 0`, `cuda.syncthreads()`, "
               f"`if {test}: {update}`")
    else:
        fix = (f"line {line}: read first, then wait, then write: `v = {read}`, "
               f"`cuda.syncthreads()`, `{update}`")
    return Diagnosis(
        "missing-barrier", (line,),
        f"line {line} reads {read} and writes {written} in one statement, and another "
        f"thread's same statement writes the element this one reads, with no "
        f"cuda.syncthreads() between the reads and the writes: a thread can read it before "
        f"or after it was updated",
        _evidence(ctx, earlier, later),
        fix)


def _across_the_back_edge(ctx: Context, a: int, b: int, barriers, earlier,
                          later) -> Diagnosis | None:
    """A loop whose body writes a shared array at line b and reads it at line
    a > b, with a barrier between them but none after line a: the next
    iteration's write overtakes a slower thread's read of this one (a tiled
    matmul with no barrier after its products)."""
    loops = [node for node in ast.walk(ctx.kernel) if isinstance(node, (ast.For, ast.While))
             and node.body[0].lineno <= b and a <= (node.end_lineno or node.lineno)]
    if not loops:
        return None
    loop = max(loops, key=lambda node: node.lineno)  # (the innermost)
    start, end = loop.body[0].lineno, loop.end_lineno or loop.lineno
    if not any(b < line < a for line in barriers) or any(
            a < line <= end or start <= line < b for line in barriers):
        return None  # (not this pattern: an ordinary missing barrier, or a race elsewhere)
    array = ctx.result.analysis.races.array
    last = loop.body[-1]
    indent = " " * last.col_offset
    return Diagnosis(
        "missing-barrier", (b, a),
        f"{array} is written at line {b} and read at line {a} in the loop at line "
        f"{loop.lineno}, with no cuda.syncthreads() after the read: a thread's next round "
        f"writes {array} while another thread of its block may still be reading this round's",
        _evidence(ctx, earlier, later),
        f"line {(last.end_lineno or last.lineno) + 1}: end the loop's body with "
        f"`{indent}cuda.syncthreads()`")


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
