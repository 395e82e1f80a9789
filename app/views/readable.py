"""Widgets that keep what they show readable in a small window: a table asks
for room for at least five rows (or all of its rows), and shows each cell's
whole text on hover (at 1280 x 800 the bank-conflict table showed one row and
the hazards text was cut off)."""
from __future__ import annotations

from ..qt import QtCore, QtWidgets

#: rows a table keeps room for (fewer when it has fewer)
ROWS_SHOWN = 5


class ReadableTable(QtWidgets.QTableWidget):
    """A table whose minimum height shows ``ROWS_SHOWN`` rows, or all of its
    rows when it has fewer (one, empty)."""

    def __init__(self, rows: int, columns: int, parent=None):
        super().__init__(rows, columns, parent)
        model = self.model()
        for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset):
            signal.connect(self.updateGeometry)

    def setItem(self, row: int, column: int, item: QtWidgets.QTableWidgetItem) -> None:  # noqa: N802
        """(Each cell's whole text on hover, where it has no tooltip of its
        own: a narrow panel elides source lines and access labels.)"""
        if item is not None and not item.toolTip():
            item.setToolTip(item.text())
        super().setItem(row, column, item)

    def _rows_height(self, rows: int) -> int:
        row = self.verticalHeader().defaultSectionSize()
        if self.rowCount():
            row = max(row, self.rowHeight(0))
        header = self.horizontalHeader().sizeHint().height() if self.horizontalHeader().isVisible() \
            or not self.horizontalHeader().isHidden() else 0
        scroll = self.horizontalScrollBar().sizeHint().height()
        return 2 * self.frameWidth() + header + rows * row + scroll

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        hint = super().minimumSizeHint()
        rows = max(1, min(self.rowCount(), ROWS_SHOWN))
        return QtCore.QSize(hint.width(), self._rows_height(rows))

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        hint = super().sizeHint()
        return QtCore.QSize(hint.width(), max(self.minimumSizeHint().height(),
                                              self._rows_height(min(self.rowCount(), 10))))


class ReadableList(QtWidgets.QListWidget):
    """A list that keeps room for ``ROWS_SHOWN`` lines."""

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        hint = super().minimumSizeHint()
        line = self.fontMetrics().lineSpacing() + 4
        return QtCore.QSize(hint.width(), 2 * self.frameWidth() + ROWS_SHOWN * line)
