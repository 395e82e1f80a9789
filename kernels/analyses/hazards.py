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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lockstep import BarrierSite
from ..derived.transform import AccessSite


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
