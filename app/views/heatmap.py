"""A heatmap of one map: image, colour bar, title, and what is under the cursor."""
from __future__ import annotations

import numpy as np

from kernels import RunResult

from ..models.map_images import MapImage, count_scale, hover_text
from ..qt import QtCore, QtGui, pg
from .colors import colour_map, lookup_table


def colour_bar_ticks(image: MapImage) -> list | None:
    """Integer ticks for maps of counts and ids (None: let pyqtgraph choose)."""
    colouring = image.colouring
    if colouring.kind == "diff":
        return [[(0, "same"), (1, "value"), (2, "writer"), (3, "count")]]
    outside = [(-2, image.outside_label)] if image.margin else []
    if colouring.kind == "categorical":
        # (-2 and -1 are a pixel apart on a bar of a thousand ids: one label
        # for both bands, not two drawn over each other)
        unwritten = [(-1.5, f"none / {image.outside_label}")] if image.margin else [(-1, "none")]
        return [unwritten + [(v, str(v)) for v in range(0, int(colouring.top) + 1, 5)]]
    if colouring.kind == "count":
        return [count_ticks(colouring.top, image.outside_label)]
    if colouring.kind == "warp-lane":
        # The warp legend: every warp's hue named; pyqtgraph shows the second
        # level's labels only where they fit, the first's (every 4th) always.
        # "none" and "outside C" are one value each of ~1,000 here, bands a
        # pixel tall, and w0's label lay on theirs: w0 is named on the second
        # level, which pyqtgraph shows only where it fits.
        hues = int(colouring.top + 1) // 32
        return [outside + [(-1, "none")]
                + [(h * 32 + 15.5, f"w{h}") for h in range(4, hues, 4)],
                [(h * 32 + 15.5, f"w{h}") for h in range(hues) if h == 0 or h % 4]]
    if colouring.kind == "zero" and colouring.top <= 20:
        return [[(v, str(v)) for v in range(int(max(colouring.top, 1)) + 1)]]
    if colouring.kind == "zero":
        return [linear_ticks(colouring.top)]
    return None


def linear_ticks(top: float, most: int = 6) -> list[tuple[float, str]]:
    """0, round steps (1-2-5) and the maximum, in whole numbers with
    separators: pyqtgraph alone labelled a bar up to 4,194,304 with "0" only."""
    top = int(top)
    step = next(v * 10 ** e for e in range(12) for v in (1, 2, 5)
                if top / (v * 10 ** e) <= most - 1)
    ticks = [(float(v), f"{v:,}") for v in range(0, top + 1, step)]
    if top - ticks[-1][0] < step / 2 and len(ticks) > 1:
        ticks.pop()
    if ticks[-1][0] != top:
        ticks.append((float(top), f"{top:,}"))
    return ticks


def count_ticks(top: float, outside: str = "outside C") -> list[tuple[float, str]]:
    """Ticks of the write-count colour bar: 0, 1, 2, then whole numbers on its
    log scale up to the maximum (1-2-5 steps, kept apart), the maximum labelled."""
    top = int(top)
    # every band named, whatever the run: updated atomically by several
    # threads, outside C, stored again by the same thread, never, once
    ticks = [(-3.0, "atomic, 2+"), (-2.0, outside), (-1.0, "1 thread, 2+"), (0.0, "0"),
             (1.0, "1")]
    if top < 2:
        return ticks
    # (the band from 2 up is the collisions: named, not just numbered)
    ticks.append((2.0, "2 collide"))
    if top == 2:
        return ticks
    # Decades between 2 and the maximum, kept apart by about a label's
    # height on a bar 200 px tall (at 0.3 of the band, "100" and "1,024"
    # were drawn over each other at 1280 x 800).
    def place(value: int) -> float:
        return float(count_scale(np.array([value]), top)[0])

    for value in [10 ** e for e in range(1, 13) if 2 < 10 ** e < top] + [top]:
        if place(value) - ticks[-1][0] >= GAP or value == top:
            if value == top and place(value) - ticks[-1][0] < GAP and len(ticks) > 6:
                ticks.pop()  # the maximum's label wins over a close neighbour
            ticks.append((float(place(value)), f"{value:,}"))
    return ticks


#: Least distance between two labels of the count bar, in its units (6 units
#: from "atomic, 2+" to the maximum; 0.4 of 5.5 before that band came, the
#: same share of the bar's height).
GAP = 0.47


