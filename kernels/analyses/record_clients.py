"""The analyses of a lockstep run, each a client of its records.

Both emulation tiers fill the same named records (``derived/lowering.py``'s
layout, ``records.py``'s merge rules); an analysis is one ``RecordClient``
here, written once, that says which records it reads, how it reads them
into a figure, and what that figure adds to a result: its keys in
result.json, the reasons it gives a FAIL, its count in the verdict and its
findings by line.  ``LockstepAnalysis`` holds one figure per client, and
everything that lists the analyses (its reasons and summary, the verdict,
the findings) walks ``CLIENTS``: a new analysis is a new client, as in
triton-viz, where each analysis is a client of one interpreter.

Unlike triton-viz's clients, these are not called while the kernel runs:
the records are filled by compiled code, where a Python call per access
would cost orders of magnitude; a client reads the finished records.
A client reads only the records it declares (``Declared``), so what each
analysis depends on is said in one place and checked.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..derived.lowering import LockstepLayout
from ..element_types import dtype_of
from ..records import site_sums
from ..request import RunRequest
from ..words import counted
from .bank_conflicts import MODEL as BANK_MODEL
from .bank_conflicts import bank_conflicts
from .coalescing import coalescing
from .divergence import divergence
from .finding import Finding
from .hazards import (
    barrier_divergence,
    global_races,
    shared_elements_raced,
    shared_races,
    uninitialised_reads,
    warp_hazards,
)

#: Why an output can come out right in the emulation with a check failed:
#: what the emulation does where the order of threads decides.
LOCKSTEP_ORDER = ("the emulation's one fixed order of the threads (lockstep: warp after "
                  "warp, block after block) decided every race")


@dataclass(frozen=True)
class RunFrame:
    """What a client needs of the run besides its records: the launch, the
    layout the records were numbered by, and the checked arrays (``slots``:
    name, role and dimensions of each, as the helpers number them)."""

    layout: LockstepLayout
    request: RunRequest
    slots: tuple[tuple[str, str, int], ...]

    @property
    def grid(self) -> tuple[int, int]:
        return self.request.grid2

    @property
    def block(self) -> tuple[int, int]:
        return self.request.block2

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.slots)

    @cached_property
    def ndims(self) -> tuple[int, ...]:
        return tuple(ndim for _, _, ndim in self.slots)

    @cached_property
    def item_bytes(self) -> dict[str, int]:
        """Each global array's element size."""
        return {name: np.dtype(dtype_of(self.request.element_types, name)).itemsize
                for name, role, _ in self.slots if role not in ("shared", "local")}

    @cached_property
    def shared_bytes(self) -> dict[str, int]:
        """Each shared array's element size."""
        return {a.name: np.dtype(a.dtype).itemsize for a in self.layout.block_arrays}

    @cached_property
    def kernel_shapes(self) -> dict[str, tuple[int, ...]]:
        """Each described array's shape as the kernel indexes it (1-D when it
        indexes it flat)."""
        shapes = {argument.name: tuple(argument.shape) for argument in self.request.arguments
                  if hasattr(argument, "shape")}
        for name, _, ndim in self.slots:
            if name in shapes and ndim == 1:
                shapes[name] = (int(np.prod(shapes[name])),)
        return shapes


class UndeclaredRecord(Exception):
    """A client read a record it does not declare (a bug in ThreadMap).  Not a
    KeyError, so that ``get`` cannot take it for a record the run lacks."""


class Declared(Mapping):
    """The records one client may read: those it names, and those whose names
    begin with a name of its ending in ``*``."""

    def __init__(self, records: Mapping[str, np.ndarray], client: RecordClient):
        self._records = records
        self._client = client

    def _declares(self, name: str) -> bool:
        return any(name == d or (d.endswith("*") and name.startswith(d[:-1]))
                   for d in self._client.records)

    def __getitem__(self, name: str) -> np.ndarray:
        if not self._declares(name):
            raise UndeclaredRecord(f"the {self._client.field} client reads {name}, "
                                   "which it does not declare")
        return self._records[name]

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._records if self._declares(name))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _nothing(figure: Any) -> list:
    return []


