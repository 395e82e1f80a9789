"""What the user can do, one small QAction each (in the manner of silx's
``gui/plot/actions``): a menu item, a shortcut and a button share one action.

An action reads what it needs from the views it was given (the request in
the controls, the lists of the sweep tab), asks the controller to do it, and
leaves errors to the session; none reaches into another view's insides.
Dialogs only choose names: each export action has a dialog-free
``export_to`` that the tests and the command line share.
"""
from __future__ import annotations

from pathlib import Path

from kernels import OutputFolder, RunRequest, ThreadMapError, write_sweep

from .controllers.session_controller import SessionController
from .export import (
    HeatmapExporter,
    export_contact_sheet,
    export_file_name,
    export_replay,
    export_sweep_images,
    replay_iterations,
)
from .models.session import Session
from .qt import QtCore, QtGui, QtWidgets
from .settings import Settings
from .views.controls import ControlPanel
from .views.map_painter import OFF_THREAD_ELEMENTS, MapPainter
from .views.maps_view import MapsView
from .views.sweep_view import SweepView

#: what an export can fail with: bad sizes, unwritable paths, nothing to export
EXPORT_ERRORS = (ThreadMapError, ValueError, OSError)


class _Action(QtGui.QAction):
    """An action that calls :meth:`act` when triggered."""

    def __init__(self, text: str, parent: QtCore.QObject, shortcut=None, tip: str = ""):
        super().__init__(text, parent)
        if shortcut is not None:
            self.setShortcut(QtGui.QKeySequence(shortcut))
        if tip:
            self.setToolTip(tip)
        self.triggered.connect(lambda _checked=False: self.act())

    def act(self) -> None:
        raise NotImplementedError


def _request_or_error(controls: ControlPanel, session: Session) -> RunRequest | None:
    try:
        return controls.request()
    except ThreadMapError as exc:
        session.raise_error(str(exc))
        return None


class RunAction(_Action):
    """Run the request in the controls (Ctrl+R)."""

    def __init__(self, controller: SessionController, controls: ControlPanel, parent):
        super().__init__("&Run", parent, "Ctrl+R")
        self.controller, self.controls = controller, controls

    def act(self) -> None:
        if self.controller.busy:
            return
        request = _request_or_error(self.controls, self.controller.session)
        if request is not None:
            self.controller.run(request)


class FollowFileAction(QtGui.QAction):
    """Follow the kernel file: run the shown request again when its file is
    saved in an editor (a toggle, on by default)."""

    def __init__(self, controller: SessionController, parent):
        super().__init__("&Follow the kernel file", parent)
        self.setCheckable(True)
        self.setChecked(controller.follow)
        self.setToolTip("when the shown kernel file is saved, run it again and add the new "
                        "result beside the old one")
        self.toggled.connect(controller.set_follow)


class SweepAction(_Action):
    """Run the request in the controls over the sweep tab's lists."""

    def __init__(self, controller: SessionController, controls: ControlPanel,
                 sweep_view: SweepView, parent):
        super().__init__("Run &sweep", parent)
        self.controller, self.controls, self.sweep_view = controller, controls, sweep_view

    def act(self) -> None:
        if self.controller.busy:
            return
        session = self.controller.session
        request = _request_or_error(self.controls, session)
        if request is None:
            return
        try:
            grids, blocks = self.sweep_view.grids_and_blocks()
        except ThreadMapError as exc:
            session.raise_sweep_error(str(exc))
            return
        self.controller.sweep(request, grids, blocks)


class HuntAction(_Action):
    """Search for the smallest shape and launch where the chosen kernel fails."""

    def __init__(self, controller: SessionController, controls: ControlPanel, parent,
                 budget: float = 60.0):
        super().__init__("&Find a failing case", parent, "Ctrl+F",
                         "shapes and launches that break index arithmetic, smallest first")
        self.controller, self.controls, self.budget = controller, controls, budget

    def act(self) -> None:
        if self.controller.busy:
            return
        request = _request_or_error(self.controls, self.controller.session)
        if request is not None:
            self.controller.hunt(request, self.budget)


