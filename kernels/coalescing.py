"""Memory coalescing: how many 32-byte sectors one warp's request touches.

For each access site of the kernel (each load of A, of B, each store to C, in
source order), the recording kernel traced the element offset each thread used
at its first few occurrences of that site.  The 32 lanes of a warp at the same
occurrence make one request; the distinct 32-byte sectors their addresses fall
in are what the memory system must move.  32 consecutive float32 cover 128
bytes: 4 sectors, the ideal; 32 scattered ones cost 32.  Arrays are assumed
aligned to 32 bytes (numpy and CUDA allocations are).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import TRACE_OCCURRENCES
from .transform import AccessSite

WARP = 32
SECTOR_BYTES = 32


@dataclass(frozen=True, eq=False)
class SiteCoalescing:
    """Sectors per warp request at one access site."""

    site: AccessSite
    element_bytes: int
    #: occurrences of the site analysed, per thread (its first few)
    occurrences: int
    #: warp requests counted (a warp at one occurrence with at least one lane there)
    requests: int
    mean_sectors: float
    max_sectors: int
    #: the fewest sectors those requests could touch: ceil(active lanes x size / 32)
    ideal_sectors: float
    #: (warps, occurrences): sectors of each warp's request; NaN where none
    per_warp: np.ndarray

    @property
    def efficiency(self) -> float:
        """ideal / actual sectors: 1.0 is perfectly coalesced."""
        return self.ideal_sectors / self.mean_sectors if self.mean_sectors else 1.0

    def summary(self) -> dict:
        return {"site": self.site.site, "line": self.site.line, "kind": self.site.kind,
                "array": self.site.array, "role": self.site.role, "access": self.site.text,
                "element_bytes": self.element_bytes,
                "occurrences_per_thread": f"first {self.occurrences}",
                "requests": self.requests, "mean_sectors": self.mean_sectors,
                "max_sectors": self.max_sectors, "ideal_sectors": self.ideal_sectors,
                "efficiency": self.efficiency}


def warp_lanes(per_thread: np.ndarray, blocks: int, threads_per_block: int,
               fill: int = -1) -> np.ndarray:
    """(..., threads) -> (..., warps, 32): threads grouped by warp, block by
    block; lanes past the end of a block hold ``fill``."""
    warps_per_block = -(-threads_per_block // WARP)
    lead = per_thread.shape[:-1]
    padded = np.full(lead + (blocks, warps_per_block * WARP), fill, per_thread.dtype)
    padded[..., :threads_per_block] = per_thread.reshape(lead + (blocks, threads_per_block))
    return padded.reshape(lead + (blocks * warps_per_block, WARP))


def sectors_per_request(offsets: np.ndarray, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """For lanes' element offsets (..., 32) (-1 = lane not there): the distinct
    sectors and the active lanes of each request."""
    active = offsets >= 0
    sectors = np.where(active, offsets * element_bytes // SECTOR_BYTES, -1)
    sectors.sort(axis=-1)
    fresh = (sectors[..., 1:] != sectors[..., :-1]) & (sectors[..., 1:] >= 0)
    distinct = fresh.sum(axis=-1) + (sectors[..., 0] >= 0)
    return distinct, active.sum(axis=-1)


def analyse(trace_addr: np.ndarray, sites: tuple[AccessSite, ...], blocks: int,
            threads_per_block: int, element_bytes: int) -> tuple[SiteCoalescing, ...]:
    """Coalescing figures for each site from the trace (sites, occurrences, threads)."""
    out = []
    for site in sites:
        lanes = warp_lanes(trace_addr[site.site], blocks, threads_per_block)  # (R, warps, 32)
        distinct, active = sectors_per_request(lanes, element_bytes)
        present = active > 0
        ideal = -(-active * element_bytes // SECTOR_BYTES)
        requests = int(present.sum())
        per_warp = np.where(present, distinct, np.nan).T  # (warps, R)
        out.append(SiteCoalescing(
            site=site, element_bytes=element_bytes, occurrences=TRACE_OCCURRENCES,
            requests=requests,
            mean_sectors=float(distinct[present].mean()) if requests else 0.0,
            max_sectors=int(distinct[present].max()) if requests else 0,
            ideal_sectors=float(ideal[present].mean()) if requests else 0.0,
            per_warp=per_warp))
    return tuple(out)