def draw_map(item: pg.ImageItem, image: MapImage, rgba: np.ndarray | None = None) -> None:
    """Put ``image`` (or its colours made ready, ``rgba``) in ``item``, each
    cell on integer coordinates (the image shifted by -0.5)."""
    if rgba is not None:
        item.setLookupTable(None, update=False)
        item.setImage(rgba, levels=None, autoLevels=False)
    else:
        item.setLookupTable(lookup_table(image.colouring), update=False)
        item.setImage(image.data, levels=image.levels, autoLevels=False)
    rows, cols = image.data.shape
    m = image.margin  # (C's own indices on the axes, the margin's negative)
    item.setRect(QtCore.QRectF(-0.5 - m, -0.5 - m, cols, rows))


class MapTile:
    """A small map without axes under a caption, in a cell of any
    GraphicsLayout: the cells of a sweep's contact sheet.  A view box instead
    of a plot (HeatmapPlot): a plot brings four axes that every change of the
    layout resizes, and 64 plots took 1.1 s to build, these 0.2 s."""

    def __init__(self, layout: pg.GraphicsLayout, row: int, col: int):
        self.cell = layout.addLayout(row=row, col=col)
        self.cell.setContentsMargins(2, 2, 2, 2)
        self.caption = self.cell.addLabel("", row=0, col=0, size="8pt")
        self.view = self.cell.addViewBox(row=1, col=0, lockAspect=False, enableMouse=False,
                                         invertY=True, enableMenu=False)
        self.image = pg.ImageItem(autoDownsample=False)
        self.view.addItem(self.image)

    def show(self, image: MapImage) -> None:
        draw_map(self.image, image)
        rows, cols = image.data.shape
        m = image.margin
        self.view.setRange(xRange=(-0.5 - m, cols - m - 0.5), yRange=(-0.5 - m, rows - m - 0.5),
                           padding=0)

    def set_caption(self, html: str) -> None:
        """The caption, its row as high as its lines."""
        self.caption.setText(html, size="8pt")
        height = 16 * (html.count("<br>") + 1) + 6
        self.caption.setMaximumHeight(height)
        self.cell.layout.setRowFixedHeight(0, height)


