"""ThreadMap's main window: controls, heatmaps, results table, sweep, export."""
from __future__ import annotations

import sys
from pathlib import Path

import resources
from kernels import (
    KERNEL_OUTPUT_LINES,
    SLOW_SIMULATOR_SECONDS,
    RunRequest,
    RunResult,
    SweepCell,
    ThreadMapError,
    __version__,
    default_launch,
    describe_seconds,
    format_dims,
    gpu_available,
    gpu_status,
    kernel_names,
    parse_list,
    resolve_backend,
    simulator_estimate,
    stop_child_processes,
    sweep_requests,
    write_sweep,
)

from .analysis import AnalysisPanel
from .controls import ControlPanel
from .export import (
    export_contact_sheet,
    export_heatmap,
    export_replay,
    replay_iterations,
    run_title,
)
from .gui_gc import collect_on_gui_thread
from .heatmap import HeatmapWidget
from .maps import (
    ANALYSIS_MAPS,
    MAP_CHOICES,
    WRITER_KINDS,
    diff_map,
    make_map,
    replay_map,
    warp_map,
)
from .qt import QtCore, QtGui, QtWidgets
from .results_table import ResultsModel
from .settings import Settings
from .sweep_view import SweepView
from .worker import RunController

APP_NAME = "ThreadMap"
HOVER_PROMPT = "Hover over the map to see who wrote an element."


def _scrolled(label: QtWidgets.QLabel, name: str, lines: int) -> QtWidgets.QScrollArea:
    """``label`` in a frameless scroll area at most ``lines`` of its text tall."""
    area = QtWidgets.QScrollArea()
    area.setObjectName(name)
    area.setWidgetResizable(True)
    area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    area.setWidget(label)
    area.setMaximumHeight(lines * label.fontMetrics().lineSpacing() + 12)
    return area


def backend_availability() -> dict[str, str | None]:
    """None for usable backends, else why not (shown as the item's tooltip)."""
    return {"auto": None, "cpu": None, "sim": None,
            "gpu": None if gpu_available() else
            "no CUDA device here (numba.cuda.is_available() is False)"}


