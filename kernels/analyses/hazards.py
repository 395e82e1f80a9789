"""What goes wrong only with barriers and shared memory, found by the lockstep
emulation.

* **Barrier divergence**: a ``syncthreads`` that some threads of the block do
  not reach (they returned, or took another path).  The CUDA C++ Programming
  Guide allows ``__syncthreads()`` in conditional code only when the
  condition is the same across the whole block; otherwise the kernel may hang
  or give wrong results.  (numba's simulator lets it pass silently.)
* **Shared-memory races**: two different threads of a block touch the same
  shared element between two barriers, at least one of them writing: the
  order of the two is not defined (a ``syncthreads`` is missing).  Counted
  in elements, as races in global memory are: each block has its own copy
  of a shared array, and each of its elements counts once however many
  accesses raced on it.
* **Uninitialised shared reads**: a read of a shared element that no thread
  of the block has written yet (shared memory starts with garbage).
* **Warp operations with undefined results** (``*_sync``, ``syncwarp``): a
  mask that names a lane of the warp that has not exited but does not reach
  the call, or leaves out the calling lane; a shuffle that reads a lane not
  taking part (inactive there, or outside the mask).  The CUDA C++
  Programming Guide leaves both undefined (a hang, or a wrong value).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lowering import BarrierSite
from ..derived.transform import AccessSite, global_ranges_param
from ..records import RACING_KINDS, between_blocks
from ..words import counted


def thread_name(gtid: int, grid: tuple[int, int], block: tuple[int, int]) -> str:
    """A global thread id in CUDA's own words: "block (1, 0), thread (8, 0)
    (global 264)" (x first; never a block's thread number in a sentence
    about the whole grid, or the reverse)."""
    tpb = block[0] * block[1]
    b, t = divmod(gtid, tpb)
    by, bx = divmod(b, grid[0])
    ty, tx = divmod(t, block[0])
    return f"block ({bx}, {by}), thread ({tx}, {ty}) (global {gtid})"


def block_name(b: int, grid: tuple[int, int]) -> str:
    by, bx = divmod(b, grid[0])
    return f"({bx}, {by})"


@dataclass(frozen=True)
class BarrierDivergence:
    """A barrier some threads of a block did not reach."""

    line: int
    text: str
    #: blocks where it happened
    blocks: int
    #: times a block reached it divergently
    executions: int
    #: the first such time: its block, threads there and missing
    first_block: int
    arrived: int
    missing: int
    first_missing_thread: int
    #: the launch's grid and block (x, y), to name blocks and threads
    grid: tuple[int, int] = (1, 1)
    block: tuple[int, int] = (1, 1)

    def summary(self) -> dict:
        return {"line": self.line, "barrier": self.text, "blocks": self.blocks,
                "executions": self.executions, "first_block": self.first_block,
                "arrived": self.arrived, "missing": self.missing,
                "first_missing_thread": self.first_missing_thread}

    def describe(self) -> str:
        return (f"the barrier at line {self.line} was reached by {self.arrived:,} of "
                f"{self.arrived + self.missing:,} threads of block "
                f"{block_name(self.first_block, self.grid)} (the others had returned or taken "
                f"another path; first missing: "
                f"{thread_name(self.first_missing_thread, self.grid, self.block)}); "
                f"{self.blocks:,} block{'s' if self.blocks != 1 else ''} affected: barrier "
                "divergence")


@dataclass(frozen=True)
class SharedAccess:
    """One thread's access to a shared element, as a hazard names it."""

    thread: int
    access: AccessSite
    #: the launch's grid and block (x, y), to name the thread
    grid: tuple[int, int] = (1, 1)
    block: tuple[int, int] = (1, 1)

    def describe(self) -> str:
        verb = {"load": "reads", "store": "writes", "atomic": "updates"}[self.access.kind]
        return (f"{thread_name(self.thread, self.grid, self.block)} {verb} {self.access.text} "
                f"at line {self.access.line}")


