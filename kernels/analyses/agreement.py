"""Whether a second backend's run of a request agrees with the run shown.

On a machine with a GPU, the first answer comes from the CPU emulation and
the GPU's run of the same request follows (engine.confirm).  Every check so
far found a race-free kernel's maps the same on every backend, so where they
differ, ThreadMap or the hardware is wrong: each difference is named here,
and the result shows it as a fault.  Where threads race (collisions, global
or shared-memory races), which thread wins is the schedule's: only the write
counts and the out-of-bounds figures are held to agree then.
"""
from __future__ import annotations

import numpy as np

from ..result import BACKEND_SHORT, RunResult

#: Maps that every run of a request must give alike, and their names in words.
ALWAYS = (("count", "write counts"), ("oob_per_thread", "out-of-bounds accesses per thread"))
#: Maps alike where no two threads race.
RACE_FREE = (("atomics", "atomic updates"), ("min_writer", "lowest writers"),
             ("max_writer", "highest writers"), ("iteration", "grid-stride iterations"),
             ("stores_per_thread", "stores per thread"))


def raced(result: RunResult) -> bool:
    """Whether which thread's store wins depends on the schedule."""
    verdict = result.verdict
    return bool(verdict.collided or verdict.global_races or verdict.shared_races)


def disagreements(shown: RunResult, other: RunResult) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What ``other`` (a second backend's run of ``shown``'s request) gives
    otherwise than ``shown``, each in words; and what was compared."""
    who = BACKEND_SHORT.get(other.backend, other.backend)
    found: list[str] = []
    compared = ["verdict", "out-of-bounds tallies"]
    if other.verdict.word != shown.verdict.word:
        found.append(f"its verdict is {other.verdict.word} where the one shown is "
                     f"{shown.verdict.word}")
    ours = {(o.array, o.direction): o.count for o in shown.maps.out_of_bounds}
    theirs = {(o.array, o.direction): o.count for o in other.maps.out_of_bounds}
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key, 0) != theirs.get(key, 0):
            array, direction = key
            found.append(f"out-of-bounds {direction}s of {array}: {theirs.get(key, 0):,} on "
                         f"the {who}, {ours.get(key, 0):,} shown")
    maps = [(name, words, shown.output) for name, words in ALWAYS]
    if not raced(shown):
        maps += [(name, words, shown.output) for name, words in RACE_FREE]
        maps += [(name, f"reads of {array}", array)
                 for name, array in zip(shown.read_maps(), shown.input_names)]
    for name, words, array in maps:
        a, b = _map(shown, name), _map(other, name)
        if a is None or b is None:
            continue
        compared.append(words)
        difference = _difference(a, b, words, who, array, name.endswith("per_thread"))
        if difference:
            found.append(difference)
    return tuple(found), tuple(compared)


def _map(result: RunResult, name: str) -> np.ndarray | None:
    if name.startswith("reads_"):
        return result.read_maps().get(name)
    return getattr(result.maps, name, None)


def _difference(shown: np.ndarray, other: np.ndarray, words: str, who: str, array: str,
                per_thread: bool) -> str | None:
    """``words`` differ where, and how many: None where they do not."""
    if shown.shape != other.shape:
        return f"{words}: shaped {other.shape} on the {who}, {shown.shape} shown"
    differ = shown != other
    count = int(np.count_nonzero(differ))
    if not count:
        return None
    first = tuple(int(i) for i in np.argwhere(differ)[0])
    where = f"thread {first[0]:,}" if per_thread and len(first) == 1 else \
        f"{array}[{', '.join(map(str, first))}]"
    return (f"{words} differ at {count:,} of {shown.size:,} "
            f"{'threads' if per_thread else 'elements'} (first {where}: {other[first]} on the "
            f"{who}, {shown[first]} shown)")