class MainWindow(QtWidgets.QMainWindow):
    """The app's one window."""

    def __init__(self, synchronous: bool | None = None, settings: Settings | None = None,
                 confirm=None):
        super().__init__()
        collect_on_gui_thread()  # runs work on worker threads: see gui_gc.py
        self.settings = settings or Settings()
        #: asks the user a yes/no question (replaced in tests)
        self.confirm = confirm or self._confirm_dialog
        self.setWindowTitle(f"{APP_NAME} - which CUDA thread computes which element")
        self.setWindowIcon(QtGui.QIcon(str(resources.path(resources.ICON))))
        self.controller = RunController(self, synchronous=synchronous)
        self.current: RunResult | None = None
        self.diff_pair: tuple[RunResult, RunResult] | None = None
        self.sweep_cells: list[SweepCell] = []

        self.controls = ControlPanel(backend_availability())
        controls_dock = QtWidgets.QDockWidget("Run", self)
        controls_dock.setObjectName("controls-dock")
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.controls)
        # Never sideways: the dock is as wide as the controls need (at 1280 px
        # the panel scrolled sideways and hid "blocks x" and the K field).
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        for combo in self.controls.findChildren(QtWidgets.QComboBox):
            # (a long kernel-file name must not widen the whole panel)
            combo.setSizeAdjustPolicy(
                QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(10)
            # (its minimumSizeHint still measures the longest item: set it)
            combo.setMinimumWidth(combo.sizeHint().width())
        scroll.setMinimumWidth(self.controls.minimumSizeHint().width()
                               + scroll.verticalScrollBar().sizeHint().width() + 4)
        controls_dock.setWidget(scroll)
        controls_dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, controls_dock)

        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(self._build_maps_tab(), "Maps")
        self.sweep_view = SweepView()
        self.tabs.addTab(self.sweep_view, "Sweep")
        self.setCentralWidget(self.tabs)

        self.results = ResultsModel(self)
        self.table = QtWidgets.QTableView()
        self.table.setObjectName("results-table")
        self.table.setModel(self.results)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        # Extended: Ctrl+click a second run to compare the two (Diff).
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        table_dock = QtWidgets.QDockWidget("Results", self)
        table_dock.setObjectName("results-dock")
        table_dock.setWidget(self.table)
        table_dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, table_dock)
        # A few rows by default, once the window has its size: the map is the
        # largest thing on screen.
        QtCore.QTimer.singleShot(0, lambda: (
            self.resizeDocks([table_dock], [5 * self.table.verticalHeader().defaultSectionSize()],
                             QtCore.Qt.Orientation.Vertical),
            self.resizeDocks([controls_dock], [scroll.minimumWidth()],
                             QtCore.Qt.Orientation.Horizontal)))

        self._build_status_bar()
        self._build_actions()
        self._connect()
        self._load_settings()
        self._on_busy_changed(False)

    # -- building -----------------------------------------------------------------------

    def _build_maps_tab(self) -> QtWidgets.QWidget:
        tab = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(tab)
        bar = QtWidgets.QHBoxLayout()
        self.map_combo = QtWidgets.QComboBox()
        self.map_combo.setObjectName("map")
        for name, (label, description) in MAP_CHOICES.items():
            self.map_combo.addItem(label, name)
            self.map_combo.setItemData(self.map_combo.count() - 1, description,
                                       QtCore.Qt.ItemDataRole.ToolTipRole)
        self.map_combo.insertSeparator(self.map_combo.count())
        for name, label in ANALYSIS_MAPS.items():
            self.map_combo.addItem(label, name)
        self.writer_combo = QtWidgets.QComboBox()
        self.writer_combo.setObjectName("writer-kind")
        self.writer_combo.addItems(WRITER_KINDS)
        self.export_width = QtWidgets.QSpinBox()
        self.export_height = QtWidgets.QSpinBox()
        for spin, value in ((self.export_width, 1200), (self.export_height, 900)):
            spin.setRange(16, 16384)
            spin.setValue(value)
            spin.setSuffix(" px")
        self.export_button = QtWidgets.QPushButton("Export...")
        self.export_button.setToolTip("Ctrl+E: PNG or SVG, with title and colour bar")
        bar.addWidget(QtWidgets.QLabel("Map"))
        bar.addWidget(self.map_combo)
        self.writer_label = QtWidgets.QLabel("by")
        bar.addWidget(self.writer_label)
        bar.addWidget(self.writer_combo)
        bar.addStretch(1)
        bar.addWidget(QtWidgets.QLabel("Export size"))
        bar.addWidget(self.export_width)
        bar.addWidget(QtWidgets.QLabel("x"))
        bar.addWidget(self.export_height)
        bar.addWidget(self.export_button)
        layout.addLayout(bar)
        self.verdict_label = QtWidgets.QLabel("No run yet: choose a kernel and a launch, then Run "
                                              "(Ctrl+R).")
        self.verdict_label.setObjectName("verdict")
        self.verdict_label.setWordWrap(True)
        self.verdict_label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.verdict_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        # A fixed height, scrolling past six lines: a verdict with more reasons
        # pushed the map and the analysis tabs down under the user's cursor.
        verdict = _scrolled(self.verdict_label, "verdict-scroll", lines=6)
        verdict.setFixedHeight(verdict.maximumHeight())
        layout.addWidget(verdict)
        self.error_label = QtWidgets.QLabel()
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet("color: #b71c1c; background: #fdecea; padding: 4px")
        self.error_label.hide()
        layout.addWidget(self.error_label)
        self.heatmap = HeatmapWidget()
        self.heatmap.setObjectName("heatmap")
        self.analysis = AnalysisPanel()
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        splitter.addWidget(self.heatmap)
        splitter.addWidget(self.analysis)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout.addWidget(splitter, 1)
        self.legend_label = QtWidgets.QLabel()
        self.legend_label.setWordWrap(True)
        layout.addWidget(self.legend_label)
        self.hover_label = QtWidgets.QLabel(HOVER_PROMPT)
        self.hover_label.setObjectName("hover")
        self.hover_label.setFont(QtGui.QFontDatabase.systemFont(
            QtGui.QFontDatabase.SystemFont.FixedFont))
        self.hover_label.setMinimumHeight(4 * self.hover_label.fontMetrics().height())
        self.hover_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.hover_label)
        self.details_label = QtWidgets.QLabel()
        self.details_label.setObjectName("details")
        self.details_label.setWordWrap(True)
        self.details_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        # Timings and notes scroll within a few lines instead of pushing the
        # map up (they took a fifth of the window at 1280 x 800).
        layout.addWidget(_scrolled(self.details_label, "details-scroll", lines=5))
        return tab

    def _build_status_bar(self) -> None:
        status = self.statusBar()
        self.backend_status = QtWidgets.QLabel(gpu_status())
        self.backend_status.setObjectName("backend-status")
        status.addPermanentWidget(self.backend_status)
        self.progress_bar = QtWidgets.QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMaximumWidth(260)
        self.progress_bar.hide()
        status.addPermanentWidget(self.progress_bar)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setToolTip("Esc")
        self.cancel_button.hide()
        status.addPermanentWidget(self.cancel_button)

    def _build_actions(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self.open_action = file_menu.addAction("&Open kernel file...")
        self.open_action.setShortcut(QtGui.QKeySequence.StandardKey.Open)
        self.export_action = file_menu.addAction("&Export heatmap...")
        self.export_action.setShortcut(QtGui.QKeySequence("Ctrl+E"))
        file_menu.addSeparator()
        quit_action = file_menu.addAction("&Quit")
        quit_action.setShortcut(QtGui.QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        run_menu = menu.addMenu("&Run")
        self.run_action = run_menu.addAction("&Run")
        self.run_action.setShortcut(QtGui.QKeySequence("Ctrl+R"))
        self.cancel_action = run_menu.addAction("&Cancel")
        self.cancel_action.setShortcut(QtGui.QKeySequence(QtCore.Qt.Key.Key_Escape))
        self.cancel_action.setShortcutContext(QtCore.Qt.ShortcutContext.ApplicationShortcut)
        help_menu = menu.addMenu("&Help")
        about = help_menu.addAction("&About ThreadMap")
        about.triggered.connect(self.show_about)

    def _connect(self) -> None:
        self.controls.run_requested.connect(self._on_run_triggered)
        self.controls.open_file_requested.connect(self._on_open_file_triggered)
        self.controls.kernel_changed.connect(self._on_kernel_changed)
        self.run_action.triggered.connect(self._on_run_triggered)
        self.cancel_action.triggered.connect(self.controller.cancel)
        self.cancel_button.clicked.connect(self.controller.cancel)
        self.open_action.triggered.connect(self._on_open_file_triggered)
        self.export_action.triggered.connect(self._on_export_triggered)
        self.export_button.clicked.connect(self._on_export_triggered)
        self.map_combo.currentIndexChanged.connect(lambda _: self._show_current_map(False))
        self.writer_combo.currentIndexChanged.connect(lambda _: self._show_current_map(False))
        self.heatmap.hovered.connect(self._on_heatmap_hovered)
        self.controller.busy_changed.connect(self._on_busy_changed)
        self.controller.progress.connect(self._on_progress)
        self.controller.run_finished.connect(self._on_run_finished)
        self.controller.failed.connect(self._on_failed)
        self.controller.cancelled.connect(self._on_cancelled)
        self.controller.sweep_cell.connect(self._on_sweep_cell)
        self.controller.sweep_finished.connect(self._on_sweep_finished)
        self.sweep_view.run_requested.connect(self._on_sweep_triggered)
        self.sweep_view.cell_opened.connect(self._on_sweep_cell_opened)
        self.sweep_view.export_sheet_requested.connect(self._on_export_sheet_triggered)
        self.sweep_view.export_folder_requested.connect(self._on_export_folder_triggered)
        self.analysis.warp_map_requested.connect(lambda kind, _: self._select_map(kind))
        self.analysis.replay_changed.connect(lambda _: self._select_map("replay"))
        self.analysis.diff_requested.connect(self._on_diff_triggered)
        self.analysis.export_replay_requested.connect(self._on_export_replay_triggered)
        self.analysis.occupancy_settings_changed.connect(self._on_occupancy_settings_changed)

    # -- settings -------------------------------------------------------------------------

    def _load_settings(self) -> None:
        s = self.settings
        for path in s.kernel_files():
            try:
                names = kernel_names(path)
            except ThreadMapError:
                continue
            self.controls.add_kernel_file(path, names)
        request = s.request()
        if request is not None:
            self.controls.set_request(request)
        geometry = s.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            screen = QtGui.QGuiApplication.primaryScreen()
            room = screen.availableGeometry() if screen is not None else None
            self.resize(min(1400, room.width()) if room else 1400,
                        min(900, room.height()) if room else 900)
        blocks, threads = s.sweep_lists()
        if blocks:
            self.sweep_view.blocks_edit.setText(blocks)
        if threads:
            self.sweep_view.threads_edit.setText(threads)
        width, height = s.export_size()
        self.export_width.setValue(width)
        self.export_height.setValue(height)
        # Adding the saved kernel files announced their launches; what is
        # selected now may be a built-in kernel.
        self.statusBar().clearMessage()

    def save_settings(self) -> None:
        s = self.settings
        try:
            s.set_request(self.controls.request())
        except ThreadMapError:
            pass
        s.setValue("window/geometry", self.saveGeometry())
        s.set_sweep_lists(self.sweep_view.blocks_edit.text(), self.sweep_view.threads_edit.text())
        s.set_export_size(self.export_width.value(), self.export_height.value())
        s.set_kernel_files(self.controls.kernel_files)
        s.sync()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 (Qt API)
        self.save_settings()
        if self.controller.busy:
            # Cancel, and end any child process at once (a simulator or a kernel
            # file's run); the emulation stops within a chunk.
            self.controller.cancel()
            stop_child_processes()
            if not self.controller.wait(15000):
                # Never destroy a running QThread (Qt aborts the process).
                self.statusBar().showMessage("still finishing the current step (a compile "
                                             "or a GPU launch); close again in a moment")
                event.ignore()
                return
        super().closeEvent(event)

    # -- running ----------------------------------------------------------------------------

    def _checked_request(self, request: RunRequest) -> tuple[str, str] | None:
        """Check a request before it runs; show why not.  Returns (backend, why)."""
        try:
            backend, why = resolve_backend(request)
        except ThreadMapError as exc:
            self.show_error(str(exc))
            return None
        return backend, why

    def _on_run_triggered(self) -> None:
        if self.controller.busy:
            return
        self.controls.show_message("")
        try:
            request = self.controls.request()
        except ThreadMapError as exc:
            self.show_error(str(exc))
            return
        resolved = self._checked_request(request)
        if resolved is None:
            return
        if resolved[0] == "sim" and not self._simulator_ok(request.with_(backend="sim"), 1):
            return
        self.hide_error()
        self.statusBar().showMessage(f"running on {resolved[0]}: {resolved[1]}")
        self.controller.start_run(request, self.analysis.assumed_registers)

    def _simulator_ok(self, request: RunRequest, configurations: int) -> bool:
        seconds, has_barriers = simulator_estimate(request)
        seconds *= configurations
        if seconds <= SLOW_SIMULATOR_SECONDS:
            return True
        barriers = (" and each barrier makes a block's threads wait on each other"
                    if has_barriers else "")
        return self.confirm(
            "Slow simulator run",
            f"The CUDA simulator runs one Python thread per CUDA thread{barriers}: this "
            f"{'sweep' if configurations > 1 else 'run'} ({request.total_threads:,} threads"
            f"{' in its largest configuration' if configurations > 1 else ''}, "
            f"{request.m}x{request.k}x{request.n}) will take at least "
            f"{describe_seconds(seconds)}. You can cancel it at any time. Run it?")

    def _confirm_dialog(self, title: str, text: str) -> bool:
        answer = QtWidgets.QMessageBox.question(self, title, text)
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def _on_busy_changed(self, busy: bool) -> None:
        self.controls.run_button.setEnabled(not busy)
        self.run_action.setEnabled(not busy)
        self.sweep_view.run_button.setEnabled(not busy)
        self.cancel_action.setEnabled(busy)
        self.cancel_button.setVisible(busy)
        self.progress_bar.setVisible(busy)
        if busy:
            self.progress_bar.setValue(0)

    def _on_progress(self, fraction: float, message: str) -> None:
        self.progress_bar.setValue(int(1000 * max(0.0, min(1.0, fraction))))
        self.progress_bar.setFormat(f"{fraction:.0%}")
        self.statusBar().showMessage(message)

    def _on_run_finished(self, result: RunResult) -> None:
        self.add_result(result)
        self.statusBar().showMessage(f"done: {run_title(result)}", 10000)

    def _on_failed(self, message: str) -> None:
        self.show_error(message)
        self.statusBar().showMessage("the run failed; the previous results are still shown",
                                     10000)

    def _on_cancelled(self) -> None:
        self.statusBar().showMessage("cancelled; the previous results are still shown", 10000)

    def show_error(self, message: str, about_the_run: bool = True) -> None:
        """Show an error above the map; whatever was shown stays.  An error
        about the run is also named under the Run button, where it was
        asked for; others (an export) only once, above the map."""
        self.error_label.setText(message)
        self.error_label.show()
        self.controls.show_message(message.splitlines()[0] if message and about_the_run else "")

    def hide_error(self) -> None:
        self.error_label.hide()
        self.controls.show_message("")

    # -- results ------------------------------------------------------------------------------

    def add_result(self, result: RunResult) -> None:
        row = self.results.add(result)
        self.table.selectRow(row)  # shows it, through the table's current-row signal
        if self.current is not result:
            self.show_result(result)

    def _on_table_row_changed(self, current: QtCore.QModelIndex, _previous) -> None:
        if current.isValid():
            self.show_result(self.results.results[current.row()])

    def show_result(self, result: RunResult) -> None:
        reset = self.current is None or self.current.c.shape != result.c.shape
        self.current = result
        verdict = result.verdict
        colour = "#1a7f37" if verdict.passed else "#c62828"
        reasons = "".join(f"<li>{r}</li>" for r in verdict.reasons)
        self.verdict_label.setText(
            f"<b style='color:{colour}; font-size:14pt'>{verdict.word}</b> &nbsp; "
            f"{run_title(result)}<br>backend: {result.backend_note}; launch: "
            f"{result.request.launch_source}"
            + (f"; output: {result.output} ({result.output_reason})"
               if result.request.kernel_file else "")
            + (f"<ul style='margin:0'>{reasons}</ul>" if reasons else
               "<br>every element written once by one thread, no out-of-bounds access, "
               f"relative error {verdict.errors.rel_error:.2e} within tolerance "
               f"{verdict.errors.rel_tolerance:.2e}"))
        lines = [t.describe() for t in result.timings] + [f"note: {n}" for n in result.notes]
        if result.kernel_output:
            printed = result.kernel_output.splitlines()
            lines.append(f"kernel output ({len(printed):,} lines, from its instrumented launch "
                         "only):")
            lines += [f"| {line}" for line in printed[:KERNEL_OUTPUT_LINES]]
            if len(printed) > KERNEL_OUTPUT_LINES:
                lines.append(f"| ... {len(printed) - KERNEL_OUTPUT_LINES:,} more (export "
                             "the result for all of it)")
        self.details_label.setText("\n".join(lines))
        self.diff_pair = None
        self.analysis.show_result(result)
        if self.map_combo.currentData() in ANALYSIS_MAPS:
            self._select_map("count")
        self._show_current_map(reset)

    def _select_map(self, name: str) -> None:
        index = self.map_combo.findData(name)
        if self.map_combo.currentIndex() == index:
            self._show_current_map(False)
        else:
            self.map_combo.setCurrentIndex(index)

    def current_image(self):
        """The MapImage the map selector and the analysis panel ask for."""
        name = self.map_combo.currentData()
        if name in ("sectors", "ways", "lanes"):
            analysis = self.current.analysis
            if analysis is None:
                raise ThreadMapError(f"no per-warp figures for this run: "
                                     f"{self.current.analysis_note}")
            sites = {"sectors": analysis.coalescing, "ways": analysis.bank_conflicts,
                     "lanes": analysis.divergence}[name]
            if not sites:
                raise ThreadMapError({"sectors": "this run makes no access to A, B or C",
                                      "ways": "this kernel has no shared array",
                                      "lanes": "this kernel has no branch"}[name])
            return warp_map(self.current, name, self.analysis.selected_row(name))
        if name == "replay":
            return replay_map(self.current, self.analysis.replay_slider.value())
        if name == "diff":
            if self.diff_pair is None:
                raise ThreadMapError("select two runs in the results table (Ctrl+click), "
                                     "then Compare in the Diff tab")
            return diff_map(*self.diff_pair)
        return make_map(self.current, name, self.writer_combo.currentText())

    def _show_current_map(self, reset_view: bool = True) -> None:
        name = self.map_combo.currentData()
        self.writer_combo.setVisible(name == "writer")
        self.writer_label.setVisible(name == "writer")
        if self.current is None or name is None:
            return
        try:
            image = self.current_image()
        except ThreadMapError as exc:
            self.legend_label.setText(str(exc))
            return
        shown = self.diff_pair[0] if name == "diff" else self.current
        self.heatmap.show_map(shown, image, reset_view=reset_view)
        self.legend_label.setText(image.legend)
        # The hover text describes what is on screen now, never the previous run.
        self.hover_label.setText(self.heatmap.hover_text_now() or HOVER_PROMPT)

    def selected_results(self) -> list[RunResult]:
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.results.results[row] for row in rows]

    def _on_diff_triggered(self) -> None:
        chosen = self.selected_results()
        if len(chosen) != 2:
            self.show_error(f"select exactly two runs in the results table to compare "
                            f"({len(chosen)} selected)")
            return
        try:
            image = diff_map(*chosen)
        except ThreadMapError as exc:
            self.show_error(str(exc))
            return
        self.hide_error()
        self.diff_pair = (chosen[0], chosen[1])
        self.analysis.diff_label.setText(
            f"run {self.results.results.index(chosen[0]) + 1} vs run "
            f"{self.results.results.index(chosen[1]) + 1}: {image.context[1].summary()}")
        self._select_map("diff")

    def _on_occupancy_settings_changed(self) -> None:
        self.analysis.show_result(self.current)
        self.sweep_view.assumed_registers = self.analysis.assumed_registers
        self.sweep_view.redraw()

    def _on_export_replay_triggered(self) -> None:
        if self.current is None:
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Export the replay frames to a folder", self.settings.dialog_folder("export"))
        if not folder:
            return
        self.settings.remember_dialog_folder("export", folder)
        dialog = QtWidgets.QProgressDialog("Exporting the replay frames...", "Stop", 0,
                                           len(replay_iterations(self.current)), self)
        dialog.setWindowModality(QtCore.Qt.WindowModality.WindowModal)

        def progress(done: int, total: int) -> bool:
            dialog.setValue(done)
            QtWidgets.QApplication.processEvents()  # frames are drawn here; keep responsive
            return not dialog.wasCanceled()

        self._guarded(lambda: export_replay(
            self.current, folder, (self.export_width.value(), self.export_height.value()),
            progress=progress)[-1])
        dialog.close()

    def _on_heatmap_hovered(self, text: str) -> None:
        if text:
            self.hover_label.setText(text)

    # -- kernel files ---------------------------------------------------------------------------

    def _on_open_file_triggered(self) -> None:
        previous = self.controls.kernel_choice()
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open a numba CUDA kernel file", self.settings.dialog_folder("kernel"),
            "Python files (*.py)")
        if not path:
            self.controls.select_previous_kernel(previous)
            return
        self.settings.remember_dialog_folder("kernel", path)
        self.open_kernel_file(path)

    def open_kernel_file(self, path: str) -> bool:
        """Add a kernel file (parsed, never run); show why not if it has no kernel."""
        try:
            names = kernel_names(path)
        except ThreadMapError as exc:
            self.show_error(str(exc))
            return False
        self.hide_error()
        self.controls.add_kernel_file(path, names)
        return True

    def _on_kernel_changed(self) -> None:
        """A kernel file's own literal launch (kernel[grid, block](...)) becomes the launch."""
        kind, path = self.controls.kernel_choice()
        if kind != "file":
            return
        try:
            chosen = default_launch(self.controls.request())
        except ThreadMapError:
            return
        self.controls.apply_launch(chosen.grid, chosen.block, chosen.launch_source)
        self.statusBar().showMessage(
            f"launch {format_dims(chosen.grid)} x {format_dims(chosen.block)}: "
            f"{chosen.launch_source}", 10000)

    # -- export ---------------------------------------------------------------------------------

    def export_current(self, path: str | Path) -> Path:
        """Export the shown map (no dialog: the dialog only picks the name)."""
        if self.current is None:
            raise ThreadMapError("nothing to export yet: run something first")
        image = self.current_image()
        shown = self.diff_pair[0] if image.name == "diff" else self.current
        return export_heatmap(shown, path, image=image,
                              size=(self.export_width.value(), self.export_height.value()))

    def _on_export_triggered(self) -> None:
        if self.current is None:
            self.show_error("nothing to export yet: run something first")
            return
        r = self.current.request
        suggestion = f"{r.kernel_label}_{r.m}x{r.k}x{r.n}_{self.map_combo.currentData()}.png"
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export heatmap",
            str(Path(self.settings.dialog_folder("export")) / suggestion.replace(":", "_")),
            "PNG image (*.png);;SVG image (*.svg)")
        if not path:
            return
        self.settings.remember_dialog_folder("export", path)
        if not Path(path).suffix:
            path += ".png"
        try:
            written = self.export_current(path)
        except (ThreadMapError, ValueError, OSError) as exc:
            self.show_error(f"export failed: {exc}", about_the_run=False)
            return
        self.statusBar().showMessage(f"exported {written}", 10000)

    # -- sweep ----------------------------------------------------------------------------------

    def sweep_lists(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (parse_list(self.sweep_view.blocks_edit.text(), "blocks"),
                parse_list(self.sweep_view.threads_edit.text(), "threads per block"))

    def _on_sweep_triggered(self) -> None:
        if self.controller.busy:
            return
        try:
            base = self.controls.request()
            blocks, threads = self.sweep_lists()
            requests = sweep_requests(base, blocks, threads)
        except ThreadMapError as exc:
            self.show_error(str(exc))
            return
        resolved = self._checked_request(requests[-1])
        if resolved is None:
            return
        largest = max(requests, key=lambda r: r.total_threads)
        if resolved[0] == "sim" and not self._simulator_ok(largest.with_(backend="sim"),
                                                            len(requests)):
            return
        self.hide_error()
        self.sweep_cells = []
        self.sweep_view.begin(blocks, threads)
        self.tabs.setCurrentWidget(self.sweep_view)
        self.controller.start_sweep(base, blocks, threads, self.analysis.assumed_registers)

    def _on_sweep_cell(self, cell: SweepCell) -> None:
        self.sweep_cells.append(cell)
        self.sweep_view.add_cell(cell)

    def _on_sweep_finished(self) -> None:
        self.statusBar().showMessage(f"sweep done: {len(self.sweep_cells)} configurations", 10000)

    def _on_sweep_cell_opened(self, cell: SweepCell) -> None:
        if cell.result is None:
            return
        if cell.result not in self.results.results:
            self.add_result(cell.result)
        else:
            self.table.selectRow(self.results.results.index(cell.result))
        self.tabs.setCurrentIndex(0)

    def _on_export_sheet_triggered(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export the sweep as one image",
            str(Path(self.settings.dialog_folder("export")) / "sweep.png"), "PNG image (*.png)")
        if path:
            self.settings.remember_dialog_folder("export", path)
            self._guarded(lambda: export_contact_sheet(self.sweep_cells, path,
                                                       self.sweep_view.map_name))

    def _on_export_folder_triggered(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Export the sweep to a folder", self.settings.dialog_folder("export"))
        if folder:
            self.settings.remember_dialog_folder("export", folder)
            self._guarded(lambda: self.export_sweep_folder(folder))

    def export_sweep_folder(self, folder: str | Path) -> None:
        """summary.csv, summary.json, one .npz and .png per configuration."""
        map_name = self.sweep_view.map_name
        write_sweep(self.sweep_cells, Path(folder),
                    image_writer=lambda result, path: export_heatmap(result, path, map_name,
                                                                     (800, 600)))
        export_contact_sheet(self.sweep_cells, Path(folder) / "contact_sheet.png", map_name)

    def _guarded(self, action) -> None:
        try:
            result = action()
        except (ThreadMapError, ValueError, OSError) as exc:
            self.show_error(f"export failed: {exc}", about_the_run=False)
            return
        self.statusBar().showMessage(f"exported {result or ''}", 10000)

    # -- about ------------------------------------------------------------------------------------

    def show_about(self) -> None:
        QtWidgets.QMessageBox.about(self, "About ThreadMap", about_text())


def about_text() -> str:
    """ThreadMap's version and those of the libraries it stands on."""
    from importlib.metadata import PackageNotFoundError, version

    def v(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    import numpy
    import PySide6

    from .qt import pg
    lines = [
        f"<b>ThreadMap {__version__}</b>: which CUDA thread computes which element of C = A @ B.",
        f"numba {v('numba')}<br>numba-cuda {v('numba-cuda')}<br>numpy {numpy.__version__}"
        f"<br>PySide6 {PySide6.__version__} (Qt {QtCore.qVersion()})<br>pyqtgraph {pg.__version__}"
        f"<br>Python {sys.version.split()[0]}",
        gpu_status(),
    ]
    return "<p>" + "</p><p>".join(lines) + "</p>"


def run_app(argv: list[str] | None = None) -> int:
    """Start the GUI; returns the exit status."""
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(argv or sys.argv)
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setWindowIcon(QtGui.QIcon(str(resources.path(resources.ICON))))
    window = MainWindow()
    window.show()
    return app.exec()
