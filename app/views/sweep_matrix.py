"""The sweep's matrix: one picture per configuration (its map and its title),
painted off the GUI thread and placed as it comes, in a scroll area.

A sweep of 64 configurations once stalled the window for a second on a busy
2-core machine: each arriving cell built a pyqtgraph plot (23 ms), and every
new plot re-laid out and repainted all the others.  Here each cell is a
fixed-size label: its picture (the map coloured as the Maps tab colours it,
sampled to the cell's pixels, and its title lines) is a QImage painted on a
worker thread (QPainter on a QImage is safe there); the GUI thread only
turns it into a pixmap.  A new colour scale, map or GPU model repaints every
cell there too.  Titles are part of the pictures, so no re-layout loses them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from kernels import SweepCell, dims_heading

from ..models.map_images import MapImage
from ..qt import QtCore, QtGui, QtWidgets
from .colors import image_rgba

#: pixels of one title line, and the lines a cell's title has at most
LINE = 12
TITLE_LINES = 5
#: a cell's width: from the viewport's width over the columns, within these
SMALLEST_CELL, LARGEST_CELL = 100, 300
PASS_COLOUR, FAIL_COLOUR = "#1a7f37", "#c62828"


@dataclass(frozen=True)
class CellTitle:
    """A cell's title, as lines of text with their colours (the first is the
    verdict's), and the whole of it for the tooltip."""

    lines: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        return "\n".join(line for line, _ in self.lines)


