"""The results table: one row per run, kept across runs."""
from __future__ import annotations

from kernels import BACKEND_SHORT, RunResult, format_dims, format_seconds

from .qt import QtCore, QtGui

COLUMNS = ("#", "kernel", "shape", "grid x block", "backend", "verdict", "why",
           "rel. error", "kernel time", "GFLOP/s", "reference time")


def kernel_time_text(result: RunResult) -> str:
    """``"1.2 ms (CPU emulation)"``; the instrumented time when the plain kernel
    was not launched, saying so."""
    timing = result.kernel_timing
    if timing is None:
        timing = result.timing("instrumented kernel")
        if timing is None:
            return "-"
        return f"{format_seconds(timing.seconds)} (instrumented, {BACKEND_SHORT[timing.backend]})"
    label = "GPU events" if timing.backend == "gpu" else BACKEND_SHORT[timing.backend]
    return f"{format_seconds(timing.seconds)} ({label})"


class ResultsModel(QtCore.QAbstractTableModel):
    """Runs in the order they finished."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.results: list[RunResult] = []

    def rowCount(self, parent=None) -> int:  # noqa: N802 (Qt API)
        return 0 if parent is not None and parent.isValid() else len(self.results)

    def columnCount(self, parent=None) -> int:  # noqa: N802
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == QtCore.Qt.ItemDataRole.DisplayRole and \
                orientation == QtCore.Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def add(self, result: RunResult) -> int:
        row = len(self.results)
        self.beginInsertRows(QtCore.QModelIndex(), row, row)
        self.results.append(result)
        self.endInsertRows()
        return row

    def cell_text(self, row: int, column: int) -> str:
        result = self.results[row]
        r = result.request
        verdict = result.verdict
        kernel_timing = result.kernel_timing
        reference = result.reference_timing
        values = (
            str(row + 1), r.kernel_label, f"{r.m}x{r.k}x{r.n} {r.dtype}",
            f"{format_dims(r.grid)} x {format_dims(r.block)}",
            BACKEND_SHORT.get(r.backend, r.backend), verdict.word, verdict.short_reasons,
            f"{verdict.errors.rel_error:.2e}", kernel_time_text(result),
            f"{kernel_timing.gflops:.3g}" if kernel_timing and kernel_timing.gflops else "-",
            (f"{format_seconds(reference.seconds)} ({BACKEND_SHORT[reference.backend]})"
             if reference else "-"),
        )
        return values[column]

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        result = self.results[index.row()]
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return self.cell_text(index.row(), index.column())
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            lines = list(result.verdict.reasons) or ["every element written once, no collision, "
                                                     "no out-of-bounds access, error within tolerance"]
            lines += [t.describe() for t in result.timings]
            return "\n".join(lines)
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and COLUMNS[index.column()] == "verdict":
            return QtGui.QBrush(QtGui.QColor("#1a7f37" if result.verdict.passed else "#c62828"))
        return None