@dataclass(frozen=True)
class RecordClient:
    """One analysis of the lockstep records."""

    #: the ``LockstepAnalysis`` field its figure fills
    field: str
    #: the records it reads (a name ending in ``*``: every record so named)
    records: tuple[str, ...]
    #: the figure, from its declared records and the run
    read: Callable[[Declared, RunFrame], Any]
    #: its key in result.json, and the value there
    key: str
    summarise: Callable[[Any], Any]
    #: keys result.json always has beside ``key``, measured or not
    constants: tuple[tuple[str, Any], ...] = ()
    #: what the figure shows by line
    findings: Callable[[Any], list[Finding]] = _nothing
    # A check that can FAIL a run:
    #: its field in the verdict, and how many faults the figure counts there
    verdict_field: str = ""
    faults: Callable[[Any], int] = lambda figure: 0
    #: the sentences a FAIL gives for it
    reasons: Callable[[Any], list[str]] = _nothing
    #: its name where a FAIL with right values lists the checks that failed,
    #: and why the values came out right in the emulation all the same
    check: str = ""
    why_right: str = ""


def _coalescing_findings(sites) -> list[Finding]:
    return [Finding(s.site.line, "coalescing",
                    f"{s.site.kind} {s.site.text}: {s.mean_sectors:.1f} sectors per request "
                    f"(ideal {s.ideal_sectors:.1f}, {s.efficiency:.0%})",
                    s.efficiency < 0.5, "sectors", row)
            for row, s in enumerate(sites) if s.requests]


def _bank_findings(sites) -> list[Finding]:
    return [Finding(s.site.line, "bank conflicts",
                    f"{s.site.kind} {s.site.text}: {s.mean_ways:.1f}-way (ideal "
                    f"{s.ideal_ways:.1f}, worst {s.max_ways})",
                    s.mean_ways > s.ideal_ways * 1.01, "ways", row)
            for row, s in enumerate(sites) if s.requests]


def _divergence_findings(branches) -> list[Finding]:
    return [Finding(b.branch.line, "divergence",
                    f"{b.branch.kind} splits {counted(b.divergent, 'warp run')} of "
                    f"{b.evaluations:,} that reached it (mean {b.mean_active_lanes:.1f} lanes "
                    "went on)", False, "lanes", row)
            for row, b in enumerate(branches) if b.divergent]


def _barrier_findings(barriers) -> list[Finding]:
    return [Finding(b.line, "barrier divergence",
                    f"reached by {b.arrived:,} of {b.arrived + b.missing:,} threads of block "
                    f"{b.first_block} ({counted(b.blocks, 'block')})", True)
            for b in barriers]


def _shared_race_findings(races) -> list[Finding]:
    if not races.count or races.first is None:
        return []
    return [Finding(access.access.line, "race", f"{shared_elements_raced(races.count)} "
                    f"(first: {access.describe()})", True) for access in races.first]


def _global_race_findings(raced) -> list[Finding]:
    if not raced.count or raced.first is None:
        return []
    return [Finding(access.access.line, "race", f"{counted(raced.count, 'element')} of global "
                    f"memory raced on, {raced.kind} (first: {access.describe()})", True)
            for access in raced.first]


def _uninitialised_findings(unset) -> list[Finding]:
    if not unset.count or unset.first is None:
        return []
    return [Finding(unset.first.access.line, "uninitialised read",
                    f"{counted(unset.count, 'read')} of shared memory never written (first: "
                    f"{unset.first.describe()})", True)]


def _counted_reason(figure) -> list[str]:
    return [figure.describe()] if figure.count else []