def pair_summary(first: tuple[SharedAccess, SharedAccess] | None, array: str | None,
                 index: tuple[int, ...] | None) -> dict | None:
    """A racing pair for result.json: both threads, the element, both lines."""
    if first is None:
        return None
    a, b = first
    return {"threads": [a.thread, b.thread], "array": array, "index": list(index),
            "lines": [a.access.line, b.access.line],
            "accesses": [f"{a.access.kind} {a.access.text}", f"{b.access.kind} {b.access.text}"]}


@dataclass(frozen=True)
class SharedRaces:
    """Elements of shared memory that an access raced on: one by another
    thread of the block in the same barrier interval.  Counted in elements
    (each block's copy of an array apart), not accesses: a barrier missing
    before a tile is read counts the tile's elements, not every read of them."""

    #: elements raced on, each block's own counted apart
    count: int
    array: str | None = None
    index: tuple[int, ...] | None = None
    #: the first racing pair: the earlier access, then the later one
    first: tuple[SharedAccess, SharedAccess] | None = None

    def summary(self) -> dict:
        # ("count": the same number, the key result.json had when it counted
        # racing accesses; "elements" says the unit, as global_races' does)
        return {"elements": self.count, "count": self.count,
                "first": pair_summary(self.first, self.array, self.index)}

    def describe(self) -> str:
        a, b = self.first
        element = f"{self.array}[{', '.join(map(str, self.index))}]"
        return (f"{shared_elements_raced(self.count)} (first: {a.describe()} and "
                f"{b.describe()}, both on {element} with no barrier between them)")


def shared_elements_raced(count: int) -> str:
    """``"72 elements of shared memory raced on"``, each block's copy counted
    apart: the unit every sentence about shared-memory races says."""
    return f"{counted(count, 'element')} of shared memory raced on"


@dataclass(frozen=True)
class UninitialisedReads:
    """Reads of shared elements the block had not written."""

    count: int
    array: str | None = None
    index: tuple[int, ...] | None = None
    first: SharedAccess | None = None

    def summary(self) -> dict:
        first = None
        if self.first is not None:
            first = {"thread": self.first.thread, "array": self.array,
                     "index": list(self.index), "line": self.first.access.line,
                     "access": self.first.access.text}
        return {"count": self.count, "first": first}

    def describe(self) -> str:
        element = f"{self.array}[{', '.join(map(str, self.index))}]"
        return (f"{self.count:,} read{'s' if self.count != 1 else ''} of shared memory that "
                f"the block had not written (first: {self.first.describe()}, element "
                f"{element})")


