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

from ..result import RunResult
from ..words import counted
from .finding import Finding


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
                                 f"{counted(oob.count, 'out-of-bounds ' + oob.direction)} "
                                 f"of {oob.array}{where}", True, "oob"))
    for division in result.maps.divisions_by_zero:
        found.append(Finding(division.line, "division by zero",
                             f"{counted(division.count, 'division')} by zero ({division.text}; "
                             f"first: thread {division.first_thread})", True, "count"))
    if result.analysis is not None:
        found.extend(result.analysis.findings())
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