#: The analyses, in the order their reasons, keys and findings are given.
CLIENTS: tuple[RecordClient, ...] = (
    RecordClient(
        "coalescing", ("_tm_req", "_tm_accw"),
        lambda r, run: coalescing(site_sums(r), r["_tm_accw"], run.layout.sites,
                                  run.request.blocks, run.item_bytes),
        "coalescing", lambda sites: [s.summary() for s in sites],
        findings=_coalescing_findings),
    RecordClient(
        "bank_conflicts", ("_tm_req", "_tm_accw"),
        lambda r, run: bank_conflicts(site_sums(r), r["_tm_accw"], run.layout.sites,
                                      run.request.blocks, run.shared_bytes),
        "bank_conflicts", lambda sites: [s.summary() for s in sites],
        constants=(("bank_conflict_model", BANK_MODEL),), findings=_bank_findings),
    RecordClient(
        "divergence", ("_tm_br", "_tm_brw"),
        lambda r, run: divergence(r["_tm_br"], r["_tm_brw"], run.layout.branches,
                                  run.request.blocks),
        "divergence", lambda branches: [b.summary() for b in branches],
        findings=_divergence_findings),
    RecordClient(
        "barrier_divergence", ("_tm_bar",),
        lambda r, run: barrier_divergence(r["_tm_bar"], run.layout.barriers, run.grid,
                                          run.block),
        "barrier_divergence", lambda barriers: [b.summary() for b in barriers],
        findings=_barrier_findings, verdict_field="barrier_divergence", faults=len,
        reasons=lambda barriers: [b.describe() for b in barriers],
        check="barrier divergence",
        why_right="the emulation lets the threads that reach a barrier go on without those "
                  "that returned or went another way"),
    RecordClient(
        "races", ("_tm_race",),
        lambda r, run: shared_races(r["_tm_race"], run.layout.sites, run.names, run.ndims,
                                    run.grid, run.block),
        "shared_races", lambda races: races.summary(), findings=_shared_race_findings,
        verdict_field="shared_races", faults=lambda races: races.count,
        reasons=_counted_reason, check="shared-memory race", why_right=LOCKSTEP_ORDER),
    RecordClient(
        "uninitialised", ("_tm_uninit",),
        lambda r, run: uninitialised_reads(r["_tm_uninit"], run.layout.sites, run.names,
                                           run.ndims, run.grid, run.block),
        "uninitialised_shared_reads", lambda unset: unset.summary(),
        findings=_uninitialised_findings, verdict_field="uninitialised_shared_reads",
        faults=lambda unset: unset.count, reasons=_counted_reason,
        check="uninitialised shared read", why_right="shared memory starts at 0 in the emulation"),
    RecordClient(
        "warp", ("_tm_warp",),
        lambda r, run: warp_hazards(r["_tm_warp"], run.grid, run.block),
        "warp_operations", lambda hazards: [h.summary() for h in hazards],
        findings=lambda hazards: [Finding(h.line, "warp operation", h.describe(), True)
                                  for h in hazards],
        verdict_field="warp_hazards", faults=lambda hazards: sum(h.count for h in hazards),
        reasons=lambda hazards: [h.describe() for h in hazards], check="warp operation",
        why_right="the emulation gives a shuffle of a lane not taking part that lane's own "
                  "value, and never hangs on a mask"),
    RecordClient(
        "global_races", ("_tm_grace", "_tm_granges_*"),
        lambda r, run: global_races(r, run.layout.race_arrays, run.layout.sites, run.names,
                                    run.kernel_shapes, run.grid, run.block),
        "global_races", lambda raced: raced.summary(), findings=_global_race_findings,
        verdict_field="global_races", faults=lambda raced: raced.count,
        reasons=_counted_reason, check="global-memory race", why_right=LOCKSTEP_ORDER),
)


def read_figures(records: Mapping[str, np.ndarray], run: RunFrame) -> dict[str, Any]:
    """Each client's figure, by its field, each read from its own records."""
    return {client.field: client.read(Declared(records, client), run) for client in CLIENTS}


def unmeasured_summary() -> dict[str, Any]:
    """result.json's keys of the analyses where none was measured: null."""
    summary: dict[str, Any] = {}
    for client in CLIENTS:
        summary[client.key] = None
        summary.update(client.constants)
    return summary
