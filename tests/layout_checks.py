"""What "readable" means for a page of the app, as checks on its widgets
(issue 20, point 1): used by tests/test_layout.py and scripts/take_screenshots.py.

Each check returns a list of problems, one line each, naming the widget."""
from __future__ import annotations

from app.qt import QtCore, QtWidgets, pg

#: the fewest rows a table shows (or all of its rows, when it has fewer)
TABLE_ROWS = 5
#: a map's plot area is at least this large (pixels) on the pages that show one
SMALLEST_MAP = 120


def name_of(widget: QtWidgets.QWidget) -> str:
    parts = []
    while widget is not None and len(parts) < 4:
        label = widget.objectName() or type(widget).__name__
        text = getattr(widget, "text", None)
        if callable(text) and isinstance(widget, (QtWidgets.QLabel, QtWidgets.QAbstractButton)):
            label += f" {text()[:40]!r}"
        parts.append(label)
        widget = widget.parentWidget()
    return " < ".join(parts)


def _in_scroll_area(widget: QtWidgets.QWidget) -> bool:
    """Inside a scroll area's viewport: it may lie beyond the window (the
    scroll bars reach it), and the scroll area is checked instead."""
    parent = widget.parentWidget()
    while parent is not None:
        grand = parent.parentWidget()
        if isinstance(grand, QtWidgets.QAbstractScrollArea) and grand.viewport() is parent:
            return True
        parent = grand
    return False


def _shown(window: QtWidgets.QWidget) -> list[QtWidgets.QWidget]:
    return [w for w in window.findChildren(QtWidgets.QWidget)
            if w.isVisibleTo(window) and w.isVisible() and not w.isWindow()
            and w.width() > 0 and w.height() > 0]


def outside_the_window(window: QtWidgets.QWidget) -> list[str]:
    """Every visible widget lies inside the window (and inside its parent)."""
    problems = []
    bounds = window.rect().adjusted(-1, -1, 1, 1)
    for widget in _shown(window):
        if _in_scroll_area(widget):
            continue
        at = QtCore.QRect(widget.mapTo(window, QtCore.QPoint(0, 0)), widget.size())
        if not bounds.contains(at):
            problems.append(f"{name_of(widget)} at {at.getRect()} lies outside the window "
                            f"{window.rect().getRect()}")
            continue
        parent = widget.parentWidget()
        if parent is not None and parent is not window:
            inside = parent.rect().adjusted(-1, -1, 1, 1)
            if not inside.contains(widget.geometry()):
                problems.append(f"{name_of(widget)} at {widget.geometry().getRect()} is cut "
                                f"off by its parent {parent.rect().getRect()}")
    return problems


def clipped_text(window: QtWidgets.QWidget) -> list[str]:
    """No label, button or box is squeezed below what its text needs."""
    problems = []
    for widget in _shown(window):
        if _in_scroll_area(widget) and not widget.visibleRegion().boundingRect().isValid():
            continue
        if isinstance(widget, QtWidgets.QLabel):
            if not widget.text() or widget.pixmap() is not None and not widget.pixmap().isNull():
                continue
            if widget.wordWrap():
                needed = widget.heightForWidth(widget.width())
                if needed > widget.height() + 2:
                    problems.append(f"{name_of(widget)}: {widget.height()} px high, its text "
                                    f"needs {needed}")
            else:
                hint = widget.sizeHint()
                if hint.width() > widget.width() + 2 or hint.height() > widget.height() + 2:
                    problems.append(f"{name_of(widget)}: {widget.width()}x{widget.height()}, "
                                    f"its text needs {hint.width()}x{hint.height()}")
        elif isinstance(widget, QtWidgets.QComboBox):
            # its current text, beside the arrow (its longest item may be
            # longer: the list that opens shows it whole)
            needed = widget.fontMetrics().horizontalAdvance(widget.currentText()) + 30
            elided_with_tooltip = widget.currentText() in widget.toolTip()
            if needed > widget.width() + 2 and not widget.isEditable() \
                    and not elided_with_tooltip:
                problems.append(f"{name_of(widget)} {widget.currentText()[:40]!r}: "
                                f"{widget.width()} px wide, its text needs {needed}")
        elif isinstance(widget, QtWidgets.QAbstractButton):
            hint = widget.minimumSizeHint()
            if hint.width() > widget.width() + 2 or hint.height() > widget.height() + 2:
                problems.append(f"{name_of(widget)}: {widget.width()}x{widget.height()}, "
                                f"needs {hint.width()}x{hint.height()}")
    return problems


def short_tables(window: QtWidgets.QWidget) -> list[str]:
    """A table shows at least TABLE_ROWS rows, or all of its rows."""
    problems = []
    for table in _shown(window):
        if not isinstance(table, QtWidgets.QTableView) or table.model() is None:
            continue
        rows = table.model().rowCount()
        if rows == 0:
            continue
        height = table.rowHeight(0) or table.verticalHeader().defaultSectionSize()
        room = table.viewport().height()
        shown = room // max(height, 1)
        if shown < min(TABLE_ROWS, rows):
            problems.append(f"{name_of(table)}: shows {shown} of its {rows} rows "
                            f"({room} px for rows of {height} px)")
        if table.horizontalScrollBar().isVisible() and table.model().columnCount() <= 4:
            problems.append(f"{name_of(table)}: scrolls sideways with "
                            f"{table.model().columnCount()} columns")
    return problems


#: the shortest colour bar whose labels (up to 5 of them) can stand apart
MIN_BAR_HEIGHT = 80


