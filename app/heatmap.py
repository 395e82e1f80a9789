"""A heatmap of one map: image, colour bar, title, and what is under the cursor."""
from __future__ import annotations

import numpy as np

from kernels.result import RunResult

from .colors import colour_map
from .maps import MapImage, hover_text
from .qt import QtCore, pg


def colour_bar_ticks(image: MapImage) -> list | None:
    """Integer ticks for maps of counts and ids (None: let pyqtgraph choose)."""
    colouring = image.colouring
    if colouring.kind == "diff":
        return [[(0, "same"), (1, "value"), (2, "writer"), (3, "count")]]
    if colouring.kind == "categorical":
        return [[(-1, "none")] + [(v, str(v)) for v in range(0, int(colouring.top) + 1, 5)]]
    if colouring.kind in ("count", "zero") and colouring.top <= 20:
        return [[(v, str(v)) for v in range(0, int(max(colouring.top, 1)) + 1)]]
    return None


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
        self.plot.setAspectLocked(False)
        self.plot.showGrid(x=False, y=False)
        self.image = pg.ImageItem(autoDownsample=False)
        self.plot.addItem(self.image)
        self.colour_bar: pg.ColorBarItem | None = None
        if colour_bar:
            self.colour_bar = pg.ColorBarItem(interactive=False, width=18,
                                              colorMap=pg.colormap.get("viridis"))
            self.colour_bar.setImageItem(self.image, insert_in=self.plot)
        self.current: MapImage | None = None

    def show(self, image: MapImage, title: str | None = None, reset_view: bool = True) -> None:
        shape_changed = self.current is None or self.current.data.shape != image.data.shape
        self.current = image
        levels = image.levels
        cmap = colour_map(image.colouring)
        if self.colour_bar is not None:
            self.colour_bar.setColorMap(cmap)
            self.colour_bar.setLevels(levels)
            self.colour_bar.axis.setTicks(colour_bar_ticks(image))
        else:
            self.image.setColorMap(cmap)
        self.image.setImage(image.data, levels=levels, autoLevels=False)
        rows, cols = image.data.shape
        self.image.setRect(QtCore.QRectF(-0.5, -0.5, cols, rows))
        self.plot.setTitle(title if title is not None else image.title)
        if self.axes:
            self.plot.setLabel("bottom", image.x_label)
            self.plot.setLabel("left", image.y_label)
            # Few columns (occurrences of a warp view): whole-number ticks only.
            self.plot.getAxis("bottom").setTicks(
                [[(c, str(c)) for c in range(cols)]] if cols <= 16 else None)
        if reset_view or shape_changed:
            self.plot.setRange(xRange=(-0.5, cols - 0.5), yRange=(-0.5, rows - 0.5), padding=0)

    def cell_at(self, scene_pos: QtCore.QPointF) -> tuple[int, int] | None:
        """(row, col) of the cell under a scene position, if on the image."""
        if self.current is None or not self.plot.sceneBoundingRect().contains(scene_pos):
            return None
        point = self.plot.vb.mapSceneToView(scene_pos)
        row, col = int(np.floor(point.y() + 0.5)), int(np.floor(point.x() + 0.5))
        rows, cols = self.current.data.shape
        if 0 <= row < rows and 0 <= col < cols:
            return row, col
        return None


class HeatmapWidget(pg.GraphicsLayoutWidget):
    """One heatmap; emits ``hovered`` with a description of the cell under the mouse."""

    hovered = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.heatmap = HeatmapPlot(self.ci)
        self.result: RunResult | None = None
        self.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)

    @property
    def image(self) -> MapImage | None:
        return self.heatmap.current

    def show_map(self, result: RunResult, image: MapImage, title: str | None = None,
                 reset_view: bool = True) -> None:
        self.result = result
        self.heatmap.show(image, title, reset_view)

    def clear_map(self) -> None:
        self.result = None
        self.heatmap.current = None
        self.heatmap.image.clear()
        self.heatmap.plot.setTitle("no run yet")

    def text_at(self, row: int, col: int) -> str | None:
        if self.result is None or self.image is None:
            return None
        return hover_text(self.result, self.image, row, col)

    def _on_scene_mouse_moved(self, scene_pos: QtCore.QPointF) -> None:
        cell = self.heatmap.cell_at(scene_pos)
        if cell is None:
            self.hovered.emit("")
            return
        self.hovered.emit(self.text_at(*cell) or "")