def lanes_named(bits: int) -> str:
    """``0b1011`` as "lanes 0, 1 and 3"; runs as ranges ("lanes 16-31")."""
    lanes = [lane for lane in range(32) if bits >> lane & 1]
    runs: list[list[int]] = []
    for lane in lanes:
        if runs and lane == runs[-1][-1] + 1:
            runs[-1].append(lane)
        else:
            runs.append([lane])
    parts = [f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"lane{'s' if len(lanes) != 1 else ''} {text}"


@dataclass(frozen=True)
class WarpHazard:
    """Calls of warp operations with an undefined result, of one kind
    (``"shuffle"``: a read of a lane not taking part; ``"mask"``: a mask
    naming a lane that is not there, or leaving out the caller), and the first."""

    kind: str
    count: int
    line: int
    thread: str
    #: the calling lane's number in its warp
    lane: int
    mask: int
    active: int
    #: the lane a shuffle read (``"shuffle"``), or the lanes not exited (``"mask"``)
    other: int

    def summary(self) -> dict:
        first = {"line": self.line, "thread": self.thread, "lane": self.lane,
                 "mask": f"0x{self.mask:08x}", "active_lanes": f"0x{self.active:08x}"}
        if self.kind == "shuffle":
            first["source_lane"] = self.other
        else:
            first["lanes_not_arrived"] = f"0x{self.mask & self.other & ~self.active:08x}"
        return {"kind": self.kind, "count": self.count, "first": first}

    def describe(self) -> str:
        where = (f"line {self.line}, {self.thread} (lane {self.lane}); mask 0x{self.mask:08x}, "
                 f"active lanes 0x{self.active:08x}")
        if self.kind == "shuffle":
            why = ("outside the mask" if (self.active >> self.other) & 1
                   else "not active at the call")
            return (f"{counted(self.count, 'shuffle')} read a lane that took no part in "
                    f"{'it' if self.count == 1 else 'them'}, an undefined value on a GPU "
                    f"(first: {where}: it read lane {self.other}, {why}); the emulation gave "
                    "the lane its own value")
        absent = self.mask & self.other & ~self.active
        what = (f"its mask names {lanes_named(absent)}, which had not exited but did not "
                "reach the call" if absent else "its mask leaves out the calling lane")
        return (f"{counted(self.count, 'warp-operation call')} with a mask the warp does not "
                f"meet, undefined on a GPU: a hang or a wrong value (first: {where}: {what})")


def warp_hazards(warp: np.ndarray, grid: tuple[int, int], block_dims: tuple[int, int]
                 ) -> tuple[WarpHazard, ...]:
    """The two kinds of ``_tm_warp``, those that happened."""
    tpb = block_dims[0] * block_dims[1]
    found = []
    for row, kind in ((1, "mask"), (0, "shuffle")):
        count, block, lane, line, a, b, c = (int(v) for v in warp[row])
        if not count:
            continue
        thread = thread_name(block * tpb + lane, grid, block_dims)
        if kind == "shuffle":  # (a: the source lane, b: the mask, c: the active lanes)
            found.append(WarpHazard(kind, count, line, thread, lane % 32, b, c, a))
        else:  # (a: the mask, b: the active lanes, c: the lanes not exited)
            found.append(WarpHazard(kind, count, line, thread, lane % 32, a, b, c))
    return tuple(found)


def barrier_divergence(bar: np.ndarray, barriers: tuple[BarrierSite, ...],
                       grid: tuple[int, int], block: tuple[int, int]
                       ) -> tuple[BarrierDivergence, ...]:
    """Barriers reached divergently, from ``_tm_bar`` (see records.py)."""
    tpb = block[0] * block[1]
    out = []
    for barrier in barriers:
        executions, blocks, _, first, arrived, missing, lane = (int(v) for v in bar[barrier.site])
        if executions:
            out.append(BarrierDivergence(barrier.line, barrier.text, blocks, executions, first,
                                         arrived, missing, first * tpb + lane, grid, block))
    return tuple(out)


def _index(slot_ndims: tuple[int, ...], slot: int, i: int, j: int) -> tuple[int, ...]:
    return (i, j) if slot_ndims[slot] == 2 else (i,)


def shared_races(race: np.ndarray, sites: tuple[AccessSite, ...], slot_names: tuple[str, ...],
                 slot_ndims: tuple[int, ...], grid: tuple[int, int],
                 block_dims: tuple[int, int]) -> SharedRaces:
    """Shared-memory races from ``_tm_race``."""
    count, block, other, other_site, lane, site, slot, i, j = (int(v) for v in race)
    if not count:
        return SharedRaces(0)
    tpb = block_dims[0] * block_dims[1]
    return SharedRaces(count, slot_names[slot], _index(slot_ndims, slot, i, j), (
        SharedAccess(block * tpb + other, sites[other_site], grid, block_dims),
        SharedAccess(block * tpb + lane, sites[site], grid, block_dims)))


def uninitialised_reads(uninit: np.ndarray, sites: tuple[AccessSite, ...],
                        slot_names: tuple[str, ...], slot_ndims: tuple[int, ...],
                        grid: tuple[int, int], block_dims: tuple[int, int]
                        ) -> UninitialisedReads:
    """Reads of unwritten shared elements from ``_tm_uninit``."""
    count, block, lane, slot, i, j, site = (int(v) for v in uninit)
    if not count:
        return UninitialisedReads(0)
    tpb = block_dims[0] * block_dims[1]
    return UninitialisedReads(count, slot_names[slot], _index(slot_ndims, slot, i, j),
                              SharedAccess(block * tpb + lane, sites[site], grid, block_dims))


# -- races in global memory (issue 22, point 4) ---------------------------------------

@dataclass(frozen=True)
class GlobalRaces:
    """Elements of global arrays that two threads accessed with nothing to
    order them, at least one access a plain write (or a plain read and an
    atomic update): two blocks (nothing orders blocks), or two threads of one
    block in one barrier interval.  Counted in elements, not accesses: the
    count of accesses between blocks would depend on the order the
    emulation's workers met them."""

    count: int
    #: of those, the elements two blocks raced on
    between_blocks: int = 0
    array: str | None = None
    index: tuple[int, ...] | None = None
    #: the first racing pair (the lowest element: array slot, then offset)
    first: tuple[SharedAccess, SharedAccess] | None = None
    #: "between blocks" or "within a block"
    kind: str = ""
    #: arrays too large to check (records.RACE_CHECK_ELEMENTS)
    unchecked: tuple[str, ...] = ()

    def summary(self) -> dict:
        first = pair_summary(self.first, self.array, self.index)
        if first is not None:
            first["kind"] = self.kind
        return {"elements": self.count, "between_blocks": self.between_blocks, "first": first,
                "unchecked": list(self.unchecked)}

    def describe(self) -> str:
        a, b = self.first
        element = f"{self.array}[{', '.join(map(str, self.index))}]"
        why = ("nothing orders two blocks" if self.kind == "between blocks"
               else "no barrier between them")
        return (f"{counted(self.count, 'element')} of global memory raced on (first: "
                f"{a.describe()} and {b.describe()}, both on {element}: {why}); "
                f"{self.between_blocks:,} of them between blocks")


def global_races(lockstep: dict[str, np.ndarray], race_arrays: tuple[str, ...],
                 sites: tuple[AccessSite, ...], slot_names: tuple[str, ...],
                 shapes: dict[str, tuple[int, ...]], grid: tuple[int, int],
                 block_dims: tuple[int, int]) -> GlobalRaces:
    """Races in global memory from the arrays' access ranges (between
    blocks, worked out here whatever order the workers met the elements in)
    and ``_tm_grace`` (within a block); see record_runtime's _tm_check_global_*."""
    tpb = block_dims[0] * block_dims[1]
    per_site = max(len(sites), 1)
    total = between = 0
    first = None  # (slot, offset, kind, (key, key) or None)
    unchecked = []
    for name in race_arrays:
        ranges = lockstep.get(global_ranges_param(name))
        if ranges is None:
            continue
        if not ranges.size:
            unchecked.append(name)
            continue
        slot = slot_names.index(name)
        cross = between_blocks(ranges, per_site * tpb)
        raced = cross | (ranges[:, 6] > 0)
        total += int(np.count_nonzero(raced))
        between += int(np.count_nonzero(cross))
        if raced.any():
            offset = int(np.argmax(raced))
            if first is None or (slot, offset) < first[:2]:
                pair = _block_pair(ranges[offset], per_site * tpb) if cross[offset] else None
                first = (slot, offset, "between blocks" if cross[offset] else "within a block",
                         pair)
    if not total:
        return GlobalRaces(0, unchecked=tuple(unchecked))
    slot, offset, kind, pair = first
    name = slot_names[slot]
    shape = shapes[name]
    index = tuple(int(v) for v in np.unravel_index(offset, shape))
    if pair is not None:
        accesses = tuple(SharedAccess(int(key) // per_site, sites[int(key) % per_site], grid,
                                      block_dims) for key in sorted(pair))
    else:
        grace = lockstep["_tm_grace"]
        block, other, other_site, lane, site = (int(v) for v in grace[3:8])
        accesses = (SharedAccess(block * tpb + other, sites[other_site], grid, block_dims),
                    SharedAccess(block * tpb + lane, sites[site], grid, block_dims))
    return GlobalRaces(total, between, name, index, accesses, kind, tuple(unchecked))


def _block_pair(row: np.ndarray, keys_per_block: int) -> tuple[int, int]:
    """Two access keys of one element from different blocks, of racing kinds:
    extremes suffice (a kind in one block and another kind elsewhere shows at
    the other kind's lowest or highest)."""
    for a, b in RACING_KINDS:
        if row[a] > row[a + 1] or row[b] > row[b + 1]:
            continue
        for x in (row[a], row[a + 1]):
            for y in (row[b], row[b + 1]):
                if x // keys_per_block != y // keys_per_block:
                    return int(x), int(y)
    raise AssertionError("no pair of blocks in a row found racing between blocks")