class HeatmapPlot:
    """A plot with an image and its colour bar, inside any GraphicsLayout.

    Cells sit on integer coordinates (the image is shifted by -0.5), row 0 is
    at the top (y inverted), and the colour bar uses the map's own levels.
    """

    def __init__(self, layout: pg.GraphicsLayout, row: int = 0, col: int = 0,
                 colour_bar: bool = True, axes: bool = True):
        self.plot: pg.PlotItem = layout.addPlot(row=row, col=col)
        self.axes = axes
        if not axes:
            self.plot.hideAxis("left")
            self.plot.hideAxis("bottom")
        for side in ("left", "bottom"):
            # Rows, columns, warps: whole indices, never "(x0.001)".
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.plot.invertY(True)
        # Cells are square, whatever the widget's shape: a 1024 x 1024 C drawn
        # 420 x 140 px made 16 x 16 blocks look like strips.
        self.plot.setAspectLocked(True, ratio=1.0)
        self.plot.showGrid(x=False, y=False)
        self.image = pg.ImageItem(autoDownsample=False)
        self.plot.addItem(self.image)
        self.colour_bar: pg.ColorBarItem | None = None
        if colour_bar:
            self.colour_bar = pg.ColorBarItem(interactive=False, width=18,
                                              colorMap=pg.colormap.get("viridis"))
            # Beside the plot as setImageItem(insert_in=...) places it, but not
            # linked to the image: a linked bar forces its levels and lookup
            # table on the image, and an image of ready colours needs neither.
            self.plot.layout.addItem(self.colour_bar, 2, 5)
            self.plot.layout.setColumnFixedWidth(4, 5)
        self.current: MapImage | None = None

    def show(self, image: MapImage, title: str | None = None, reset_view: bool = True,
             rgba: np.ndarray | None = None) -> None:
        """Draw ``image``; ``rgba``, when given, is its colours made ready
        off the GUI thread (colors.image_rgba): drawn as they are, where
        pyqtgraph would spend ~0.5 s on a 4096 x 4096 map's lookup table."""
        shape_changed = self.current is None or self.current.data.shape != image.data.shape
        self.current = image
        self._show_frame(True)
        levels = image.levels
        # Each setter below re-lays out and repaints the plot's axes (100 ms
        # on a busy machine): called only for what changed.
        if self.colour_bar is not None:
            ticks = colour_bar_ticks(image)
            bar = (image.colouring, levels, ticks, image.margin)
            if bar != getattr(self, "_bar_shown", None):
                self._bar_shown = bar
                self.colour_bar.setColorMap(colour_map(image.colouring))
                self.colour_bar.setLevels(levels)
                self.colour_bar.axis.setTicks(ticks)
                # Room for the longest label: the axis keeps a fixed width and
                # drops labels that do not fit ("20,000" vanished, leaving "0").
                longest = max((len(label) for level in ticks or [] for _, label in level),
                              default=6)
                self.colour_bar.axis.setWidth(int(14 + 7.5 * longest))
        draw_map(self.image, image, rgba)
        rows, cols = image.data.shape
        self.title = title if title is not None else image.title
        self.fit_title()
        if self.axes:
            # Few columns (occurrences of a warp view): whole-number ticks only.
            # Few rows too (one block's map): pyqtgraph put ticks at -0.4 ... 0.4.
            m = image.margin
            few_rows = rows <= 16 and image.slices is None
            axes = (image.x_label, image.y_label, cols if cols <= 16 else None,
                    rows if few_rows else None, m)
            if axes != getattr(self, "_axes_shown", None):
                self._axes_shown = axes
                self.plot.setLabel("bottom", image.x_label)
                self.plot.setLabel("left", image.y_label)
                self.plot.getAxis("bottom").setTicks(
                    [[(c, str(c)) for c in range(-m, cols - m)]] if cols <= 16 else None)
                self.plot.getAxis("left").setTicks(
                    [[(r, str(r)) for r in range(-m, rows - m)]] if few_rows else None)
        #: whether this drawing reset the view (asked, or the map's shape changed)
        self.view_reset = reset_view or shape_changed
        if self.view_reset:
            m = image.margin
            self.plot.setRange(xRange=(-0.5 - m, cols - m - 0.5),
                               yRange=(-0.5 - m, rows - m - 0.5), padding=0)

    def show_slice(self, index: int, lines: bool = True) -> None:
        """Show slice ``index`` of a 3-D array's map (``MapImage.slices``)
        alone, or all of them (index -1), each apart from the next by a line
        (``lines``); the lines of an earlier map are taken away."""
        image = self.current
        for line in getattr(self, "_slice_lines", ()):
            self.plot.removeItem(line)
        if getattr(self, "_slice_lines", None) is not None and self.axes:
            self.plot.getAxis("left").setTicks(None)  # (a slice's rows' ticks gone)
        self._slice_lines = []
        if image is None or image.slices is None:
            return
        count, rows = image.slices
        cols = image.data.shape[1] - 2 * image.margin
        pen = pg.mkPen("#ffffff", width=1, style=QtCore.Qt.PenStyle.DashLine)
        for s in range(1, min(count, 256) if lines else 1):  # (past 256: a solid band)
            line = pg.InfiniteLine(pos=s * rows - 0.5, angle=0, pen=pen)
            self.plot.addItem(line)
            self._slice_lines.append(line)
        m = image.margin
        if index < 0:
            y_range = (-0.5 - m, count * rows + m - 0.5)
        else:
            y_range = (index * rows - 0.5, (index + 1) * rows - 0.5)
        # A slice of few rows: whole row numbers (pyqtgraph put ticks at 4.5, 5.5).
        few = 0 <= index and rows <= 32 and self.axes
        if few:
            self.plot.getAxis("left").setTicks(
                [[(r, str(r)) for r in range(index * rows, (index + 1) * rows)]])
        elif self.axes:
            self.plot.getAxis("left").setTicks(None)
        self.plot.setRange(xRange=(-0.5 - m, cols + m - 0.5), yRange=y_range, padding=0)

    def _show_frame(self, shown: bool) -> None:
        """Axes and colour bar, shown with a map and hidden without one (an
        empty plot showed axes of -0.4 to 0.4 and a bar of 0 to 1)."""
        if shown == getattr(self, "_frame_shown", None):
            return
        self._frame_shown = shown
        if self.axes:
            for side in ("left", "bottom"):
                self.plot.showAxis(side, shown)
        if self.colour_bar is not None:
            self.colour_bar.setVisible(shown)

    def show_nothing(self, message: str) -> None:
        """No map: ``message`` where its title goes, and nothing else."""
        self.current = None
        self.image.clear()
        self._show_frame(False)
        self.title = message
        self._title_fitted = None  # (the next map's title is set again)
        self.plot.setTitle(message)

    def fit_title(self, width: int | None = None) -> None:
        """The title, elided to the plot's width (the whole of it in the
        tooltip): a long one ("Active lanes per branch: line 13: if y >= ...")
        once made the plot wider than its view, the colour bar out of sight."""
        title = getattr(self, "title", "")
        if width is None:
            views = self.plot.scene().views() if self.plot.scene() is not None else []
            width = views[0].width() if views else 0
        shown = title
        if (title, width) == getattr(self, "_title_fitted", None):
            return
        self._title_fitted = (title, width)
        if width > 0 and "<" not in title:
            label = self.plot.titleLabel
            font = label.item.font()
            size = label.opts.get("size")
            if isinstance(size, str) and size.endswith("pt"):
                font.setPointSizeF(float(size[:-2]))
            metrics = QtGui.QFontMetrics(font)
            # the title spans the plot's column: the view less the left axis
            # and the colour bar with its labels
            room = int(width) - 40
            if self.axes:
                room -= int(self.plot.getAxis("left").width())
            if self.colour_bar is not None:
                room -= int(self.colour_bar.axis.width()) + 60
            shown = metrics.elidedText(title, QtCore.Qt.TextElideMode.ElideRight, max(40, room))
        self.plot.setTitle(shown)
        self.plot.titleLabel.setToolTip(title if shown != title else "")

    def sharpen(self, width_px: int, height_px: int) -> None:
        """Repeat each cell of the shown map so that it covers about
        ``width_px`` x ``height_px`` pixels, in place of scaling: an SVG keeps
        the image and its scale apart, and SVG renderers smooth an upscaled
        image into blurs (librsvg ignores image-rendering).  Same picture."""
        if self.current is None:
            return
        data = self.current.data
        rows, cols = data.shape
        by_row, by_col = max(1, -(-height_px // rows)), max(1, -(-width_px // cols))
        if by_row == by_col == 1 or rows * cols * by_row * by_col > 16_000_000:
            return
        self.image.setImage(np.repeat(np.repeat(data, by_row, axis=0), by_col, axis=1),
                            levels=self.current.levels, autoLevels=False)
        m = self.current.margin
        self.image.setRect(QtCore.QRectF(-0.5 - m, -0.5 - m, cols, rows))

    def cell_at(self, scene_pos: QtCore.QPointF) -> tuple[int, int] | None:
        """(row, col) of the cell under a scene position, if on the image."""
        if self.current is None or not self.plot.sceneBoundingRect().contains(scene_pos):
            return None
        point = self.plot.vb.mapSceneToView(scene_pos)
        row, col = int(np.floor(point.y() + 0.5)), int(np.floor(point.x() + 0.5))
        rows, cols = self.current.data.shape
        m = self.current.margin  # (indices of the map's own: C's, negative in the margin)
        if -m <= row < rows - m and -m <= col < cols - m:
            return row, col
        return None


class HeatmapWidget(pg.GraphicsLayoutWidget):
    """One heatmap; emits ``hovered`` with a description of the cell under the mouse."""

    hovered = QtCore.Signal(str)
    #: an element was clicked: (row, column) of the map
    clicked = QtCore.Signal(int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.heatmap = HeatmapPlot(self.ci)
        self.heatmap.show_nothing("no run yet")
        self.result: RunResult | None = None
        self._last_cell: tuple[int, int] | None = None
        self.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.scene().sigMouseClicked.connect(self._on_scene_clicked)

    @property
    def image(self) -> MapImage | None:
        return self.heatmap.current

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        heatmap = getattr(self, "heatmap", None)  # (Qt resizes it while it is built)
        if heatmap is not None and heatmap.current is not None:
            heatmap.fit_title(self.width())

    def show_map(self, result: RunResult, image: MapImage, title: str | None = None,
                 reset_view: bool = True, rgba=None) -> None:
        self.result = result
        self.heatmap.show(image, title, reset_view, rgba)

    def clear_map(self, message: str = "no run yet") -> None:
        """No map, ``message`` in its place (never the picture of another map)."""
        self.result = None
        self.heatmap.show_nothing(message)

    def text_at(self, row: int, col: int) -> str | None:
        if self.result is None or self.image is None:
            return None
        return hover_text(self.result, self.image, row, col)

    def hover_text_now(self) -> str | None:
        """The description of the cell last hovered, for the map shown now
        (None when no cell is hovered or it is off this map)."""
        if self._last_cell is None:
            return None
        return self.text_at(*self._last_cell)

    def _on_scene_clicked(self, event) -> None:
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        cell = self.heatmap.cell_at(event.scenePos())
        if cell is not None and self.heatmap.current is not None and (
                not self.heatmap.current.margin or min(cell) >= 0
                and cell[0] < self.heatmap.current.data.shape[0] - 2 * self.heatmap.current.margin
                and cell[1] < self.heatmap.current.data.shape[1] - 2 * self.heatmap.current.margin):
            self.clicked.emit(*cell)  # (an element of C: never the margin)

    def _on_scene_mouse_moved(self, scene_pos: QtCore.QPointF) -> None:
        cell = self.heatmap.cell_at(scene_pos)
        self._last_cell = cell
        if cell is None:
            self.hovered.emit("")
            return
        self.hovered.emit(self.text_at(*cell) or "")