def hidden_plots(window: QtWidgets.QWidget) -> list[str]:
    """Every plot area and colour bar lies wholly inside its view."""
    problems = []
    for view in _shown(window):
        if not isinstance(view, pg.GraphicsView):
            continue
        room = QtCore.QRectF(view.viewport().rect()).adjusted(-1, -1, 1, 1)
        for item in view.scene().items():
            if not isinstance(item, (pg.ViewBox, pg.ColorBarItem)) or not item.isVisible():
                continue
            if isinstance(item, pg.ViewBox) and item.parentItem() is not None and \
                    isinstance(item.parentItem(), pg.ColorBarItem):
                continue
            at = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
            if isinstance(item, pg.ColorBarItem) and at.height() < MIN_BAR_HEIGHT:
                # (a bar laid out while hidden kept no height: its labels drawn
                # on top of each other, in every sweep screenshot for a while)
                problems.append(f"{name_of(view)}: its colour bar is {at.height()} px tall, "
                                f"its labels on top of each other")
            if not room.contains(QtCore.QRectF(at)):
                problems.append(f"{name_of(view)}: its {type(item).__name__} at "
                                f"{at.getRect()} lies outside the view {view.viewport().rect().getRect()}")
    return problems


def status_message(window) -> list[str]:
    """The status bar's message fits beside its permanent widgets (it ran
    into the "no CUDA device" label)."""
    bar = window.statusBar()
    message = bar.currentMessage()
    if not message:
        return []
    right = min((w.mapTo(bar, QtCore.QPoint(0, 0)).x() for w in bar.findChildren(QtWidgets.QWidget)
                 if w.isVisible() and w.parentWidget() is not None and w.x() > 0), default=bar.width())
    needed = bar.fontMetrics().horizontalAdvance(message) + 12
    if needed > right:
        return [f"status bar: its message needs {needed} px, {right} px are free: {message[:60]!r}"]
    return []


def cut_sideways(window: QtWidgets.QWidget) -> list[str]:
    """A scroll area that never scrolls sideways is at least as wide as what
    it holds needs: else its right edge is cut off (no scroll bar reaches it)."""
    problems = []
    for area in window.findChildren(QtWidgets.QScrollArea):
        held = area.widget()
        if held is None or not area.isVisible() or area.horizontalScrollBarPolicy() != \
                QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff:
            continue
        needed, shown = held.minimumSizeHint().width(), area.viewport().width()
        if needed > shown + 1:
            problems.append(f"{name_of(held)} needs {needed} px, its scroll area shows "
                            f"{shown} px and never scrolls sideways: cut off on the right")
    return problems


def nested_scrolling(window: QtWidgets.QWidget) -> list[str]:
    """One level of scrolling: no scrolling view (a table, a list, a text
    box) inside a scroll area's page (issue 41: the analysis pages scrolled,
    and so did the tables in them).  pyqtgraph's views never scroll."""
    problems = []
    for widget in _shown(window):
        if not isinstance(widget, QtWidgets.QAbstractScrollArea) or isinstance(
                widget, (pg.GraphicsView, QtWidgets.QGraphicsView, QtWidgets.QHeaderView)):
            continue
        parent = widget.parentWidget()
        while parent is not None and parent is not window:
            grand = parent.parentWidget()
            if isinstance(grand, QtWidgets.QScrollArea) and grand.viewport() is parent:
                problems.append(f"{name_of(widget)} scrolls inside the scroll area "
                                f"{name_of(grand)}")
                break
            parent = grand
    return problems


#: how far a map's drawn cells may be from square (its data's aspect)
ASPECT_TOLERANCE = 0.10


def stretched_maps(window: QtWidgets.QWidget) -> list[str]:
    """A heatmap's cells are drawn square: its drawn aspect within 10% of the
    data's (a 1024 x 1024 C was drawn 420 x 140 px)."""
    problems = []
    for view in _shown(window):
        if not isinstance(view, pg.GraphicsView):
            continue
        for item in view.scene().items():
            if not isinstance(item, pg.ImageItem) or item.image is None or not item.isVisible():
                continue
            box = item.getViewBox()
            if box is None:
                continue
            width, height = box.viewPixelSize()  # (pixels per unit, inverted)
            if width <= 0 or height <= 0:
                continue
            if abs(width / height - 1) > ASPECT_TOLERANCE:
                problems.append(f"{name_of(view)}: its map's cells are drawn "
                                f"{1 / width:.1f} x {1 / height:.1f} px, not square")
    return problems


def elided_cells(window: QtWidgets.QWidget) -> list[str]:
    """A table cell whose text does not fit its column has its whole text on
    hover (the results table showed "128x256x12..." and nothing more)."""
    problems = []
    for table in _shown(window):
        if not isinstance(table, QtWidgets.QTableView) or table.model() is None:
            continue
        model = table.model()
        metrics = table.fontMetrics()
        for row in range(min(model.rowCount(), 20)):
            for column in range(model.columnCount()):
                if table.isColumnHidden(column) or table.columnSpan(row, column) > 1:
                    continue
                index = model.index(row, column)
                text = str(model.data(index) or "")
                if not text or metrics.horizontalAdvance(text) + 8 <= table.columnWidth(column):
                    continue
                tip = str(model.data(index, QtCore.Qt.ItemDataRole.ToolTipRole) or "")
                if text not in tip:
                    problems.append(f"{name_of(table)}: row {row}, column {column}: "
                                    f"{text[:30]!r} is cut short, and not whole on hover")
                    break
    return problems


def page_problems(window: QtWidgets.QWidget) -> list[str]:
    """Everything wrong with what the window shows now."""
    QtWidgets.QApplication.processEvents()
    return (outside_the_window(window) + clipped_text(window) + short_tables(window)
            + hidden_plots(window) + status_message(window) + cut_sideways(window)
            + nested_scrolling(window) + stretched_maps(window) + elided_cells(window))
