"""What the lockstep emulation measured besides the maps: warp requests to
memory, branches, barriers and shared-memory hazards, read back from its
records into figures a result carries."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lowering import LockstepLayout
from ..request import RunRequest
from .bank_conflicts import SiteConflicts
from .coalescing import SiteCoalescing
from .divergence import BranchDivergence
from .finding import Finding
from .hazards import BarrierDivergence, GlobalRaces, SharedRaces, UninitialisedReads, WarpHazard
from .record_clients import CLIENTS, RunFrame, read_figures

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

    # Each of these walks the record clients (record_clients.py), where each
    # analysis says what it adds to a result.
    def reasons(self) -> list[str]:
        """What makes the run FAIL: each barrier reached divergently, races,
        reads of unwritten shared memory, warp operations with undefined results."""
        return [reason for client in CLIENTS for reason in client.reasons(self._figure(client))]

    def summary(self) -> dict:
        """The keys of result.json these figures fill."""
        summary = {}
        for client in CLIENTS:
            summary[client.key] = client.summarise(self._figure(client))
            summary.update(client.constants)
        return summary

    def fault_counts(self) -> dict[str, int]:
        """The verdict's count of each check's faults, by its field there."""
        return {client.verdict_field: client.faults(self._figure(client))
                for client in CLIENTS if client.verdict_field}

    def failed_checks(self) -> list[tuple[str, str]]:
        """Each check that failed: its name, and why values can come out right
        in the emulation all the same."""
        return [(client.check, client.why_right) for client in CLIENTS
                if client.verdict_field and client.faults(self._figure(client))]

    def findings(self) -> list[Finding]:
        """What each analysis found, by line."""
        return [finding for client in CLIENTS for finding in client.findings(self._figure(client))]

    def _figure(self, client):
        return getattr(self, client.field)


def read_analysis(lockstep: dict[str, np.ndarray], layout: LockstepLayout,
                  request: RunRequest, slots: tuple[tuple[str, str, int], ...]) -> LockstepAnalysis:
    """Figures from a recording run's lockstep records; ``slots`` gives
    (name, role, ndim) of each checked array, as the helpers number them."""
    return LockstepAnalysis(**read_figures(lockstep, RunFrame(layout, request, slots)))
