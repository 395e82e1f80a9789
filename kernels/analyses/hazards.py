"""What goes wrong only with barriers and shared memory, found by the lockstep
emulation.

* **Barrier divergence**: a ``syncthreads`` that some threads of the block do
  not reach (they returned, or took another path).  The CUDA C++ Programming
  Guide allows ``__syncthreads()`` in conditional code only when the
  condition is the same across the whole block; otherwise the kernel may hang
  or give wrong results.  (numba's simulator lets it pass silently.)
* **Shared-memory races**: two different threads of a block touch the same
  shared element between two barriers, at least one of them writing: the
  order of the two is not defined (a ``syncthreads`` is missing).
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

from ..derived.lockstep import BarrierSite
from ..derived.transform import AccessSite
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


@dataclass(frozen=True)
class SharedRaces:
    """Accesses to shared elements that raced with an earlier access by another
    thread of the block in the same barrier interval."""

    count: int
    array: str | None = None
    index: tuple[int, ...] | None = None
    #: the first racing pair: the earlier access, then the later one
    first: tuple[SharedAccess, SharedAccess] | None = None

    def summary(self) -> dict:
        first = None
        if self.first is not None:
            a, b = self.first
            first = {"threads": [a.thread, b.thread], "array": self.array,
                     "index": list(self.index), "lines": [a.access.line, b.access.line],
                     "accesses": [f"{a.access.kind} {a.access.text}",
                                  f"{b.access.kind} {b.access.text}"]}
        return {"count": self.count, "first": first}

    def describe(self) -> str:
        a, b = self.first
        element = f"{self.array}[{', '.join(map(str, self.index))}]"
        return (f"{self.count:,} shared-memory race{'s' if self.count != 1 else ''} (first: "
                f"{a.describe()} and {b.describe()}, both on {element} with no barrier "
                "between them)")


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
