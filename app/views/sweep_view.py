"""The sweep tab: a matrix of small heatmaps (grids down, blocks across, each of
one or two dimensions) on one shared colour scale, each marked PASS/FAIL with
its time, and time against total threads."""
from __future__ import annotations

import numpy as np

from kernels import (
    ASSUMED_REGISTERS,
    BACKEND_LABELS,
    BACKEND_SHORT,
    GPU_MODEL_NAMES,
    SweepCell,
    counted,
    dims_heading,
    dims_order,
    gpu_model_source,
    parse_list,
    percent,
    reassume_registers,
)

from ..export import cell_findings, cell_title, shared_top
from ..models.map_images import MAP_CHOICES, make_map
from ..models.session import Session
from ..qt import QtCore, QtGui, QtWidgets, pg
from .colors import colour_map
from .heatmap import HeatmapPlot, colour_bar_ticks

DEFAULT_BLOCKS = "1,2,4,8,16,32"  # grids: a kernel's own defaults replace them (sweep_defaults)
DEFAULT_THREADS = "32,64,128,256,512,1024"
SWEEP_MAPS = ("count", "iteration", "stores", "oob", "writer")


def spread_ticks(totals: list[int], apart: float) -> list[tuple[float, str]]:
    """Ticks at the configurations' own thread counts (log axis: log10
    values), kept ``apart`` decades from each other ("4,096" and "8,192",
    0.3 decades apart, once ran together as "4,0968,192"): the smallest,
    the largest, and between them each that keeps its distance."""
    if not totals:
        return []
    logs = [float(np.log10(t)) for t in totals]
    kept = [0]
    for i in range(1, len(totals)):
        if logs[i] - logs[kept[-1]] >= apart:
            kept.append(i)
    if kept[-1] != len(totals) - 1:  # the largest wins over a close neighbour
        if len(kept) > 1 and logs[-1] - logs[kept[-1]] < apart:
            kept.pop()
        kept.append(len(totals) - 1)
    return [(logs[i], f"{totals[i]:,}") for i in kept]


def _tick_gap(plot: pg.PlotWidget, totals: list[int]) -> float:
    """How many decades the widest tick label takes on ``plot``'s axis, with
    room between labels."""
    if len(totals) < 2:
        return 0.0
    width = plot.getViewBox().width() or 300.0
    decades = np.log10(totals[-1]) - np.log10(totals[0])
    per_decade = width / (decades * 1.1)  # (pyqtgraph pads the range by ~5% a side)
    metrics = QtGui.QFontMetrics(plot.getAxis("bottom").style.get("tickFont") or QtGui.QFont())
    widest = max(metrics.horizontalAdvance(f"{t:,}") for t in totals)
    return (widest + 12) / per_decade


def _label_points(plot: pg.PlotWidget, points: list[tuple[float, float, str]],
                  log_y: bool) -> list[pg.TextItem]:
    """Each point named by its configuration ("4 x 256"); configurations on
    one point (4 x 64 and 1 x 256: the same threads, the same idle share)
    share one label.  Positions are the axes' own: log10 on a log axis."""
    grouped: dict[tuple[float, float], list[str]] = {}
    for x, y, label in points:
        if x <= 0 or (log_y and y <= 0) or not np.isfinite(y):
            continue
        key = (round(float(np.log10(x)), 6), round(float(np.log10(y)) if log_y else y, 6))
        grouped.setdefault(key, []).append(label)
    items = []
    for (x, y), labels in grouped.items():
        text = ", ".join(labels[:3]) + (f" +{len(labels) - 3}" if len(labels) > 3 else "")
        item = pg.TextItem(text, color="#444444", anchor=(0, 1))
        item.setFont(_small_font())
        item.setToolTip("\n".join(labels))
        item.setPos(x, y)
        plot.addItem(item)
        items.append(item)
    return items


def _small_font() -> QtGui.QFont:
    font = QtGui.QFont()
    font.setPointSize(7)
    return font


