"""ThreadMap's main window: assembles the session, the controller, the views
and the actions, and wires them; it holds no state of its own and does no work."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import resources
from kernels import (
    ThreadMapError,
    __version__,
    compile_files_in_children,
    default_launch,
    gpu_available,
    gpu_status,
    kernel_names,
    seed_tour,
    start_typist,
)

from .actions import (
    CancelAction,
    ExportHeatmapAction,
    ExportReplayAction,
    ExportSweepFolderAction,
    ExportSweepSheetAction,
    FollowFileAction,
    HuntAction,
    OpenKernelFileAction,
    RunAction,
    SweepAction,
)
from .controllers.session_controller import SessionController
from .controllers.tour_controller import TourController
from .glossary_tips import glossary_html
from .glossary_tips import install as install_glossary_tips
from .gui_gc import collect_on_gui_thread, freeze_what_lasts
from .models.session import Session
from .qt import QtCore, QtGui, QtWidgets
from .settings import Settings
from .views.controls import ControlPanel
from .views.maps_view import MapsView
from .views.results_table import ResultsView
from .views.status_bar import StatusBar
from .views.sweep_view import SweepView
from .views.tour_window import TourWindow

APP_NAME = "ThreadMap"


def backend_availability() -> dict[str, str | None]:
    """None for usable backends, else why not (shown as the item's tooltip)."""
    return {"auto": None, "cpu": None, "sim": None,
            "gpu": None if gpu_available() else gpu_status()}


class MainWindow(QtWidgets.QMainWindow):
    """The app's one window."""

    #: the window accepted its close: its runs and child processes are ended
    closed = QtCore.Signal()

    def __init__(self, synchronous: bool | None = None, settings: Settings | None = None,
                 confirm=None):
        super().__init__()
        collect_on_gui_thread()  # runs work on worker threads: see gui_gc.py
        self.settings = settings or Settings()
        self.setWindowTitle(f"{APP_NAME} - which CUDA thread computes which element")
        self.setWindowIcon(QtGui.QIcon(str(resources.path(resources.ICON))))
        if synchronous is None:
            synchronous = os.environ.get("THREADMAP_SYNCHRONOUS") == "1"
        budget_mb = self.settings.memory_budget_mb()
        self.session = Session(self, memory_budget=budget_mb and budget_mb << 20,
                               synchronous=synchronous)
        self.controller = SessionController(self.session, confirm or self._confirm_dialog,
                                            synchronous=synchronous, parent=self)

        self.controls = ControlPanel(backend_availability())
        self.maps_view = MapsView(self.session)
        self.sweep_view = SweepView(self.session)
        self.results_view = ResultsView(self.session)
        self.status = StatusBar(self.session, gpu_status())
        self.setStatusBar(self.status)
        self._dock_controls()
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(self.maps_view, "Maps")
        self.tabs.addTab(self.sweep_view, "Sweep")
        self.setCentralWidget(self.tabs)
        self._dock_results()
        self._build_actions()
        self._tour: TourWindow | None = None
        self._glossary: QtWidgets.QDialog | None = None
        install_glossary_tips(QtWidgets.QApplication.instance())
        self.tour_controller = TourController(
            self.session, self.controls, self.maps_view, self.run_action.trigger,
            lambda: self.tabs.setCurrentWidget(self.maps_view), self)
        self._connect()
        self._load_settings()
        freeze_what_lasts()
        self.setAcceptDrops(True)  # a .py file dropped on the window opens it

    # -- assembly ------------------------------------------------------------------------

    def _dock_controls(self) -> None:
        dock = QtWidgets.QDockWidget("Run", self)
        dock.setObjectName("controls-dock")
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
        self._controls_scroll = scroll
        self._fit_controls(self.controls.widest_minimum())
        self.controls.rows_changed.connect(self._fit_controls)
        dock.setWidget(scroll)
        dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        self._controls_dock = (dock, scroll)

    def _fit_controls(self, width: int | None = None) -> None:
        """The Run panel as wide as its rows need now (never narrower than
        before: the window does not jump when the rows change back)."""
        scroll = self._controls_scroll
        self.controls.ensurePolished()
        needed = (width or self.controls.minimumSizeHint().width()) + 2 * scroll.frameWidth() \
            + scroll.verticalScrollBar().sizeHint().width() + 4
        if needed > scroll.minimumWidth():
            scroll.setMinimumWidth(needed)

    def _dock_results(self) -> None:
        dock = QtWidgets.QDockWidget("Results", self)
        dock.setObjectName("results-dock")
        dock.setWidget(self.results_view)
        dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        controls_dock, scroll = self._controls_dock
        # A few rows by default, once the window has its size: the map is the
        # largest thing on screen.
        QtCore.QTimer.singleShot(0, lambda: (
            self.resizeDocks([dock], [5 * self.results_view.verticalHeader().defaultSectionSize()],
                             QtCore.Qt.Orientation.Vertical),
            self.resizeDocks([controls_dock], [scroll.minimumWidth()],
                             QtCore.Qt.Orientation.Horizontal)))

    def _build_actions(self) -> None:
        c, s = self.controller, self.session
        self.run_action = RunAction(c, self.controls, self)
        self.sweep_action = SweepAction(c, self.controls, self.sweep_view, self)
        self.cancel_action = CancelAction(c, self)
        self.hunt_action = HuntAction(c, self.controls, self)
        self.follow_action = FollowFileAction(c, self)
        self.open_action = OpenKernelFileAction(c, self.controls, self.settings, self)
        self.export_action = ExportHeatmapAction(s, self.maps_view, self.settings, self)
        self.export_sheet_action = ExportSweepSheetAction(s, self.sweep_view, self.settings, self)
        self.export_folder_action = ExportSweepFolderAction(s, self.sweep_view, self.settings,
                                                            self, self.maps_view)
        self.export_replay_action = ExportReplayAction(s, self.maps_view, self.settings, self)
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        file_menu.addAction(self.open_action)
        file_menu.addAction(self.export_action)
        file_menu.addSeparator()
        quit_action = file_menu.addAction("&Quit")
        quit_action.setShortcut(QtGui.QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        run_menu = menu.addMenu("&Run")
        run_menu.addAction(self.run_action)
        run_menu.addAction(self.sweep_action)
        run_menu.addAction(self.hunt_action)
        run_menu.addAction(self.cancel_action)
        run_menu.addAction(self.follow_action)
        run_menu.addSeparator()
        budget = run_menu.addAction("&Memory for results...")
        budget.triggered.connect(self._ask_memory_budget)
        help_menu = menu.addMenu("&Help")
        start_here = help_menu.addAction("&Start here: the forum question, step by step")
        start_here.triggered.connect(self.show_tour)
        glossary = help_menu.addAction("&Glossary")
        glossary.triggered.connect(self.show_glossary)
        help_menu.addSeparator()
        about = help_menu.addAction("&About ThreadMap")
        about.triggered.connect(self.show_about)

    def _connect(self) -> None:
        c, s, controls = self.controller, self.session, self.controls
        controls.run_requested.connect(self.run_action.trigger)
        controls.hunt_requested.connect(self.hunt_action.trigger)
        controls.open_file_requested.connect(self.open_action.trigger)
        controls.kernel_changed.connect(self._apply_file_launch)
        s.kernel_file_opened.connect(controls.add_kernel_file)
        s.kernel_file_saved.connect(controls.update_kernel_names)
        # An error about the run is also named under the Run button, where it
        # was asked for; others (an export) only once, above the map.
        s.error_raised.connect(lambda message, about_the_run: controls.show_message(
            message.splitlines()[0] if message and about_the_run else ""))
        s.error_cleared.connect(lambda: controls.show_message(""))
        self.status.cancel_button.clicked.connect(self.cancel_action.trigger)
        c.busy_changed.connect(self._on_busy_changed)
        c.progress.connect(self.status.show_progress)
        self.maps_view.export_requested.connect(self.export_action.trigger)
        self.maps_view.analysis.diff_requested.connect(lambda: c.compare(s.selection))
        self.maps_view.analysis.export_replay_requested.connect(
            self.export_replay_action.trigger)
        self.sweep_view.run_requested.connect(self.sweep_action.trigger)
        self.sweep_view.cell_opened.connect(self._open_sweep_cell)
        self.sweep_view.export_sheet_requested.connect(self.export_sheet_action.trigger)
        self.sweep_view.export_folder_requested.connect(self.export_folder_action.trigger)
        # (queued: the tab's first layout and paint come in an event of their own,
        # after the matrix's new cells, not in the same stall)
        s.sweep_started.connect(lambda *_: QtCore.QTimer.singleShot(
            0, lambda: self.tabs.setCurrentWidget(self.sweep_view)))
        s.sweep_error_raised.connect(self._show_sweep_error)
        s.current_changed.connect(self._follow_shown_run)
        controls.kernel_changed.connect(self._apply_sweep_defaults)

    def _on_busy_changed(self, busy: bool) -> None:
        if not busy:
            self.sweep_view.finish_running()
        for button in (self.controls.run_button, self.controls.hunt_button,
                       self.sweep_view.run_button):
            button.setEnabled(not busy)
        for action in (self.run_action, self.sweep_action, self.hunt_action):
            action.setEnabled(not busy)
        self.status.set_busy(busy)

    def _apply_file_launch(self) -> None:
        """A kernel file's own literal launch (kernel[grid, block](...)) becomes the launch."""
        kind, _ = self.controls.kernel_choice()
        if kind != "file" or self.controls.showing_request:
            return
        try:
            request = self.controls.request(as_described=False)
        except ThreadMapError:
            return
        described, needs_arguments = self.controller.file_arguments(request)
        if needs_arguments:  # (no launch to guess before its arrays are described)
            self.controls.describe("", "")
            return
        if described is not None:
            self.controls.apply_shape(described)
            request = described
        elif self.controls.described:
            self.controls.apply_shape(request)  # (back to C = A @ B)
        chosen = self.controller.file_launch(request)
        if chosen is not None:
            self.controls.apply_launch(chosen.grid, chosen.block, chosen.launch_source)

    def _follow_shown_run(self, result) -> None:
        """The Run panel shows the request of the run shown (a row of the
        results table, a sweep's cell), its launch named as that run's: Run
        then runs it again."""
        if result is None or not self.session.run_panel_follows:
            return  # (a hunt's failing case: the user's own request stays)
        asked = result.asked_request  # (auto stays auto: it was saved as cpu)
        try:
            panel = self.controls.request()
        except ThreadMapError:
            panel = None  # (text that does not read yet: the user's too)
        if panel == asked:
            return
        rerun_of = self.session.rerun_of
        if rerun_of is not None and panel != rerun_of:
            return  # (a save reruns the shown run; what was typed since stays)
        self.controls.set_request(asked)

    def _show_sweep_error(self, message: str) -> None:
        self.sweep_view.show_error(message)
        self.tabs.setCurrentWidget(self.sweep_view)

    def _apply_sweep_defaults(self) -> None:
        """A 2-D kernel's sweep defaults are 2-D (and its own block, where its
        tile fixes one)."""
        try:
            defaults = self.controller.sweep_defaults(self.controls.request())
        except ThreadMapError:
            return
        self.sweep_view.set_defaults(*defaults)

    def _open_sweep_cell(self, cell) -> None:
        self.controller.open_sweep_cell(cell)
        if cell.result is not None:
            self.tabs.setCurrentWidget(self.maps_view)

    @staticmethod
    def _dropped_python_files(event) -> list[str]:
        mime = event.mimeData()
        if mime is None or not mime.hasUrls():
            return []
        return [url.toLocalFile() for url in mime.urls()
                if url.isLocalFile() and url.toLocalFile().endswith(".py")]

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 (Qt API)
        if self._dropped_python_files(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 (Qt API)
        files = self._dropped_python_files(event)
        if not files:
            event.ignore()
            return
        event.acceptProposedAction()
        for path in files:
            self.controller.open_kernel_file(path)

    def _ask_memory_budget(self) -> None:
        """How many MiB of maps stay in memory; older results go to disk past it."""
        now = self.session.memory_budget >> 20
        megabytes, ok = QtWidgets.QInputDialog.getInt(
            self, "Memory for results",
            f"MiB of maps kept in memory (now {self.session.bytes_in_memory >> 20:,} MiB used); "
            "past it the least recently shown runs go to disk and come back when selected:",
            now, 64, 1 << 22, 256)
        if ok:
            self.settings.set_memory_budget_mb(megabytes)
            self.session.memory_budget = megabytes << 20
            self.session.keep_within_budget()

    def _confirm_dialog(self, title: str, text: str) -> bool:
        answer = QtWidgets.QMessageBox.question(self, title, text)
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    # -- settings -------------------------------------------------------------------------

    def _load_settings(self) -> None:
        s = self.settings
        for path in s.kernel_files():
            try:
                names = kernel_names(path, follow_links=False)
            except ThreadMapError:
                continue
            self.controls.add_kernel_file(path, names)
        request = s.request()
        gone = None
        if request is not None and request.kernel_file and \
                str(Path(request.kernel_file).resolve()) not in self.controls.kernel_files:
            # The file is gone (moved, deleted, unreadable): the built-in
            # kernel on its own launch, not the file's under its label; the
            # shape, inputs and backend as saved.
            gone = request.kernel_file
            request = default_launch(request.with_(kernel_file=None, kernel="grid-stride",
                                                   arguments=(), reference=None, scalars=()))
        instead = None
        if request is not None:
            self.controls.set_request(request)
            if request.kernel_file:
                instead = self._restore_kernel_file(request, s.described())
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
        self.maps_view.set_export_size(*s.export_size())
        split = s.value("window/map-and-analysis")
        if split is not None:
            self.maps_view.splitter.restoreState(split)
        # Adding the saved kernel files announced their launches; what is
        # selected now may be a built-in kernel.
        self.status.clearMessage()
        if gone is not None:
            self.status.showMessage(f"{Path(gone).name}, the kernel file last used, cannot be "
                                    "read now: grid-stride is chosen instead")
        elif instead is not None:
            self.status.showMessage(instead)

    def _restore_kernel_file(self, saved, described: tuple[str, str] | None) -> str | None:
        """The kernel file's part of the saved request, on the file as it reads
        now: a kernel run as it is gets its Arguments typed in the app, else
        the file's THREADMAP_ARGS and launch of today, and a launch the user
        chose stays.  A kernel no longer in the file gives way to the first
        one, said in the returned words."""
        controls = self.controls
        chosen = controls.function_combo.currentText()
        if saved.kernel and chosen != saved.kernel:
            controls.scalars_edit.clear()  # (the kernel gone's; the file's own follow)
            self._apply_file_launch()
            return (f"{saved.kernel} is no longer in {Path(saved.kernel_file).name}: "
                    f"{chosen} is chosen instead")
        if described is None:
            return None
        typed, reference = described
        if typed:
            controls.describe(typed, reference)
        else:
            self._apply_file_launch()
            if not controls.described:
                return None  # (the file describes no arguments now: C = A @ B again)
            controls.describe(controls.arguments_edit.text(), reference)
        if typed or not controls.launch_from_the_file(saved.launch_source):
            # (applied again once the Arguments are shown: its source holds
            # for the shape it was given for)
            controls.apply_launch(saved.grid, saved.block, saved.launch_source)
        return None

    def save_settings(self) -> None:
        s = self.settings
        try:
            self.controls.request()  # (a request that does not read: the last one kept)
            s.set_request(self.controls.request(as_described=False),
                          self.controls.described_to_keep())
        except ThreadMapError:
            pass
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/map-and-analysis", self.maps_view.splitter.saveState())
        s.set_sweep_lists(self.sweep_view.blocks_edit.text(), self.sweep_view.threads_edit.text())
        s.set_export_size(*self.maps_view.export_size)
        s.set_kernel_files(self.controls.kernel_files)
        s.sync()

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        # The Run panel's rows measured again once shown: measured before,
        # with the style's sizes not yet in force, a kernel file restarted as
        # it is was cut off by 3 px on the right.
        self._fit_controls()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self.save_settings()
        if not self.controller.shut_down(15000):
            # Never destroy a running QThread (Qt aborts the process).
            self.status.showMessage("still finishing the current step (a compile "
                                    "or a GPU launch); close again in a moment")
            event.ignore()
            return
        self.sweep_view.shut_down()
        self.session.close()
        self.export_action.shut_down()
        super().closeEvent(event)
        self.closed.emit()

    # -- Start here -----------------------------------------------------------------------

    def show_tour(self) -> TourWindow:
        """The Start here walk, beside the window (made once, kept)."""
        if self._tour is None:
            self._tour = TourWindow(seed_tour(), self)
            self._tour.step_requested.connect(self.tour_controller.show_step)
        self._tour.show()
        self._tour.activateWindow()
        return self._tour

    def show_glossary(self) -> QtWidgets.QDialog:
        """Help > Glossary: every term the app uses (each also on hover where it appears)."""
        if self._glossary is None:
            dialog = QtWidgets.QDialog(self)
            dialog.setObjectName("glossary")
            dialog.setWindowTitle("Glossary")
            text = QtWidgets.QTextBrowser()
            text.setHtml(glossary_html())
            QtWidgets.QVBoxLayout(dialog).addWidget(text)
            dialog.resize(620, 560)
            self._glossary = dialog
        self._glossary.show()
        return self._glossary

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


def show_result_window(result) -> None:
    """A window on ``result`` (from the Python API: ``ThreadMapResult.show``);
    returns when it is closed.  A local event loop waits for it: quitting the
    application's own loop would stop every later one in this process (a
    notebook's, a test's)."""
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    window = MainWindow()
    window.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose, True)
    window.session.add_result(result)
    loop = QtCore.QEventLoop()
    window.destroyed.connect(loop.quit)
    window.show()
    loop.exec()
    del app


#: How long after the window shows the typist starts (see run_app).
TYPIST_DELAY_MS = 2000


def run_app(argv: list[str] | None = None, open_file: str | None = None) -> int:
    """Start the GUI (on ``open_file``'s kernels when given); returns the exit status."""
    # (the files it opens are untrusted: numba's work on them in a child,
    # the typist, started once the window is up: its import of numba, half a
    # second of a core, had competed with the window's own start)
    compile_files_in_children(start_typist=False)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(argv or sys.argv)
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setWindowIcon(QtGui.QIcon(str(resources.path(resources.ICON))))
    window = MainWindow()
    # Quit (and the window's close button) ends the process, whatever other
    # top-level widget (an offscreen export figure) Qt would still wait for.
    window.closed.connect(app.quit)
    if open_file is not None:
        window.controller.open_kernel_file(open_file)
    window.show()
    QtCore.QTimer.singleShot(TYPIST_DELAY_MS, start_typist)
    if not window.settings.value("tour/offered", False, type=bool):
        # the first start: the seed's story, beside the window
        window.settings.setValue("tour/offered", True)
        QtCore.QTimer.singleShot(0, window.show_tour)
    return app.exec()
