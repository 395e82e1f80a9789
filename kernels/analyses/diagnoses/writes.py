"""Rules about how C is written: plain stores and atomic updates mixed on
the same elements."""
from __future__ import annotations

import ast

import numpy as np

from ...words import counted
from ..hazards import thread_name
from .diagnosis import Diagnosis
from .source import Context, atomic_calls, subscript_text, subscripts


def store_and_atomic(ctx: Context) -> Diagnosis | None:
    """``C[i, j] = ...`` in some threads and ``cuda.atomic.add(C, (i, j),
    ...)`` in others: an atomic update is not ordered against a plain store.
    Evidence: elements both stored and atomically updated, by different
    threads."""
    stored = subscripts(ctx.kernel, ctx.output, store=True)
    stores = [node for node in ast.walk(ctx.kernel) if isinstance(node, ast.Assign)
              and len(node.targets) == 1 and node.targets[0] in stored]
    atomics = atomic_calls(ctx.kernel, ctx.output)
    if not stores or not atomics:
        return None
    maps = ctx.result.maps
    if not any(maps.atomics.strides):  # (atomic updates not recorded)
        return None
    both = (maps.count >= 1) & (maps.atomics >= 1) & (maps.min_writer != maps.max_writer)
    shared = int(np.count_nonzero(both))
    if not shared:
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(both)), both.shape))
    store, atomic = stores[0], atomics[0]
    op = atomic.func.attr
    written = f"cuda.atomic.{op}({ctx.output}, ({subscript_text(store.targets[0].slice)}), " \
              f"{ast.unparse(store.value)})"
    low, high = int(maps.min_writer[first]), int(maps.max_writer[first])
    return Diagnosis(
        "store-and-atomic", (store.lineno, atomic.lineno),
        f"{ctx.output} is stored at line {store.lineno} and updated with cuda.atomic.{op} at "
        f"line {atomic.lineno} by different threads on the same elements: an atomic update "
        f"is not ordered against a plain store, so an update made before the store is lost",
        f"{counted(shared, 'element')} of {ctx.output} both stored and atomically updated by "
        f"different threads; the first, [{', '.join(map(str, first))}], by "
        f"{thread_name(low, ctx.grid, ctx.block)} and {thread_name(high, ctx.grid, ctx.block)}",
        f"line {store.lineno}: `{written}` ({ctx.output} zeroed before the launch), so every "
        f"thread's part is added")


#: Augmented assignments an atomic update does in one step (``cuda.atomic.add``
#: with the value negated for ``-=``).
_ATOMIC_FOR = {ast.Add: "add", ast.Sub: "sub"}


def unprotected_update(ctx: Context) -> Diagnosis | None:
    """``hist[b] += 1`` in global memory where threads meet on an element: a
    load, an add and a store, so one thread's store overwrites another's
    increment.  Evidence: the run's first global race is between two threads'
    writes of that statement, on that array."""
    analysis = ctx.result.analysis
    races = analysis.global_races if analysis is not None else None
    if races is None or not races.count or races.first is None or races.array is None:
        return None
    earlier, later = races.first
    line = earlier.access.line
    if later.access.line != line:
        return None
    update = next((node for node in ast.walk(ctx.kernel) if isinstance(node, ast.AugAssign)
                   and node.lineno == line and isinstance(node.target, ast.Subscript)
                   and isinstance(node.target.value, ast.Name)
                   and node.target.value.id == races.array), None)
    if update is None or type(update.op) not in _ATOMIC_FOR:
        return None
    index = subscript_text(update.target.slice)
    value = ast.unparse(update.value)
    op = _ATOMIC_FOR[type(update.op)]
    atomic = f"cuda.atomic.{op}({races.array}, {index if ',' not in index else f'({index})'}, " \
             f"{value})"
    return Diagnosis(
        "unprotected-update", (line,),
        f"`{ast.unparse(update)}` at line {line} is a load, an update and a store, and "
        f"threads meet on the same elements of {races.array}: one thread's store can "
        f"overwrite another's update, which is then lost",
        f"{counted(races.count, 'element')} of {races.array} updated by more than one thread "
        f"with nothing to order them; the first: {earlier.describe()} and {later.describe()}",
        f"line {line}: `{atomic}`, one step no other thread can come between")
