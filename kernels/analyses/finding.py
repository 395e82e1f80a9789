"""What one line of a kernel did in a run: the unit the source view and the
command line speak in (findings.py gathers a result's; each analysis of the
lockstep records makes its own, record_clients.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """What one line of the kernel did in this run."""

    line: int
    kind: str  # "out of bounds", "coalescing", "bank conflicts", "divergence",
    #            "barrier divergence", "race", "uninitialised read", "warp operation",
    #            "division by zero", "store",
    #            "cause" (a diagnosis: analyses/diagnoses.py),
    #            "disagreement" (a second backend's run: analyses/agreement.py)
    text: str
    #: a fault (FAIL reason, or traffic past the ideal) rather than information
    fault: bool
    #: the map that shows what is involved, and the row of its analysis table
    map_name: str | None = None
    row: int = 0

