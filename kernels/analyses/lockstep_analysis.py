"""What the lockstep emulation measured besides the maps: warp requests to
memory, branches, barriers and shared-memory hazards, read back from its
records into figures a result carries."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lowering import LockstepLayout
from ..element_types import dtype_of
from ..records import site_sums
from ..request import RunRequest
from .bank_conflicts import MODEL as BANK_MODEL
from .bank_conflicts import SiteConflicts, bank_conflicts
from .coalescing import SiteCoalescing, coalescing
from .divergence import BranchDivergence, divergence
from .hazards import (
    BarrierDivergence,
    GlobalRaces,
    SharedRaces,
    UninitialisedReads,
    WarpHazard,
    barrier_divergence,
    global_races,
    shared_races,
    uninitialised_reads,
    warp_hazards,
)

#: A run with no global array checked for races, or none found.
NO_GLOBAL_RACES = GlobalRaces(0)


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
    #: races in global memory (a described kernel's arrays it reads and writes)
    global_races: GlobalRaces = NO_GLOBAL_RACES

    def reasons(self) -> list[str]:
        """What makes the run FAIL: each barrier reached divergently, races,
        reads of unwritten shared memory, warp operations with undefined results."""
        reasons = [barrier.describe() for barrier in self.barrier_divergence]
        if self.races.count:
            reasons.append(self.races.describe())
        if self.uninitialised.count:
            reasons.append(self.uninitialised.describe())
        reasons.extend(hazard.describe() for hazard in self.warp)
        if self.global_races.count:
            reasons.append(self.global_races.describe())
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
            "global_races": self.global_races.summary(),
        }


def read_analysis(lockstep: dict[str, np.ndarray], layout: LockstepLayout,
                  request: RunRequest, slots: tuple[tuple[str, str, int], ...]) -> LockstepAnalysis:
    """Figures from a recording run's lockstep records; ``slots`` gives
    (name, role, ndim) of each checked array, as the helpers number them."""
    blocks = request.blocks
    item = {name: np.dtype(dtype_of(request.element_types, name)).itemsize
            for name, role, _ in slots if role not in ("shared", "local")}
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
        warp=warp_hazards(lockstep["_tm_warp"], request.grid2, request.block2),
        global_races=global_races(lockstep, layout.race_arrays, layout.sites, names,
                                  _kernel_shapes(request, slots), request.grid2,
                                  request.block2))


def _kernel_shapes(request: RunRequest, slots: tuple[tuple[str, str, int], ...]
                   ) -> dict[str, tuple[int, ...]]:
    """Each described array's shape as the kernel indexes it (1-D when it
    indexes it flat)."""
    shapes = {}
    for argument in request.arguments:
        if hasattr(argument, "shape"):
            shapes[argument.name] = tuple(argument.shape)
    for name, _, ndim in slots:
        if name in shapes and ndim == 1:
            shapes[name] = (int(np.prod(shapes[name])),)
    return shapes