class CancelAction(_Action):
    """Cancel the run or sweep in progress (Esc, anywhere in the app)."""

    def __init__(self, controller: SessionController, parent):
        super().__init__("&Cancel", parent, QtCore.Qt.Key.Key_Escape)
        self.setShortcutContext(QtCore.Qt.ShortcutContext.ApplicationShortcut)
        self.controller = controller
        self.setEnabled(False)
        controller.busy_changed.connect(self.setEnabled)

    def act(self) -> None:
        self.controller.cancel()


class OpenKernelFileAction(_Action):
    """Add a kernel file through a dialog (Ctrl+O)."""

    def __init__(self, controller: SessionController, controls: ControlPanel,
                 settings: Settings, parent: QtWidgets.QWidget):
        super().__init__("&Open kernel file...", parent, QtGui.QKeySequence.StandardKey.Open)
        self.controller, self.controls, self.settings = controller, controls, settings
        self.window = parent

    def act(self) -> None:
        previous = self.controls.kernel_choice()
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self.window, "Open a numba CUDA kernel file", self.settings.dialog_folder("kernel"),
            "Python files (*.py)")
        if not path:
            self.controls.select_previous_kernel(previous)
            return
        self.settings.remember_dialog_folder("kernel", path)
        self.controller.open_kernel_file(path)


class ExportHeatmapAction(_Action):
    """Export the map on screen to PNG or SVG (Ctrl+E).  A large map's
    colours are made off the GUI thread first, as on screen."""

    def __init__(self, session: Session, maps_view: MapsView, settings: Settings,
                 parent: QtWidgets.QWidget):
        super().__init__("&Export heatmap...", parent, "Ctrl+E",
                         "PNG or SVG, with title and colour bar")
        self.session, self.maps_view, self.settings = session, maps_view, settings
        self.window = parent
        self._painter = MapPainter(self)
        self._painter.painted.connect(self._on_painted)
        #: (painter's request, path, result, size) of an export on its way
        self._pending: tuple | None = None
        # One offscreen figure, built with the window and kept: building it is
        # ~30 ms of pyqtgraph set-up on the GUI thread (80-90 ms on a busy
        # machine), which the first export had stalled the window for.
        self._figure = HeatmapExporter(maps_view.export_size)

    @property
    def exporting(self) -> bool:
        return self._pending is not None

    def shut_down(self) -> None:
        """The window closes: its offscreen figure goes with it."""
        self._figure.close()

    def export_to(self, path: str | Path, background: bool = False) -> Path | None:
        """Export the shown map to ``path`` (no dialog).  With ``background``,
        a large map is made off the GUI thread and written when it is ready
        (None is returned; the session says when it is written)."""
        shown = self.session.shown_result()
        if shown is None:
            raise ThreadMapError("nothing to export yet: run something first")
        size = self.maps_view.export_size
        if background and shown.c.size > OFF_THREAD_ELEMENTS and \
                Path(path).suffix.lower() != ".svg":
            number = self._painter.paint(self.session.image_maker())
            self._pending = (number, Path(path), shown, size)
            self.session.tell(f"exporting {path}...", 0)
            return None
        return self._write(shown, path, self.session.current_image(), None, size)

    def _write(self, shown, path, image, rgba, size) -> Path:
        self._figure.size = size
        try:
            return self._figure.write(shown, path, image=image, rgba=rgba)
        finally:
            self._figure.plot.image.clear()  # (the figure keeps no map between exports)

    def _on_painted(self, number: int, image, rgba) -> None:
        if self._pending is None or number != self._pending[0]:
            return
        _, path, shown, size = self._pending
        self._pending = None
        if image is None:
            self.session.raise_error(f"export failed: {rgba}", about_the_run=False)
            return
        _guarded(self.session, lambda: self._write(shown, path, image, rgba, size))

    def act(self) -> None:
        if self.session.current is None:
            self.session.raise_error("nothing to export yet: run something first", False)
            return
        suggestion = export_file_name(self.session.current.request, self.session.map_name)
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.window, "Export heatmap",
            str(Path(self.settings.dialog_folder("export")) / suggestion),
            "PNG image (*.png);;SVG image (*.svg)")
        if not path:
            return
        self.settings.remember_dialog_folder("export", path)
        if not Path(path).suffix:
            path += ".png"
        _guarded(self.session, lambda: self.export_to(path, background=True))


