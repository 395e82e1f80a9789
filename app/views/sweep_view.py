"""The sweep tab: a matrix of small heatmaps (grids down, blocks across, each of
one or two dimensions) on one shared colour scale, each marked PASS/FAIL with
its time, and time against total threads.  The cells' pictures are painted off
the GUI thread (sweep_matrix.py); the plots are brought up to date at most
every few hundred milliseconds."""
from __future__ import annotations

import numpy as np

from kernels import (
    ASSUMED_REGISTERS,
    BACKEND_LABELS,
    BACKEND_SHORT,
    GPU_MODEL_NAMES,
    SweepCell,
    counted,
    dims_order,
    gpu_model_source,
    parse_list,
    percent,
    reassume_registers,
)

from ..export import cell_findings, cell_title, shared_top
from ..models.map_images import MAP_CHOICES, MapImage, make_map
from ..models.session import Session
from ..qt import QtCore, QtGui, QtWidgets, pg
from .colors import colour_map
from .heatmap import colour_bar_ticks
from .sweep_matrix import FAIL_COLOUR, PASS_COLOUR, CellTitle, SweepMatrix

#: how often the plots of time and of threads that stored no output follow a
#: running sweep
PLOTS_EVERY_MS = 1000

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


class PointLabels(pg.GraphicsObject):
    """Each point of a plot named by its configuration ("4 x 256"), in one
    item that paints every label at its point's pixel: a pyqtgraph TextItem
    per point cost ~0.5 ms each to add and more to lay out at every view
    change (128 of them stalled the window 200 ms on a busy machine).
    Configurations on one point (4 x 64 and 1 x 256: the same threads, the
    same share idle) share one label.  Positions are the axes' own: log10 on
    a log axis."""

    def __init__(self, log_y: bool, avoid: pg.GraphicsItem | None = None):
        """``avoid``: an item the labels must leave clear (the plot's legend)."""
        super().__init__()
        self.log_y = log_y
        self.avoid = avoid
        self.labels: list[tuple[float, float, str]] = []
        #: the labels the last paint drew (the others would have covered them)
        self.drawn: list[str] = []
        self._font = _small_font()

    def set_points(self, points: list[tuple[float, float, str]]) -> None:
        grouped: dict[tuple[float, float], list[str]] = {}
        for x, y, label in points:
            if x <= 0 or (self.log_y and y <= 0) or not np.isfinite(y):
                continue
            key = (float(np.log10(x)), float(np.log10(y)) if self.log_y else float(y))
            grouped.setdefault(key, []).append(label)
        labels = [(x, y, ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3
                                                  else ""))
                  for (x, y), names in grouped.items()]
        if labels != self.labels:
            self.prepareGeometryChange()
            self.labels = labels
            self.update()

    @property
    def texts(self) -> list[str]:
        return [text for _, _, text in self.labels]

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802 (Qt API)
        if not self.labels:
            return QtCore.QRectF()
        xs = [x for x, _, _ in self.labels]
        ys = [y for _, y, _ in self.labels]
        return QtCore.QRectF(min(xs), min(ys), max(max(xs) - min(xs), 1e-9),
                             max(max(ys) - min(ys), 1e-9))

    def paint(self, painter, *args) -> None:
        at = painter.transform()
        painter.save()
        painter.resetTransform()  # text in pixels, beside each point
        painter.setFont(self._font)
        painter.setPen(QtGui.QColor("#444444"))
        metrics = QtGui.QFontMetrics(self._font)
        taken: list[QtCore.QRectF] = []
        if self.avoid is not None and self.avoid.isVisible():
            # the legend, from the scene into this paint's pixels
            to_item, _ = self.sceneTransform().inverted()
            taken.append(at.mapRect(to_item.mapRect(self.avoid.sceneBoundingRect())))
        self.drawn = []
        # Left to right; a label that would cover one already drawn is left
        # out (its point's configurations are in the tooltip of the plot):
        # 36 labels along one line of times ran into each other.
        view = self.getViewBox()
        #: the plot's area and each drawn label's box, in the view's pixels
        #: (the layout test holds one within the other)
        self.area = at.mapRect(view.viewRect()) if view is not None else QtCore.QRectF()
        self.boxes: list[QtCore.QRectF] = []
        right = self.area.right() if view is not None else float("inf")
        for x, y, text in sorted(self.labels):
            at_point = at.map(QtCore.QPointF(x, y))
            width = metrics.horizontalAdvance(text)
            # beside the point, or before it where the plot's edge would cut
            # it ("32 x 1024" at the last point read "32 x 1")
            point = at_point + (QtCore.QPointF(4, -3) if at_point.x() + 4 + width <= right
                                else QtCore.QPointF(-4 - width, -3))
            # (a gap of a few pixels on each side: two labels that touch read as one)
            box = QtCore.QRectF(metrics.boundingRect(text)).translated(point).adjusted(-5, 0, 5, 0)
            if any(box.intersects(other) for other in taken):
                continue
            taken.append(box)
            self.boxes.append(box.adjusted(5, 0, -5, 0))
            self.drawn.append(text)
            painter.drawText(point, text)
        painter.restore()


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
        #: the running sweep's grids and blocks (its cells' places), and the
        #: shared colour scale's top
        self._grid: tuple[tuple, tuple] | None = None
        self._top: float | None = None
        #: what the painting thread reads (never a widget): map, GPU model,
        #: assumed registers, colour scale's top
        self._paint_settings = ("count", GPU_MODEL_NAMES[0], ASSUMED_REGISTERS, None)
        self._defaults = (DEFAULT_BLOCKS, DEFAULT_THREADS)
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
        matrix_row = QtWidgets.QWidget()
        matrix_layout = QtWidgets.QHBoxLayout(matrix_row)
        matrix_layout.setContentsMargins(0, 0, 0, 0)
        self.matrix = SweepMatrix(self._describe)
        self.matrix.cell_opened.connect(self.cell_opened.emit)
        self.matrix.settled.connect(self._on_pictures_settled)
        matrix_layout.addWidget(self.matrix, 1)
        # the shared colour scale, beside the scroll area: always in view
        self.bar_view = pg.GraphicsLayoutWidget()
        self.bar_view.setObjectName("sweep-colour-bar")
        self.bar_view.setFixedWidth(150)
        # Built now, shown with the first picture: building it then stalled
        # a busy machine's window ~60 ms in the middle of a sweep.
        # Unseen (transparent) until then, but laid out: a hidden item keeps
        # no height in a graphics layout, and once shown its labels were
        # drawn on top of each other in a bar 3 px tall.
        self._bar = pg.ColorBarItem(values=(0, 1), interactive=False, width=14)
        self._bar.setOpacity(0.0)
        self.bar_view.addItem(self._bar, row=0, col=0)
        matrix_layout.addWidget(self.bar_view)
        splitter.addWidget(matrix_row)
        self.time_plot = pg.PlotWidget()
        self.time_plot.setLogMode(x=True, y=True)
        self.time_plot.setLabel("bottom", "total threads (blocks x threads per block)")
        self.time_plot.setLabel("left", "kernel time (ms)")
        # Times are plotted in ms and said so; pyqtgraph's SI prefixes do not
        # apply to a log axis, where they left "(s)" under millisecond ticks.
        self.time_plot.getAxis("left").enableAutoSIPrefix(False)
        self._scatter = {
            word: self.time_plot.plot([], [], pen=None, symbol="o", symbolBrush=colour,
                                      symbolPen=None, name=word)
            for word, colour in (("PASS", PASS_COLOUR), ("FAIL", FAIL_COLOUR))}
        plots = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        plots.addWidget(self.time_plot)
        self.idle_plot = pg.PlotWidget()
        self.idle_plot.setLogMode(x=True, y=False)
        self.idle_plot.setLabel("bottom", "total threads")
        # (short: a longer label is cut off at the plot's height; the
        # tooltip says it whole)
        self.idle_plot.setLabel("left", "stored no output (%)")
        self.idle_plot.setToolTip("threads that stored no element of the output, as a share "
                                  "of the launch's threads (not threads that did nothing: a "
                                  "reduction's threads add into shared memory, and one a "
                                  "block stores its sum)")
        self.idle_plot.setYRange(0, 100)
        self._idle_scatter = self.idle_plot.plot([], [], pen=None, symbol="s",
                                                 symbolBrush="#4c72b0", symbolPen=None)
        #: the labels on the plots of time and of threads that stored no output
        #: (their points' configurations)
        self.point_labels = {"time": PointLabels(log_y=True),
                             "idle": PointLabels(log_y=False)}
        self.time_plot.addItem(self.point_labels["time"], ignoreBounds=True)
        self.idle_plot.addItem(self.point_labels["idle"], ignoreBounds=True)
        plots.addWidget(self.idle_plot)
        splitter.addWidget(plots)
        splitter.setSizes([600, 250])
        layout.addWidget(splitter, 1)
        self._times_timer = QtCore.QTimer(self)
        self._times_timer.setSingleShot(True)
        self._times_timer.setInterval(PLOTS_EVERY_MS)
        self._times_timer.timeout.connect(self._draw_times)
        self._set_export_enabled()
        self._draw_times()
        for plot in (self.time_plot, self.idle_plot):
            plot.getViewBox().sigResized.connect(self._retick)
        session.sweep_started.connect(self.begin)
        session.sweep_cell_added.connect(self.add_cell)
        session.sweep_finished.connect(lambda _: self.finish_running())
        session.assumed_registers_changed.connect(self._on_assumed_registers_changed)

    @property
    def cells(self) -> list[SweepCell]:
        return self.session.sweep_cells

    @property
    def map_name(self) -> str:
        return self.map_combo.currentData()

    @property
    def painting(self) -> bool:
        """Pictures or plots still to come (tests and the benchmark wait)."""
        return self.matrix.busy or self._times_timer.isActive()

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
        will arrive one by one, each painted into its place off the GUI thread
        (redrawing the whole matrix at every arrival made a sweep quadratic:
        55 s with the window frozen for 64)."""
        self.show_error("")
        self._grid = (tuple(dims_order(grids)), tuple(dims_order(blocks)))
        self._top = None
        self._running = True
        self._settle_paint_settings()
        self.matrix.begin(*self._grid)
        self._set_export_enabled()
        self._draw_times()

    def add_cell(self, cell: SweepCell) -> None:
        """(The session has added ``cell`` to :attr:`cells`.)  Cheap on the GUI
        thread: its colour scale's top, then its picture is painted elsewhere."""
        if cell.result is not None:
            top = shared_top([cell], self.map_name)
            if top is not None and (self._top is None or top > self._top):
                # a new maximum: one colour scale for every cell, repainted
                self._top = top
                self._settle_paint_settings()
                self.matrix.repaint_all()
        self.matrix.add(cell)
        self._after_cells_changed()

    def _settle_paint_settings(self) -> None:
        self._paint_settings = (self.map_name, self.gpu_combo.currentText(),
                                self.assumed_registers, self._top)

    def _set_export_enabled(self) -> None:
        has = any(c.result is not None for c in self.cells)
        self.sheet_button.setEnabled(has)
        self.folder_button.setEnabled(has)

    def redraw(self) -> None:
        """Paint every cell again (the map, the GPU model or the assumed
        registers changed), off the GUI thread."""
        self._top = shared_top(self.cells, self.map_name)
        self._settle_paint_settings()
        grid = self._grid
        grids = dims_order([c.grid for c in self.cells] + list(grid[0] if grid else ()))
        blocks = dims_order([c.block for c in self.cells] + list(grid[1] if grid else ()))
        self.matrix.begin(grids, blocks)
        for cell in self.cells:
            self.matrix.add(cell)
        self._after_cells_changed()

    # -- what a cell shows (on the painting thread) ---------------------------------------

    def _describe(self, cell: SweepCell) -> tuple[MapImage | None, CellTitle]:
        map_name, gpu, registers, top = self._paint_settings
        if cell.result is None:
            return None, CellTitle(((f"{cell.label}: error", FAIL_COLOUR),
                                    (cell.error or "", "#444444")))
        colour = PASS_COLOUR if cell.result.verdict.passed else FAIL_COLOUR
        lines = [(cell_title(cell), colour)]
        findings = cell_findings(cell)
        if findings:
            lines.append((findings, FAIL_COLOUR if not cell.result.verdict.passed else "#8a5a00"))
        lines += [(line, "#333333") for line in occupancy_lines(cell, gpu, registers)]
        return make_map(cell.result, map_name, shared_top=top), CellTitle(tuple(lines))

    def occupancy_text(self, cell: SweepCell) -> str:
        """``"occupancy 75%, 2 waves<br>last wave: 29% of the GPU<br>12% of threads
        stored no output"`` on the chosen GPU."""
        return "<br>".join(occupancy_lines(cell, self.gpu_combo.currentText(),
                                           self.assumed_registers))

    def _on_pictures_settled(self) -> None:
        image = self.matrix.last_image
        if image is None:
            return
        self._bar.setLevels(image.levels)
        self._bar.setColorMap(colour_map(image.colouring))
        self._bar.setOpacity(1.0)
        ticks = colour_bar_ticks(image)
        self._bar.axis.setTicks(ticks)
        # room for the longest label (the axis drops the labels that do not fit)
        longest = max((len(label) for level in ticks or [] for _, label in level), default=6)
        self._bar.axis.setWidth(int(14 + 7 * longest))

    def _after_cells_changed(self) -> None:
        self._set_export_enabled()
        if not self._times_timer.isActive():
            self._times_timer.start()
        done = [c for c in self.cells if c.result is not None]
        passed = sum(1 for c in done if c.result.verdict.passed)
        self.status.setText(f"{len(self.cells)} configurations: {passed} PASS, "
                            f"{len(done) - passed} FAIL, {len(self.cells) - len(done)} errors. "
                            "One colour scale for all cells. Click a cell to open it.")

    def finish_running(self) -> None:
        """The sweep has ended (done, cancelled or failed): the plots in full."""
        if not getattr(self, "_running", False):
            return
        self._running = False
        self._times_timer.stop()
        self._draw_times()

    def _draw_times(self) -> None:
        """The plots of time and of threads that stored no output, brought up
        to date (their points set again; once the sweep has ended, each
        point's label)."""
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
        for word, item in self._scatter.items():
            xs, ys = (np.array(points[word], dtype=float).T if points[word]
                      else (np.array([]), np.array([])))
            item.setData(xs, ys)
        if backends:
            label = ", ".join(BACKEND_SHORT[b] for b in sorted(backends))
            gpu = backends <= {"gpu"}
            # (the axis keeps to "kernel time (ms)": a longer label was cut
            # off at the plot's height; where the time was measured is the title)
            # The legend is in the title: a legend box inside the plot lay over
            # the points of the largest launches.
            key = (f" &nbsp; <span style='color:{PASS_COLOUR}'>\u25cf PASS</span> "
                   f"<span style='color:{FAIL_COLOUR}'>\u25cf FAIL</span>")
            title = f"{label}{'' if gpu else ', not a GPU time'}{key}"
            if title != getattr(self, "_time_title", None):
                # (each setTitle lays the plot out again, though the text is the
                # same: 64 times in a sweep, up to 40 ms on a busy machine)
                self._time_title = title
                self.time_plot.setTitle(title, size="8pt")
                self.time_plot.setToolTip("; ".join(BACKEND_LABELS[b] for b in sorted(backends)))
        done = [c for c in self.cells if c.result is not None]
        idle = np.array([(c.total_threads,
                          100 * c.result.maps.threads_without_output / c.total_threads)
                         for c in done], dtype=float).reshape(-1, 2)
        self._idle_scatter.setData(idle[:, 0], idle[:, 1])
        self.point_labels["time"].set_points(labelled_times)
        self.point_labels["idle"].set_points([(x, y, c.label) for (x, y), c
                                              in zip(idle.tolist(), done)])
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
            ticks = [spread_ticks(totals, _tick_gap(plot, totals))]
            axis = plot.getAxis("bottom")
            if getattr(axis, "_threadmap_ticks", None) != ticks:  # (each call re-lays out)
                axis._threadmap_ticks = ticks
                axis.setTicks(ticks)

    def shut_down(self) -> None:
        """The painting thread ends (the window closes)."""
        self.matrix.shut_down()


def occupancy_lines(cell: SweepCell, gpu: str, registers: int) -> list[str]:
    """``["occupancy 75%, 2 waves", "last wave: 29% of the GPU", "12% of threads
    stored no output"]`` on ``gpu`` (the last wave's share of the GPU's block
    slots)."""
    without = cell.result.maps.threads_without_output / max(cell.total_threads, 1)
    result = reassume_registers(cell.result, registers)  # arithmetic only
    occ = result.occupancy.get(gpu)
    if occ is None:  # not worked out for this cell (its kernel could not be read)
        return [f"{percent(without)} of threads stored no output"]
    # (said so that a beginner reads it right: "occupancy 100%, last wave >99%
    # idle" read as a busy GPU, where one block used one SM of 132)
    return [f"occupancy {percent(occ.occupancy)}, {counted(occ.waves, 'wave')}",
            f"last wave: {percent(1 - occ.last_wave_idle)} of the GPU",
            "every thread stored output" if without == 0
            else f"{percent(without)} of threads stored no output"]
