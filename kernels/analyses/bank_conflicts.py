"""Shared-memory bank conflicts: how many passes each warp request takes.

The model (NVIDIA CUDA C++ Programming Guide, "Shared Memory" for compute
capability 5.x and later, which every GPU model ThreadMap lists has): shared
memory has 32 banks; successive 4-byte words go to successive banks.  A warp
request is served in one pass unless several lanes need *different* words of
one bank; lanes reading the same word get it at once (a broadcast).  So a
request takes as many passes as the most distinct words any one bank must
deliver: its "ways".

Accesses wider than 4 bytes: an 8-byte element spans two words, and the
request is served in two half-warp passes (lanes 0-15, then 16-31), each
counted as above; 16-byte elements in four quarter-warp passes.  So a
conflict-free float64 request takes 2 passes, its ideal.  This is how the
Programming Guide describes 64-bit accesses and how Nsight Compute counts
shared-memory wavefronts; the emulation counts exactly this for every request.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.transform import AccessSite
from .coalescing import per_warp_means

MODEL = {
    "banks": 32,
    "bank_width_bytes": 4,
    "ways": "passes of one warp request: the most distinct 4-byte words any one bank "
            "delivers; lanes on the same word are a broadcast, not a conflict",
    "wide_accesses": "an 8-byte access spans two words and is served in two half-warp "
                     "passes (16-byte: four quarter-warp passes), each counted as above; "
                     "the ideal is then 2 (or 4) passes",
    "source": "NVIDIA CUDA C++ Programming Guide, Shared Memory (compute capability 5.x and "
              "later: 32 banks of 32-bit words, broadcast of one word); 64-bit accesses served "
              "per half-warp, as Nsight Compute counts shared-memory wavefronts",
}


@dataclass(frozen=True, eq=False)
class SiteConflicts:
    """Passes per warp request at one access site to a shared array."""

    site: AccessSite
    element_bytes: int
    requests: int
    mean_ways: float
    max_ways: int
    #: mean of the fewest passes each request could take (1, or 2 for 8-byte)
    ideal_ways: float
    #: (blocks, warps per block): mean ways of each warp's requests; NaN
    #: where the warp made none
    per_warp: np.ndarray

    @property
    def conflicted(self) -> bool:
        return self.max_ways > 0 and self.mean_ways > self.ideal_ways

    def summary(self) -> dict:
        return {"site": self.site.site, "line": self.site.line, "access": self.site.text,
                "array": self.site.array, "kind": self.site.kind,
                "element_bytes": self.element_bytes, "requests": self.requests,
                "mean_ways": self.mean_ways, "max_ways": self.max_ways,
                "ideal_ways": self.ideal_ways}


def bank_conflicts(acc: np.ndarray, accw: np.ndarray, sites: tuple[AccessSite, ...],
                   blocks: int, element_bytes: dict[str, int]) -> tuple[SiteConflicts, ...]:
    """Figures of every shared-memory site from the lockstep records;
    ``element_bytes`` by shared array."""
    out = []
    for site in sites:
        if site.space != "shared":
            continue
        requests, total, largest, ideal, _ = (int(v) for v in acc[site.site])
        out.append(SiteConflicts(
            site=site, element_bytes=element_bytes[site.array], requests=requests,
            mean_ways=total / requests if requests else 0.0, max_ways=largest,
            ideal_ways=ideal / requests if requests else 0.0,
            per_warp=per_warp_means(accw[site.site, :, 0], accw[site.site, :, 1], blocks)))
    return tuple(out)