class ExportSweepSheetAction(_Action):
    """The sweep matrix as one PNG."""

    def __init__(self, session: Session, sweep_view: SweepView, settings: Settings,
                 parent: QtWidgets.QWidget):
        super().__init__("Export contact sheet...", parent)
        self.session, self.sweep_view, self.settings = session, sweep_view, settings
        self.window = parent

    def export_to(self, path: str | Path) -> Path:
        return export_contact_sheet(self.session.sweep_cells, path, self.sweep_view.map_name)

    def act(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.window, "Export the sweep as one image",
            str(Path(self.settings.dialog_folder("export")) / "sweep.png"), "PNG image (*.png)")
        if path:
            self.settings.remember_dialog_folder("export", path)
            _guarded(self.session, lambda: self.export_to(path))


class ExportSweepFolderAction(_Action):
    """summary.csv, summary.json, one .npz and .png per configuration (at the
    export size chosen in the maps view), and the sheet."""

    def __init__(self, session: Session, sweep_view: SweepView, settings: Settings,
                 parent: QtWidgets.QWidget, maps_view: MapsView | None = None):
        super().__init__("Export all to folder...", parent)
        self.session, self.sweep_view, self.settings = session, sweep_view, settings
        self.window = parent
        # Where the user chooses the export size (the images had been 800 x 600
        # whatever size was chosen).
        self.maps_view = maps_view

    @property
    def export_size(self) -> tuple[int, int]:
        """The size the heatmap export uses: the maps view's, else the saved one."""
        if self.maps_view is not None:
            return self.maps_view.export_size
        return self.settings.export_size()

    def export_to(self, folder: str | Path) -> Path:
        folder = Path(folder)
        # (locked as a command's folder is: never two writers at once)
        with OutputFolder(folder, "the sweep's folder"):
            write_sweep(self.session.sweep_cells, folder)
            export_sweep_images(self.session.sweep_cells, folder, self.sweep_view.map_name,
                                self.export_size)
        return folder

    def act(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self.window, "Export the sweep to a folder", self.settings.dialog_folder("export"))
        if folder:
            self.settings.remember_dialog_folder("export", folder)
            _guarded(self.session, lambda: self.export_to(folder))


class ExportReplayAction(_Action):
    """The replay's frames (PNG) and an animated GIF, into a folder."""

    def __init__(self, session: Session, maps_view: MapsView, settings: Settings,
                 parent: QtWidgets.QWidget):
        super().__init__("Export replay frames...", parent)
        self.session, self.maps_view, self.settings = session, maps_view, settings
        self.window = parent

    def act(self) -> None:
        result = self.session.current
        if result is None:
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self.window, "Export the replay frames to a folder",
            self.settings.dialog_folder("export"))
        if not folder:
            return
        self.settings.remember_dialog_folder("export", folder)
        dialog = QtWidgets.QProgressDialog("Exporting the replay frames...", "Stop", 0,
                                           len(replay_iterations(result)), self.window)
        dialog.setWindowModality(QtCore.Qt.WindowModality.WindowModal)

        def progress(done: int, total: int) -> bool:
            dialog.setValue(done)
            QtWidgets.QApplication.processEvents()  # frames are drawn here; keep responsive
            return not dialog.wasCanceled()

        _guarded(self.session, lambda: export_replay(
            result, folder, self.maps_view.export_size, progress=progress)[-1])
        dialog.close()


def _guarded(session: Session, export) -> None:
    """Run an export; its failure is shown once, above the map, and is not
    about the run (the Run panel keeps quiet)."""
    try:
        written = export()
    except EXPORT_ERRORS as exc:
        session.raise_error(f"export failed: {exc}", about_the_run=False)
        return
    if written is not None:  # (else written later, off the GUI thread)
        session.tell(f"exported {written}")
