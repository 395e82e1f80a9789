"""The kernel's source beside the map, each line with what it did in this
run: out-of-bounds accesses, sectors per request, bank conflicts, divergence,
races, barrier divergence, divisions by zero, stores into the output.

Selecting a line with findings asks the session for the map of what is
involved (the per-warp map of that access, the out-of-bounds map, ...);
clicking an element of the map marks the lines that store into the output.
"""
from __future__ import annotations

import html

from kernels import Finding, RunResult, line_findings, store_lines

from ..app_words import in_app_words
from ..models.map_images import element_text
from ..models.session import WARP_MAPS, Session
from ..qt import QtCore, QtGui, QtWidgets
from .readable import ReadableList, ReadableTable

COLUMNS = ("line", "source")
FAULT_BACKGROUND = "#fdecea"
MARKED_BACKGROUND = "#e3f2fd"
FAULT_TEXT = "#b71c1c"


class SourceView(QtWidgets.QWidget):
    """The shown result's kernel, line by line, and the list of its findings."""

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.findings: dict[int, list[Finding]] = {}
        self._lines: list[int] = []
        self._listed: list[Finding] = []
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.note = QtWidgets.QLabel("The kernel as it ran, and what each line did.")
        self.note.setWordWrap(True)
        self.note.setTextFormat(QtCore.Qt.TextFormat.RichText)
        layout.addWidget(self.note)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.table = ReadableTable(0, len(COLUMNS))
        self.table.setObjectName("source-table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        fixed = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.table.setFont(fixed)
        # One text line per source line: the default rows were twice as tall.
        self.table.verticalHeader().setDefaultSectionSize(
            QtGui.QFontMetrics(fixed).lineSpacing() + 4)
        self.table.setShowGrid(False)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        splitter.addWidget(self.table)
        self.list = ReadableList()
        self.list.setObjectName("findings")
        self.list.setWordWrap(True)
        splitter.addWidget(self.list)
        splitter.setSizes([300, 200])
        layout.addWidget(splitter, 1)
        self._cause_row: int | None = None
        self.table.viewport().installEventFilter(self)
        self.table.itemSelectionChanged.connect(self._on_line_selected)
        self.list.currentRowChanged.connect(self._on_finding_selected)
        session.current_changed.connect(self.show_result)

    def show_result(self, result: RunResult) -> None:
        table = self.table
        blocked = table.blockSignals(True), self.list.blockSignals(True)
        table.setRowCount(0)
        self.list.clear()
        snapshot = result.kernel
        self.findings = {}
        self._lines = []
        self._listed = []
        if snapshot is None:
            self.note.setText("This result has no copy of its kernel's source.")
            table.blockSignals(blocked[0])
            self.list.blockSignals(blocked[1])
            return
        for finding in line_findings(result):
            self.findings.setdefault(finding.line, []).append(finding)
        source = snapshot.lines
        last = max(snapshot.last_line, snapshot.first_line)
        self._lines = list(range(snapshot.first_line, min(last, len(source)) + 1))
        table.setRowCount(len(self._lines))
        for row, line in enumerate(self._lines):
            found = self.findings.get(line, [])
            marks = "!" if any(f.fault for f in found) else ("*" if found else " ")
            items = (QtWidgets.QTableWidgetItem(f"{line}{marks}"),
                     QtWidgets.QTableWidgetItem(source[line - 1]))
            if found:
                # (the line whole first: a narrow panel cuts it short)
                tip = "\n".join([source[line - 1].rstrip()]
                                + [f"{f.kind}: {f.text}" for f in found])
                for item in items:
                    item.setToolTip(tip)
            for column, item in enumerate(items):
                table.setItem(row, column, item)
            self._tint(row, marked=False)
        table.resizeColumnToContents(0)
        # Causes (diagnoses) first, then faults, then the rest, each in line order.
        self._listed = sorted((f for found in self.findings.values() for f in found),
                              key=lambda f: (f.kind != "cause", not f.fault, f.line))
        for finding in self._listed:
            item = QtWidgets.QListWidgetItem(f"line {finding.line}, {finding.kind}: "
                                             f"{finding.text}")
            if finding.fault:
                item.setForeground(QtGui.QColor(FAULT_TEXT))
            self.list.addItem(item)
        faults = sum(f.fault for f in self._listed)
        # The causes first, where they cannot be missed: above the code.
        causes = "".join(
            f"<b>Why</b>, line {d.line_list}: {html.escape(in_app_words(d.message))}. "
            f"<b>Fix</b>: {html.escape(in_app_words(d.fix))}<br>" for d in result.diagnoses)
        self.note.setText(
            (f"<span style='color:{FAULT_TEXT}'>{causes}</span>" if causes else "")
            + html.escape(f"{snapshot.name}, lines {self._lines[0]}-{self._lines[-1]}: ")
            + (f"{faults} finding{'s' if faults != 1 else ''} to look at (!)" if faults
               else "nothing wrong found")
            + ". Select a finding for its line and map; click an element of the map to mark "
            "the lines that store it.")
        # The first cause's line at the top of the code (shown, not selected:
        # selecting would switch the map); again each time the table is
        # resized, as the note above it grows, until the user scrolls it.
        self._cause_row = self.row_of_line(result.diagnoses[0].lines[0]) \
            if result.diagnoses else None
        self._show_cause_row()
        table.blockSignals(blocked[0])
        self.list.blockSignals(blocked[1])

    def _show_cause_row(self) -> None:
        row = self._cause_row
        if row is not None and self.table.item(row, 0) is not None:
            self.table.scrollToItem(self.table.item(row, 0),
                                    QtWidgets.QAbstractItemView.ScrollHint.PositionAtTop)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.table.viewport() and event.type() == QtCore.QEvent.Type.Resize:
            self._show_cause_row()
        elif watched is self.table.viewport() and event.type() == QtCore.QEvent.Type.Wheel:
            self._cause_row = None  # (the user scrolls: leave the table where they put it)
        return super().eventFilter(watched, event)

    def _tint(self, row: int, marked: bool) -> None:
        """A line's background: marked (stores the clicked element), else red
        for a fault, else none."""
        faulty = any(f.fault for f in self.findings.get(self._lines[row], []))
        brush = (QtGui.QBrush(QtGui.QColor(MARKED_BACKGROUND)) if marked else
                 QtGui.QBrush(QtGui.QColor(FAULT_BACKGROUND)) if faulty else QtGui.QBrush())
        for column in range(self.table.columnCount()):
            item = self.table.item(row, column)
            if item is not None:
                item.setBackground(brush)

    def row_of_line(self, line: int) -> int | None:
        try:
            return self._lines.index(line)
        except ValueError:
            return None

    def select_line(self, line: int) -> None:
        row = self.row_of_line(line)
        if row is not None:
            self.table.selectRow(row)
            self.table.scrollTo(self.table.model().index(row, 0),
                                QtWidgets.QAbstractItemView.ScrollHint.PositionAtCenter)

    def select_finding(self, index: int) -> None:
        self.list.setCurrentRow(index)

    def _show(self, finding: Finding) -> None:
        if finding.map_name is None:
            return
        if finding.map_name in WARP_MAPS:
            self.session.show_warp_row(finding.map_name, finding.row)
        else:
            self.session.set_map(finding.map_name)

    def _on_finding_selected(self, index: int) -> None:
        if not 0 <= index < len(self._listed):
            return
        finding = self._listed[index]
        row = self.row_of_line(finding.line)
        if row is not None:
            blocked = self.table.blockSignals(True)
            self.table.selectRow(row)
            self.table.scrollToItem(self.table.item(row, 0))
            self.table.blockSignals(blocked)
        self._show(finding)

    def _on_line_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        line = self._lines[rows[0].row()]
        shown = [f for f in self.findings.get(line, []) if f.map_name is not None]
        if shown:
            self._show(shown[0])  # (faults first)
    def mark_element(self, row: int, col: int) -> list[int]:
        """Mark the lines that store element (row, col) of the output; returns them."""
        result = self.session.current
        if result is None:
            return []
        lines = list(store_lines(result))
        for table_row, line in enumerate(self._lines):
            self._tint(table_row, marked=line in lines)
        written = result.maps.count[row, col] if result.stowed is None else 0
        writer = int(result.maps.min_writer[row, col]) if written else None
        where = ", ".join(map(str, lines)) or "none found"
        element = element_text(result, result.output, row, col, result.maps.count.shape[1]) \
            if result.request.arguments else f"{result.output}[{row}, {col}]"
        self.note.setText(
            f"{element}: "
            + (f"written {int(written)} time{'s' if written != 1 else ''}, first by thread "
               f"{writer}, at line {where}" if written else "never written; lines that store "
               f"into {result.output}: {where}")
            + (" (the recording keeps the writer of each element, not its line)"
               if len(lines) > 1 else ""))
        return lines

