"""Memory coalescing: how many 32-byte sectors each warp request touches.

The lockstep emulation runs a warp's active lanes through each access to A, B
or C together, as the hardware issues one instruction for them: those lanes'
addresses are one request.  The distinct 32-byte sectors they fall in are what
the memory system must move.  The ideal is the fewest sectors the request's
distinct elements could fill: 32 consecutive float32 need 4, 16 need 2, and a
broadcast (every lane on one element) needs 1, so the efficiency (ideal /
actual) never exceeds 1.  Arrays are assumed aligned to 32 bytes (numpy and
CUDA allocations are).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.transform import AccessSite

WARP = 32
SECTOR_BYTES = 32


@dataclass(frozen=True, eq=False)
class SiteCoalescing:
    """Sectors per warp request at one access site to global memory."""

    site: AccessSite
    element_bytes: int
    #: warp requests: a warp executing the access with at least one lane
    requests: int
    mean_sectors: float
    max_sectors: int
    #: mean over requests of the fewest sectors their distinct elements fill
    ideal_sectors: float
    #: mean active lanes per request
    mean_lanes: float
    #: (blocks, warps per block): mean sectors of each warp's requests; NaN
    #: where the warp made none
    per_warp: np.ndarray

    @property
    def efficiency(self) -> float:
        """ideal / actual sectors, at most 1.0 (perfectly coalesced)."""
        return self.ideal_sectors / self.mean_sectors if self.mean_sectors else 1.0

    def summary(self) -> dict:
        return {"site": self.site.site, "line": self.site.line, "kind": self.site.kind,
                "array": self.site.array, "role": self.site.role, "access": self.site.text,
                "element_bytes": self.element_bytes, "requests": self.requests,
                "mean_sectors": self.mean_sectors, "max_sectors": self.max_sectors,
                "ideal_sectors": self.ideal_sectors, "mean_active_lanes": self.mean_lanes,
                "efficiency": self.efficiency}


def per_warp_means(counts: np.ndarray, sums: np.ndarray, blocks: int) -> np.ndarray:
    """(blocks, warps per block) means of ``sums / counts`` per warp; NaN where
    the count is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.reshape(blocks, -1)


def coalescing(acc: np.ndarray, accw: np.ndarray, sites: tuple[AccessSite, ...], blocks: int,
               element_bytes: dict[str, int]) -> tuple[SiteCoalescing, ...]:
    """Figures of every global-memory site from the lockstep records
    (site sums and ``_tm_accw``, see records.py); ``element_bytes`` by array."""
    out = []
    for site in sites:
        if site.space != "global":
            continue
        requests, total, largest, ideal, lanes = (int(v) for v in acc[site.site])
        out.append(SiteCoalescing(
            site=site, element_bytes=element_bytes[site.array], requests=requests,
            mean_sectors=total / requests if requests else 0.0, max_sectors=largest,
            ideal_sectors=ideal / requests if requests else 0.0,
            mean_lanes=lanes / requests if requests else 0.0,
            per_warp=per_warp_means(accw[site.site, :, 0], accw[site.site, :, 1], blocks)))
    return tuple(out)


def sectors_per_request(offsets: np.ndarray, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """For lanes' element offsets (..., 32) (-1 = lane not there): the distinct
    sectors and the active lanes of each request.  (A reference for tests: the
    emulation counts the same in compiled code.)"""
    active = offsets >= 0
    sectors = np.where(active, offsets * element_bytes // SECTOR_BYTES, -1)
    sectors.sort(axis=-1)
    fresh = (sectors[..., 1:] != sectors[..., :-1]) & (sectors[..., 1:] >= 0)
    distinct = fresh.sum(axis=-1) + (sectors[..., 0] >= 0)
    return distinct, active.sum(axis=-1)
