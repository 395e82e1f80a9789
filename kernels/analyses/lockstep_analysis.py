"""What the lockstep emulation measured besides the maps: warp requests to
memory, branches, barriers and shared-memory hazards, read back from its
records into figures a result carries."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lockstep import LockstepLayout
from ..records import site_sums
from ..request import RunRequest
from .bank_conflicts import MODEL as BANK_MODEL
from .bank_conflicts import SiteConflicts, bank_conflicts
from .coalescing import SiteCoalescing, coalescing
from .divergence import BranchDivergence, divergence
from .hazards import (
    BarrierDivergence,
    SharedRaces,
    UninitialisedReads,
    WarpHazard,
    barrier_divergence,
    shared_races,
    uninitialised_reads,
    warp_hazards,
)


@dataclass(frozen=True, eq=False)
class LockstepAnalysis:
    """Figures and hazards of one run, from the CPU lockstep emulation."""

    coalescing: tuple[SiteCoalescing, ...]
    bank_conflicts: tuple[SiteConflicts, ...]
    divergence: tuple[BranchDivergence, ...]
    barrier_divergence: tuple[BarrierDivergence, ...]
    races: SharedRaces
    uninitialised: UninitialisedReads
    #: warp operations with undefined results (masks, then shuffles)
    warp: tuple[WarpHazard, ...] = ()

    def reasons(self) -> list[str]:
        """What makes the run FAIL: each barrier reached divergently, races,
        reads of unwritten shared memory, warp operations with undefined results."""
        reasons = [barrier.describe() for barrier in self.barrier_divergence]
        if self.races.count:
            reasons.append(self.races.describe())
        if self.uninitialised.count:
            reasons.append(self.uninitialised.describe())
        reasons.extend(hazard.describe() for hazard in self.warp)
        return reasons

    def summary(self) -> dict:
        """The keys of result.json these figures fill."""
        return {
            "coalescing": [c.summary() for c in self.coalescing],
            "bank_conflicts": [c.summary() for c in self.bank_conflicts],
            "bank_conflict_model": BANK_MODEL,
            "divergence": [d.summary() for d in self.divergence],
            "barrier_divergence": [b.summary() for b in self.barrier_divergence],
            "shared_races": self.races.summary(),
            "uninitialised_shared_reads": self.uninitialised.summary(),
            "warp_operations": [hazard.summary() for hazard in self.warp],
        }


def read_analysis(lockstep: dict[str, np.ndarray], layout: LockstepLayout,
                  request: RunRequest, slots: tuple[tuple[str, str, int], ...]) -> LockstepAnalysis:
    """Figures from a recording run's lockstep records; ``slots`` gives
    (name, role, ndim) of each checked array, as the helpers number them."""
    blocks = request.blocks
    item = np.dtype(request.dtype).itemsize
    names = tuple(name for name, _, _ in slots)
    ndims = tuple(ndim for _, _, ndim in slots)
    shared_bytes = {a.name: np.dtype(a.dtype).itemsize for a in layout.block_arrays}
    acc, accw = site_sums(lockstep), lockstep["_tm_accw"]
    return LockstepAnalysis(
        coalescing=coalescing(acc, accw, layout.sites, blocks, item),
        bank_conflicts=bank_conflicts(acc, accw, layout.sites, blocks, shared_bytes),
        divergence=divergence(lockstep["_tm_br"], lockstep["_tm_brw"], layout.branches, blocks),
        barrier_divergence=barrier_divergence(lockstep["_tm_bar"], layout.barriers,
                                              request.grid2, request.block2),
        races=shared_races(lockstep["_tm_race"], layout.sites, names, ndims, request.grid2,
                           request.block2),
        uninitialised=uninitialised_reads(lockstep["_tm_uninit"], layout.sites, names, ndims,
                                          request.grid2, request.block2),
        warp=warp_hazards(lockstep["_tm_warp"], request.grid2, request.block2))
