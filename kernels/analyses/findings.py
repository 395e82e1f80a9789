"""A result's findings by line of the kernel's source: users think in lines.

Each finding names its line, says what was found there in a few words, says
whether it is a fault (a FAIL reason, or memory traffic past the ideal), and
names the map that shows the elements, threads or warps involved (with the
row of its analysis table for the per-warp maps).

Out-of-bounds accesses are counted per array and direction, not per line
(the recording keeps one counter per array): they are put on every line that
accesses that array in that direction, and the text says so when there are
several.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..result import RunResult
from .hazards import shared_elements_raced


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


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def line_findings(result: RunResult) -> tuple[Finding, ...]:
    """Every finding of ``result``, in line order."""
    found: list[Finding] = []
    confirmation = result.confirmation
    if confirmation is not None and confirmation.disagreements:
        # (a bug in ThreadMap or in the hardware: on the lines that made the
        # figures, as a fault, never hidden)
        for line in store_lines(result) or ((result.kernel.first_line,) if result.kernel else ()):
            found.append(Finding(line, "disagreement", confirmation.line(), True, "count"))
    for diagnosis in result.diagnoses:  # (the cause, first on its line and in the list)
        for line in diagnosis.lines:
            found.append(Finding(line, "cause", f"{diagnosis.message}. Evidence: "
                                 f"{diagnosis.evidence}. Fix: {diagnosis.fix}", True))
    snapshot = result.kernel
    accesses = snapshot.accesses if snapshot is not None else ()
    for oob in result.maps.out_of_bounds:
        if not oob.count:
            continue
        kinds = ("load",) if oob.direction == "read" else ("store", "atomic")
        lines = sorted({line for line, kind, array, _ in accesses
                        if array == oob.array and kind in kinds})
        where = "" if len(lines) <= 1 else \
            f" (counted per array: any of lines {', '.join(map(str, lines[:6]))})"
        for line in lines:
            found.append(Finding(line, "out of bounds",
                                 f"{_plural(oob.count, 'out-of-bounds ' + oob.direction)} "
                                 f"of {oob.array}{where}", True, "oob"))
    for division in result.maps.divisions_by_zero:
        found.append(Finding(division.line, "division by zero",
                             f"{_plural(division.count, 'division')} by zero ({division.text}; "
                             f"first: thread {division.first_thread})", True, "count"))
    analysis = result.analysis
    if analysis is not None:
        for row, site in enumerate(analysis.coalescing):
            if site.requests:
                found.append(Finding(
                    site.site.line, "coalescing",
                    f"{site.site.kind} {site.site.text}: {site.mean_sectors:.1f} sectors per "
                    f"request (ideal {site.ideal_sectors:.1f}, {site.efficiency:.0%})",
                    site.efficiency < 0.5, "sectors", row))
        for row, site in enumerate(analysis.bank_conflicts):
            if site.requests:
                found.append(Finding(
                    site.site.line, "bank conflicts",
                    f"{site.site.kind} {site.site.text}: {site.mean_ways:.1f}-way (ideal "
                    f"{site.ideal_ways:.1f}, worst {site.max_ways})",
                    site.mean_ways > site.ideal_ways * 1.01, "ways", row))
        for row, branch in enumerate(analysis.divergence):
            if branch.divergent:
                found.append(Finding(
                    branch.branch.line, "divergence",
                    f"{branch.branch.kind} splits {_plural(branch.divergent, 'warp run')} of "
                    f"{branch.evaluations:,} that reached it (mean "
                    f"{branch.mean_active_lanes:.1f} lanes went on)",
                    False, "lanes", row))
        for barrier in analysis.barrier_divergence:
            found.append(Finding(
                barrier.line, "barrier divergence",
                f"reached by {barrier.arrived:,} of {barrier.arrived + barrier.missing:,} threads "
                f"of block {barrier.first_block} ({_plural(barrier.blocks, 'block')})", True))
        races = analysis.races
        if races.count and races.first is not None:
            for access in races.first:
                found.append(Finding(access.access.line, "race",
                                     f"{shared_elements_raced(races.count)} (first: "
                                     f"{access.describe()})", True))
        raced = analysis.global_races
        if raced.count and raced.first is not None:
            for access in raced.first:
                found.append(Finding(access.access.line, "race",
                                     f"{_plural(raced.count, 'element')} of global memory "
                                     f"raced on, {raced.kind} (first: {access.describe()})",
                                     True))
        unset = analysis.uninitialised
        if unset.count and unset.first is not None:
            found.append(Finding(unset.first.access.line, "uninitialised read",
                                 f"{_plural(unset.count, 'read')} of shared memory never "
                                 f"written (first: {unset.first.describe()})", True))
        for hazard in analysis.warp:
            found.append(Finding(hazard.line, "warp operation", hazard.describe(), True))
    for line in store_lines(result):
        found.append(Finding(line, "store", f"stores into {result.output}", False, "writer"))
    return tuple(sorted(found, key=lambda f: (f.line, not f.fault, f.kind != "cause")))


def store_lines(result: RunResult) -> tuple[int, ...]:
    """Lines that store into the result's output array (the lines that wrote
    its elements: the recording keeps the writer of each element, not its line)."""
    snapshot = result.kernel
    if snapshot is None:
        return ()
    return tuple(sorted({line for line, kind, array, _ in snapshot.accesses
                         if array == result.output and kind in ("store", "atomic")}))