class SweepView(QtWidgets.QWidget):
    """Shows the session's sweep, cell by cell as they arrive; emits
    ``cell_opened`` on a click."""

    run_requested = QtCore.Signal()
    cell_opened = QtCore.Signal(object)  # SweepCell
    export_sheet_requested = QtCore.Signal()
    export_folder_requested = QtCore.Signal()

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self._plots: list[tuple[HeatmapPlot, SweepCell]] = []
        #: the running sweep's blocks and threads (its cells' places), the
        #: shared colour scale's top, and the matrix's colour bar
        self._grid: tuple[tuple[int, ...], tuple[int, ...]] | None = None
        self._top: float | None = None
        self._bar: pg.ColorBarItem | None = None
        self._defaults = (DEFAULT_BLOCKS, DEFAULT_THREADS)
        #: the labels on the time and idle-threads plots (their points' configurations)
        self.point_labels: dict[str, list] = {"time": [], "idle": []}
        layout = QtWidgets.QVBoxLayout(self)
        form = QtWidgets.QHBoxLayout()
        self.blocks_edit = QtWidgets.QLineEdit(DEFAULT_BLOCKS)
        self.blocks_edit.setObjectName("sweep-blocks")
        self.blocks_edit.setToolTip("grids, separated by commas: N blocks (4) or NxM (2x2)")
        self.threads_edit = QtWidgets.QLineEdit(DEFAULT_THREADS)
        self.threads_edit.setObjectName("sweep-threads")
        self.threads_edit.setToolTip("blocks, separated by commas: N threads (256) or NxM "
                                     "(16x16), at most 1,024 threads each")
        self.map_combo = QtWidgets.QComboBox()
        for name in SWEEP_MAPS:
            self.map_combo.addItem(MAP_CHOICES[name][0], name)
        self.map_combo.currentIndexChanged.connect(lambda _: self.redraw())
        self.gpu_combo = QtWidgets.QComboBox()
        self.gpu_combo.setObjectName("sweep-gpu")
        self.gpu_combo.setToolTip("GPU model for the occupancy and waves shown in each cell")
        for name in GPU_MODEL_NAMES:
            self.gpu_combo.addItem(name)
            self.gpu_combo.setItemData(self.gpu_combo.count() - 1, gpu_model_source(name),
                                       QtCore.Qt.ItemDataRole.ToolTipRole)
        self.gpu_combo.currentIndexChanged.connect(lambda _: self.redraw())
        self.assumed_registers = ASSUMED_REGISTERS
        self.run_button = QtWidgets.QPushButton("Run sweep")
        self.run_button.setObjectName("run-sweep")
        self.run_button.clicked.connect(self.run_requested.emit)
        self.sheet_button = QtWidgets.QPushButton("Export contact sheet...")
        self.sheet_button.clicked.connect(self.export_sheet_requested.emit)
        self.folder_button = QtWidgets.QPushButton("Export all to folder...")
        self.folder_button.clicked.connect(self.export_folder_requested.emit)
        # Two rows: on one they needed 1,015 px and cut the window off at 1280.
        for label, widget in (("Grids", self.blocks_edit), ("Blocks", self.threads_edit)):
            form.addWidget(QtWidgets.QLabel(label))
            form.addWidget(widget, 1)
        form.addWidget(self.run_button)
        second = QtWidgets.QHBoxLayout()
        for label, widget in (("Map", self.map_combo), ("Occupancy on", self.gpu_combo)):
            second.addWidget(QtWidgets.QLabel(label))
            second.addWidget(widget)
        second.addStretch(1)
        second.addWidget(self.sheet_button)
        second.addWidget(self.folder_button)
        layout.addLayout(form)
        layout.addLayout(second)
        # A sweep's own errors (a malformed list, a launch past CUDA's limits)
        # show here, where it was asked for.
        self.error = QtWidgets.QLabel("")
        self.error.setObjectName("sweep-error")
        self.error.setStyleSheet("color: #c62828")
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)
        self.status = QtWidgets.QLabel("Choose lists of grids and blocks (N or NxM each), then "
                                       "Run sweep. Click a cell to open it in the Maps tab.")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.matrix = pg.GraphicsLayoutWidget()
        self.matrix.setObjectName("sweep-matrix")
        self.matrix.scene().sigMouseClicked.connect(self._on_matrix_clicked)
        splitter.addWidget(self.matrix)
        self.time_plot = pg.PlotWidget()
        self.time_plot.setLogMode(x=True, y=True)
        self.time_plot.setLabel("bottom", "total threads (blocks x threads per block)")
        self.time_plot.setLabel("left", "kernel time (ms)")
        # Times are plotted in ms and said so; pyqtgraph's SI prefixes do not
        # apply to a log axis, where they left "(s)" under millisecond ticks.
        self.time_plot.getAxis("left").enableAutoSIPrefix(False)
        self.time_plot.addLegend()
        plots = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        plots.addWidget(self.time_plot)
        self.idle_plot = pg.PlotWidget()
        self.idle_plot.setLogMode(x=True, y=False)
        self.idle_plot.setLabel("bottom", "total threads")
        self.idle_plot.setLabel("left", "idle threads (%)")
        self.idle_plot.setYRange(0, 100)
        plots.addWidget(self.idle_plot)
        splitter.addWidget(plots)
        splitter.setSizes([600, 250])
        layout.addWidget(splitter, 1)
        self._set_export_enabled()
        self._draw_times()
        for plot in (self.time_plot, self.idle_plot):
            plot.getViewBox().sigResized.connect(self._retick)
        session.sweep_started.connect(self.begin)
        session.sweep_cell_added.connect(self.add_cell)
        session.assumed_registers_changed.connect(self._on_assumed_registers_changed)

    @property
    def cells(self) -> list[SweepCell]:
        return self.session.sweep_cells

    @property
    def map_name(self) -> str:
        return self.map_combo.currentData()

    def grids_and_blocks(self) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
        """The lists asked for, as dims; ThreadMapError names a bad entry."""
        return (parse_list(self.blocks_edit.text(), "Grids"),
                parse_list(self.threads_edit.text(), "Blocks"))

    def show_error(self, message: str) -> None:
        """One line of ``message`` above the matrix (all of it in the tooltip);
        empty hides it."""
        self.error.setText(message.splitlines()[0] if message else "")
        self.error.setToolTip(message)
        self.error.setVisible(bool(message))

    def set_defaults(self, grids: str, blocks: str) -> None:
        """A kernel's default lists (kernels.sweep_defaults), where the fields
        still hold defaults: what the user typed is kept."""
        defaults = {(DEFAULT_BLOCKS, DEFAULT_THREADS), self._defaults}
        if (self.blocks_edit.text(), self.threads_edit.text()) in defaults:
            self.blocks_edit.setText(grids)
            self.threads_edit.setText(blocks)
        self._defaults = (grids, blocks)

    def _on_assumed_registers_changed(self, registers: int) -> None:
        self.assumed_registers = registers
        self.redraw()

    def clear(self) -> None:
        self._grid = None
        self.redraw()

    def begin(self, grids, blocks) -> None:
        """A sweep of ``grids`` x ``blocks`` (dims tuples) starts: its cells
        will arrive one by one, each drawn into its place (redrawing the whole
        matrix at every arrival made a sweep quadratic: 55 s with the window
        frozen for 64)."""
        self.show_error("")
        self.clear()
        self._grid = (tuple(dims_order(grids)), tuple(dims_order(blocks)))
        self._draw_axes(*self._grid)

    def add_cell(self, cell: SweepCell) -> None:
        """(The session has added ``cell`` to :attr:`cells`.)"""
        grid = self._grid
        if grid is None or cell.grid not in grid[0] or cell.block not in grid[1]:
            self.redraw()
            return
        top = shared_top(self.cells, self.map_name)
        if top != self._top:  # a new maximum: one colour scale for every cell
            self._top = top
            for plot, done in self._plots:
                if done.result is not None:
                    plot.show(make_map(done.result, self.map_name, shared_top=top), "")
        self._plots.append((self._draw_cell(cell, *grid, top), cell))
        self._draw_colour_bar(len(grid[0]), len(grid[1]))
        self._after_cells_changed()

    def _set_export_enabled(self) -> None:
        has = any(c.result is not None for c in self.cells)
        self.sheet_button.setEnabled(has)
        self.folder_button.setEnabled(has)

    def redraw(self) -> None:
        """Draw the whole matrix again (the map, the GPU model or the assumed
        registers changed)."""
        self.matrix.clear()
        self._plots = []
        self._bar = None
        self._top = None
        self._set_export_enabled()
        if not self.cells:
            self._draw_times()
            return
        grid = self._grid
        blocks = dims_order([c.grid for c in self.cells] + list(grid[0] if grid else ()))
        threads = dims_order([c.block for c in self.cells] + list(grid[1] if grid else ()))
        self._top = shared_top(self.cells, self.map_name)
        self._draw_axes(blocks, threads)
        for cell in self.cells:
            self._plots.append((self._draw_cell(cell, blocks, threads, self._top), cell))
        self._draw_colour_bar(len(blocks), len(threads))
        self._after_cells_changed()

    def _draw_axes(self, blocks, threads) -> None:
        for col, dims in enumerate(threads):
            self.matrix.addLabel(dims_heading(dims, "thread"), row=0, col=col + 1)
        for row, dims in enumerate(blocks):
            self.matrix.addLabel(dims_heading(dims, "block"), row=row + 1, col=0, angle=-90)

    def _draw_cell(self, cell: SweepCell, blocks, threads, top) -> HeatmapPlot:
        row, col = list(blocks).index(cell.grid) + 1, list(threads).index(cell.block) + 1
        plot = HeatmapPlot(self.matrix.ci, row=row, col=col, colour_bar=False, axes=False)
        plot.plot.setMouseEnabled(x=False, y=False)
        plot.plot.hideButtons()
        colour = "#1a7f37" if cell.result and cell.result.verdict.passed else "#c62828"
        if cell.result is None:
            plot.plot.setTitle(f"<span style='color:{colour}'>error</span>", size="8pt")
            plot.plot.getViewBox().setToolTip(cell.error or "")
            return plot
        plot.show(make_map(cell.result, self.map_name, shared_top=top), "")
        findings = cell_findings(cell)
        plot.plot.setTitle(f"<span style='color:{colour}'>{cell_title(cell)}</span>"
                           + (f"<br>{findings}" if findings else "")
                           + f"<br>{self.occupancy_text(cell)}", size="8pt")
        # pyqtgraph fixes a title's row at 30 px; these have three or four lines.
        height = 60 if findings else 46
        plot.plot.titleLabel.setMaximumHeight(height)
        plot.plot.layout.setRowFixedHeight(0, height)
        return plot

    def _draw_colour_bar(self, rows: int, cols: int) -> None:
        shown = [plot.current for plot, cell in self._plots if plot.current is not None]
        if not shown:
            return
        first = shown[0]
        if self._bar is None:
            self._bar = pg.ColorBarItem(values=first.levels, colorMap=colour_map(first.colouring),
                                        interactive=False, width=14)
            self.matrix.addItem(self._bar, row=1, col=cols + 1, rowspan=rows)
        else:
            self._bar.setLevels(first.levels)
            self._bar.setColorMap(colour_map(first.colouring))
        self._bar.axis.setTicks(colour_bar_ticks(first))

    def _after_cells_changed(self) -> None:
        self._set_export_enabled()
        self._draw_times()
        done = [c for c in self.cells if c.result is not None]
        passed = sum(1 for c in done if c.result.verdict.passed)
        self.status.setText(f"{len(self.cells)} configurations: {passed} PASS, "
                            f"{len(done) - passed} FAIL, {len(self.cells) - len(done)} errors. "
                            "One colour scale for all cells. Click a cell to open it.")

    def occupancy_text(self, cell: SweepCell) -> str:
        """``"occ 75%, 2 waves, last 71% idle<br>12% of threads idle"`` on the chosen GPU."""
        idle = cell.result.maps.idle_threads / max(cell.total_threads, 1)
        result = reassume_registers(cell.result, self.assumed_registers)  # arithmetic only
        occ = result.occupancy.get(self.gpu_combo.currentText())
        if occ is None:  # not worked out for this cell (its kernel could not be read)
            return f"{percent(idle)} threads idle"
        return (f"occ {percent(occ.occupancy)}, {counted(occ.waves, 'wave')}, "
                f"last {percent(occ.last_wave_idle)} idle<br>{percent(idle)} of threads idle")

    def _draw_times(self) -> None:
        self.time_plot.clear()
        self.idle_plot.clear()
        points = {"PASS": [], "FAIL": []}
        labelled_times: list[tuple[float, float, str]] = []
        backends = set()
        for cell in self.cells:
            if cell.result is None:
                continue
            timing = cell.result.shown_timing
            if timing is None:
                continue
            backends.add(timing.backend)
            point = (cell.total_threads, timing.seconds * 1e3)
            points[cell.result.verdict.word].append(point)
            labelled_times.append((*point, cell.label))
        for word, colour in (("PASS", "#1a7f37"), ("FAIL", "#c62828")):
            if points[word]:
                xs, ys = np.array(points[word], dtype=float).T
                self.time_plot.plot(xs, ys, pen=None, symbol="o", symbolBrush=colour,
                                    symbolPen=None, name=word)
        if backends:
            label = ", ".join(BACKEND_SHORT[b] for b in sorted(backends))
            gpu = backends <= {"gpu"}
            self.time_plot.setLabel("left", f"kernel time (ms), {label}"
                                    + ("" if gpu else ", not GPU"))
            self.time_plot.setToolTip("; ".join(BACKEND_LABELS[b] for b in sorted(backends)))
        done = [c for c in self.cells if c.result is not None]
        idle = np.array([(c.total_threads, 100 * c.result.maps.idle_threads / c.total_threads)
                         for c in done], dtype=float)
        if idle.size:
            self.idle_plot.plot(idle[:, 0], idle[:, 1], pen=None, symbol="s",
                                symbolBrush="#4c72b0", symbolPen=None)
        self.point_labels = {
            "time": _label_points(self.time_plot, labelled_times, log_y=True),
            "idle": _label_points(self.idle_plot, [(x, y, c.label) for (x, y), c
                                                   in zip(idle.tolist(), done)], log_y=False)}
        totals = sorted({c.total_threads for c in self.cells})
        if not totals:  # nothing yet: a plain decade axis, not pyqtgraph's +-0.4
            for plot in (self.time_plot, self.idle_plot):
                plot.setXRange(np.log10(32), np.log10(32768), padding=0.05)
            self.time_plot.setYRange(-2, 2)
        self._totals = totals
        self._retick()

    def _retick(self) -> None:
        """The thread-count ticks, as many as the plots' widths keep apart."""
        totals = getattr(self, "_totals", [])
        for plot in (self.time_plot, self.idle_plot):
            plot.getAxis("bottom").setTicks([spread_ticks(totals, _tick_gap(plot, totals))])

    def _on_matrix_clicked(self, event) -> None:
        pos = event.scenePos()
        for plot, cell in self._plots:
            if plot.plot.sceneBoundingRect().contains(pos):
                if cell.result is not None:
                    self.cell_opened.emit(cell)
                return
