"""The results table: one row per run, kept across runs."""
from __future__ import annotations

from kernels import BACKEND_SHORT, RunResult, format_dims, format_seconds

from ..models.session import Session, rel_error_text
from ..qt import QtCore, QtGui, QtWidgets
from .readable import ROWS_SHOWN

COLUMNS = ("#", "kernel", "shape", "grid x block", "backend", "verdict", "why",
           "relative error", "kernel time", "GFLOP/s", "reference time")
#: the widest a column starts (pixels): the rest of a longer cell is on hover
WIDEST_COLUMN = 240


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


def backend_text(result: RunResult) -> str:
    """``"CPU emulation (instant)"``; with the run that followed it,
    ``"... then GPU: agrees"`` (or ``DISAGREES``, or ``not run``)."""
    r = result.request
    text = BACKEND_SHORT.get(r.backend, r.backend) + (f" ({result.tier})" if result.tier else "")
    confirmation = result.confirmation
    if result.follows:
        return f"{text}, then {BACKEND_SHORT.get(result.follows, result.follows)}: running"
    if confirmation is None:
        return text
    state = "not run" if confirmation.error else (
        "agrees" if confirmation.agrees else "DISAGREES")
    return f"{text}, then {BACKEND_SHORT.get(confirmation.backend, confirmation.backend)}: {state}"


class ResultsModel(QtCore.QAbstractTableModel):
    """The session's runs, in the order they finished: a table over
    :attr:`Session.results`, told of each new one by the session."""

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self._rows = len(session.results)
        session.result_added.connect(self._on_result_added)
        # A bound method, not a lambda: Qt drops the connection when this model
        # is deleted, where a lambda outlived it and a run stowed to disk later
        # raised "Internal C++ object (ResultsModel) already deleted" (CI).
        session.result_moved.connect(self._on_result_moved)

    def _on_result_moved(self, row: int) -> None:
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    @property
    def results(self) -> list[RunResult]:
        return self.session.results

    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else self._rows

    def columnCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if role == QtCore.Qt.ItemDataRole.DisplayRole and \
                orientation == QtCore.Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def _on_result_added(self, row: int) -> None:
        self.beginInsertRows(QtCore.QModelIndex(), self._rows, row)
        self._rows = row + 1
        self.endInsertRows()

    def cell_text(self, row: int, column: int) -> str:
        result = self.results[row]
        r = result.request
        verdict = result.verdict
        kernel_timing = result.kernel_timing
        reference = result.reference_timing
        values = (
            f"{row + 1} (on disk)" if result.stowed is not None else str(row + 1), r.kernel_label, r.shape_label if r.arguments else f"{r.m}x{r.k}x{r.n} {r.dtype}",
            f"{format_dims(r.grid)} x {format_dims(r.block)}",
            backend_text(result),
            verdict.shown_word, verdict.short_reasons,
            rel_error_text(result), kernel_time_text(result),
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
            # the cell's own text whole first (a narrow column elides it)
            head = [self.cell_text(index.row(), index.column()), ""]
            lines = list(result.verdict.reasons) or ["every element written once, no collision, "
                                                     "no out-of-bounds access, error within tolerance"]
            if result.verdict.reference_note:
                lines = list(result.verdict.reasons) + [
                    f"no correctness verdict: {result.verdict.reference_note}"]
            if result.confirmation is not None:
                lines.append(result.confirmation.line())
            lines += [t.describe() for t in result.timings]
            return "\n".join(head + lines)
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and COLUMNS[index.column()] == "backend" \
                and result.confirmation is not None and not result.confirmation.agrees:
            return QtGui.QBrush(QtGui.QColor("#c62828"))  # (a disagreement, or no GPU run)
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and COLUMNS[index.column()] == "verdict":
            return QtGui.QBrush(QtGui.QColor({"PASS": "#1a7f37", "CHECKED": "#6d4c41"}.get(
                result.verdict.shown_word, "#c62828")))
        return None


class ResultsView(QtWidgets.QTableView):
    """The results table: selecting a row shows that run; Ctrl+click picks a
    second one to compare (the session keeps the selection)."""

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.setObjectName("results-table")
        self.results = ResultsModel(session, self)
        self.setModel(self.results)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.horizontalHeader().setStretchLastSection(True)
        self.verticalHeader().hide()
        # One line a row, the rest of a cell on hover: two-line rows let the
        # dock show three runs at 1280 x 800.
        self.setWordWrap(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().lineSpacing() + 8)
        self.results.rowsInserted.connect(self._fit_columns)
        self.selectionModel().currentRowChanged.connect(self._on_current_row_changed)
        self.selectionModel().selectionChanged.connect(self._on_selection_changed)
        session.current_changed.connect(self._on_current_changed)

    def _fit_columns(self) -> None:
        """Each column as wide as its text, up to ``WIDEST_COLUMN`` (it
        showed "128x256x12..." and "CPU emulatio..." in columns of 100 px);
        a new run's longer text widens a column, never narrows it (a width
        the user dragged wider stays)."""
        header = self.horizontalHeader()
        for column in range(len(COLUMNS) - 1):
            wanted = min(self.sizeHintForColumn(column), WIDEST_COLUMN)
            if wanted > header.sectionSize(column):
                header.resizeSection(column, wanted)

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        """Room for five runs, whatever the number of rows: a fixed share of
        the window (the table grew with each run until the map was 140 px
        tall)."""
        rows = ROWS_SHOWN
        height = (2 * self.frameWidth() + self.horizontalHeader().sizeHint().height()
                  + rows * self.verticalHeader().defaultSectionSize()
                  + self.horizontalScrollBar().sizeHint().height())
        return QtCore.QSize(super().minimumSizeHint().width(), height)

    def _on_current_row_changed(self, current: QtCore.QModelIndex, _previous) -> None:
        if current.isValid():
            self.session.show(self.session.results[current.row()])

    def _on_selection_changed(self, *_) -> None:
        rows = sorted(index.row() for index in self.selectionModel().selectedRows())
        self.session.set_selection([self.session.results[row] for row in rows])

    def _on_current_changed(self, result: RunResult) -> None:
        row = self.session.row_of(result)
        if row is not None and self.currentIndex().row() != row:
            self.selectRow(row)