def sample(image: MapImage, rows: int, cols: int) -> np.ndarray:
    """``image``'s data on ``rows`` x ``cols`` pixels.  Shrinking keeps, in
    each pixel, its region's most telling value: a write count's lowest where
    an element was missed, else its highest (a lone collision stays
    visible); other maps take the region's first element."""
    data = image.data
    height, width = data.shape
    row_at = (np.arange(rows) * height // max(rows, 1)).clip(0, height - 1)
    col_at = (np.arange(cols) * width // max(cols, 1)).clip(0, width - 1)
    if image.colouring.kind != "count" or (height <= rows and width <= cols):
        return data[np.ix_(row_at, col_at)]
    # count maps: each region's telling value, via reduceat over the sampled
    # edges: missed (0) before a collision (> 1) before the bands below 0
    # (the lowest: updated atomically by several threads, outside the array,
    # one thread's repeated stores) before once (1)
    row_edges, col_edges = np.unique(row_at), np.unique(col_at)

    def region(reduce, values):
        return reduce.reduceat(reduce.reduceat(values, row_edges, axis=0), col_edges, axis=1)

    missed = region(np.maximum, (data == 0).view(np.uint8)) > 0
    # (fmin and fmax pass over NaN: the blank cells of an out-of-bounds margin)
    low, high = region(np.fmin, data), region(np.fmax, data)
    telling = np.where(missed, 0, np.where(high > 1, high, np.where(low < 0, low, high)))
    rows_of = np.searchsorted(row_edges, row_at, side="right") - 1
    cols_of = np.searchsorted(col_edges, col_at, side="right") - 1
    return telling[np.ix_(rows_of, cols_of)]


def paint_cell(cell: SweepCell, image: MapImage | None, title: CellTitle,
               width: int, height: int) -> QtGui.QImage:
    """A cell's picture: its title lines over its map (or over nothing, for a
    configuration that failed to run).  Safe off the GUI thread."""
    picture = QtGui.QImage(width, height, QtGui.QImage.Format.Format_ARGB32_Premultiplied)
    picture.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(picture)
    try:
        font = QtGui.QFont()
        font.setPixelSize(LINE - 2)
        painter.setFont(font)
        metrics = QtGui.QFontMetrics(font)
        for number, (text, colour) in enumerate(title.lines[:TITLE_LINES]):
            painter.setPen(QtGui.QColor(colour))
            shown = metrics.elidedText(text, QtCore.Qt.TextElideMode.ElideRight, width - 4)
            painter.drawText(QtCore.QRect(2, number * LINE, width - 4, LINE),
                             int(QtCore.Qt.AlignmentFlag.AlignLeft
                                 | QtCore.Qt.AlignmentFlag.AlignVCenter), shown)
        top = TITLE_LINES * LINE + 2
        rows, cols = height - top - 2, width - 4
        if image is not None and rows > 0 and cols > 0:
            rgba = np.ascontiguousarray(image_rgba(_as_image(image, sample(image, rows, cols))))
            # pyqtgraph's RGBA bytes, as Qt's byte order names them
            drawn = QtGui.QImage(rgba.data, cols, rows, 4 * cols,
                                 QtGui.QImage.Format.Format_RGBA8888)
            painter.fillRect(QtCore.QRect(2, top, cols, rows), QtGui.QColor("#dddddd"))
            painter.drawImage(QtCore.QPoint(2, top), drawn)
    finally:
        painter.end()
    return picture


def _as_image(image: MapImage, data: np.ndarray) -> MapImage:
    return MapImage(image.name, image.title, data, image.colouring, image.legend,
                    image.x_label, image.y_label, image.domain, image.context)


class CellLabel(QtWidgets.QLabel):
    """One configuration's picture; a click opens it."""

    clicked = QtCore.Signal(object)  # SweepCell

    def __init__(self, cell: SweepCell | None, size: QtCore.QSize, parent=None):
        super().__init__(parent)
        self.cell = cell
        self.setObjectName("sweep-cell")  # (styled by the matrix: one style sheet)
        self.setFixedSize(size)
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        if cell is not None:
            self.setCursor(QtCore.Qt.CursorShape.PointingHandCursor)

    def empty(self) -> None:
        """No configuration yet (a sweep of the same rows and columns starts)."""
        self.cell = None
        self.clear()
        self.setToolTip("")
        self.unsetCursor()

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self.cell is not None and self.cell.result is not None:
            self.clicked.emit(self.cell)
        super().mousePressEvent(event)


class _Painted(QtCore.QObject):
    """Carries pictures from the painting thread to the GUI thread."""

    done = QtCore.Signal(int, object, object)  # generation, SweepCell, QImage


class SweepMatrix(QtWidgets.QScrollArea):
    """Grids down, blocks across; each cell's picture painted off the GUI
    thread (:func:`paint_cell`).  ``describe(cell) -> (MapImage | None,
    CellTitle)`` makes what a cell shows; it runs on the painting thread."""

    cell_opened = QtCore.Signal(object)
    #: every picture asked for so far is on screen
    settled = QtCore.Signal()

    def __init__(self, describe: Callable[[SweepCell], tuple[MapImage | None, CellTitle]],
                 parent=None):
        super().__init__(parent)
        self.setObjectName("sweep-matrix")
        self.setWidgetResizable(True)
        self.describe = describe
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-painter")
        self._painted = _Painted()
        self._painted.done.connect(self._place)
        self._generation = 0
        self._pending = 0
        self._closed = False
        self._lock = threading.Lock()
        self.grids: tuple = ()
        self.blocks: tuple = ()
        self.labels: dict[tuple, CellLabel] = {}
        #: the configurations whose pictures are on screen (for tests and the status)
        self.painted: dict[tuple, SweepCell] = {}
        #: the map of the latest picture placed (the colour bar follows it)
        self.last_image: MapImage | None = None
        self._cells: dict[tuple, SweepCell] = {}
        self._cell_size = QtCore.QSize(SMALLEST_CELL, SMALLEST_CELL)
        self._resize_timer = QtCore.QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(200)
        self._resize_timer.timeout.connect(self._fit_cells)
        self._build()

    # -- the grid of labels --------------------------------------------------------------

    def begin(self, grids, blocks) -> None:
        """A sweep's rows and columns (dims tuples, in order): empty cells."""
        self._generation += 1
        same = (tuple(grids), tuple(blocks)) == (self.grids, self.blocks) \
            and self._fitting_size() == self._cell_size
        self.grids, self.blocks = tuple(grids), tuple(blocks)
        self._cells = {}
        self.painted = {}
        if same:  # the same rows and columns: empty the cells (a new grid of
            #       widgets cost a busy machine tens of milliseconds)
            for label in self.labels.values():
                label.empty()
        else:
            self._build()

    def add(self, cell: SweepCell) -> None:
        """``cell`` has arrived: its picture is painted off the GUI thread."""
        key = (cell.grid, cell.block)
        if key not in self.labels:  # (a cell outside the rows and columns asked for)
            self.grids = tuple(dict.fromkeys(self.grids + (cell.grid,)))
            self.blocks = tuple(dict.fromkeys(self.blocks + (cell.block,)))
            self._build()
        self._cells[key] = cell
        self.labels[key].cell = cell
        self.labels[key].setCursor(QtCore.Qt.CursorShape.PointingHandCursor)
        self._submit(cell)

    def repaint_all(self) -> None:
        """Every cell again (a new colour scale, map, GPU model or size)."""
        self._generation += 1
        for cell in self._cells.values():
            self._submit(cell)

    def clear(self) -> None:
        self.begin((), ())

    @property
    def busy(self) -> bool:
        return self._pending > 0

    def _build(self) -> None:
        inner = QtWidgets.QWidget()
        # one style sheet for every cell (one per cell cost 2 ms a cell)
        inner.setStyleSheet("QLabel#sweep-cell { background: #f4f4f4; }")
        grid = QtWidgets.QGridLayout(inner)
        grid.setSpacing(4)
        grid.setContentsMargins(4, 4, 4, 4)
        self.labels = {}
        size = self._fitting_size()
        self._cell_size = size
        for col, block in enumerate(self.blocks):
            heading = QtWidgets.QLabel(dims_heading(block, "thread"))
            heading.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(heading, 0, col + 1)
        for row, grid_dims in enumerate(self.grids):
            heading = QtWidgets.QLabel(dims_heading(grid_dims, "block").replace(" ", "\n", 1))
            heading.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(heading, row + 1, 0)
            for col, block in enumerate(self.blocks):
                key = (grid_dims, block)
                label = CellLabel(self._cells.get(key), size)
                label.clicked.connect(self.cell_opened.emit)
                grid.addWidget(label, row + 1, col + 1)
                self.labels[key] = label
        grid.setRowStretch(len(self.grids) + 1, 1)
        grid.setColumnStretch(len(self.blocks) + 1, 1)
        self.setWidget(inner)  # (the scroll area deletes the widget it held)
        for cell in self._cells.values():
            self._submit(cell)

    def _fitting_size(self) -> QtCore.QSize:
        """Cells that show every column, and at least two whole rows, in the
        room there is (at 1280 x 800 the 6 x 6 sweep showed 4 columns and
        1.5 rows); never smaller than ``SMALLEST_CELL`` (then it scrolls)."""
        columns = max(len(self.blocks), 1)
        rows = min(max(len(self.grids), 1), 2)
        room = self.viewport().width() - 60 - 4 * (columns + 2)
        heading = 2 * LINE + 8
        tall = (self.viewport().height() - heading - 4 * (rows + 2)) // rows
        side = min(room // columns, int((tall - TITLE_LINES * LINE) / 0.85))
        side = int(min(LARGEST_CELL, max(SMALLEST_CELL, side)))
        return QtCore.QSize(side, int(side * 0.85) + TITLE_LINES * LINE)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._resize_timer.start()

    def _fit_cells(self) -> None:
        if self._fitting_size() != self._cell_size:
            self._generation += 1
            self._build()

    # -- painting ------------------------------------------------------------------------

    def _submit(self, cell: SweepCell) -> None:
        if self._closed:
            return
        generation, size = self._generation, self._cell_size
        with self._lock:
            self._pending += 1
        self._pool.submit(self._paint, generation, cell, size.width(), size.height())

    def _paint(self, generation: int, cell: SweepCell, width: int, height: int) -> None:
        picture = None
        try:
            if generation == self._generation:  # (else: stale, a newer one is coming)
                image, title = self.describe(cell)
                picture = (paint_cell(cell, image, title, width, height), title, image)
        except Exception as exc:  # noqa: BLE001 (shown in the cell, never lost in a thread)
            picture = (None, CellTitle(((f"{cell.label}: could not draw: {exc}",
                                         FAIL_COLOUR),)), None)
        self._painted.done.emit(generation, cell, picture)

    def _place(self, generation: int, cell: SweepCell, picture) -> None:
        with self._lock:
            self._pending -= 1
        key = (cell.grid, cell.block)
        label = self.labels.get(key)
        if picture is not None and generation == self._generation and label is not None:
            drawn, title, image = picture
            if drawn is not None:
                label.setPixmap(QtGui.QPixmap.fromImage(drawn))
            else:
                label.setText(title.text)
            if image is not None:
                self.last_image = image
            label.setToolTip(title.text + ("" if cell.result is None
                                           else "\n(click to open it in the Maps tab)"))
            self.painted[key] = cell
        if self._pending == 0:
            self.settled.emit()

    def shut_down(self) -> None:
        self._closed = True
        self._generation += 1
        self._pool.shutdown(wait=True, cancel_futures=True)
