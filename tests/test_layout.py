"""Every page readable at 1280x800 and at 1920x1080 (issue 20, point 1).

The real window, driven through its own controls with realistic content: the
seed's launch, a 6x6 sweep, shared-memory kernels with findings on every
analysis page, a click on a divergence row and then a map switch.  On every
tab and analysis page, tests/layout_checks.py looks: every visible widget
inside the window, tables showing at least 5 rows (or all), no label elided
or clipped, the map's plot area and colour bar wholly visible, sweep cells
keeping their titles.  Screenshots of each step go to a folder
(``THREADMAP_SCREENSHOTS=docs/screenshots`` keeps them with the docs)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from app.qt import QtCore, QtWidgets
from tests.layout_checks import page_problems

KERNELS = Path(__file__).parent / "kernels"
SIZES = ((1280, 800), (1920, 1080))


def settle(seconds: float = 0.05) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QtWidgets.QApplication.processEvents()
        time.sleep(0.005)


def wait_idle(window, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    settle()
    while (window.controller.busy or window.maps_view.drawing or window.sweep_view.painting) \
            and time.monotonic() < end:
        QtWidgets.QApplication.processEvents()
        time.sleep(0.01)
    settle(0.1)


class Tour:
    """Steps through the window, noting each page's problems and keeping a
    screenshot of it."""

    def __init__(self, window, folder: Path, size: tuple[int, int]):
        self.window, self.folder, self.size = window, folder, size
        self.problems: dict[str, list[str]] = {}

    def look(self, page: str) -> None:
        settle(0.05)
        found = page_problems(self.window)
        if found:
            self.problems[page] = found
        self.window.grab().save(str(self.folder / f"{page}_{self.size[0]}x{self.size[1]}.png"))

    def analysis_pages(self, prefix: str) -> None:
        tabs = self.window.maps_view.analysis
        for index in range(tabs.count()):
            tabs.setCurrentIndex(index)
            self.look(f"{prefix}_{tabs.tabText(index).lower()}")

    def run_file(self, name: str, shape, grid: str, block: str) -> None:
        window = self.window
        window.controller.open_kernel_file(str(KERNELS / name))
        controls = window.controls
        for spin, value in zip((controls.m_spin, controls.k_spin, controls.n_spin), shape):
            spin.setValue(value)
        controls.grid_edit.setText(grid)
        controls.block_edit.setText(block)
        controls.backend_combo.setCurrentText("cpu")
        window.run_action.trigger()
        wait_idle(window)
        assert window.session.current is not None


def _folder(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("THREADMAP_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_page_is_readable(qapp, tmp_path, size):
    from app.main_window import MainWindow
    from app.settings import Settings

    window = MainWindow(synchronous=True, settings=Settings(str(tmp_path / "settings.ini")),
                        confirm=lambda title, text: True)
    window.resize(*size)
    window.show()
    settle(0.2)
    try:
        assert (window.width(), window.height()) == size, "the window cannot be this small"
        tour = Tour(window, _folder(tmp_path), size)
        controls = window.controls
        tour.look("start")
        # the seed's launch: grid-stride, one block of 1,024 threads
        controls.select_kernel("builtin", "grid-stride")
        controls.apply_preset("seed-launch")
        controls.backend_combo.setCurrentText("cpu")
        window.run_action.trigger()
        wait_idle(window)
        tour.analysis_pages("seed")
        # the default 6x6 sweep, then another map
        window.sweep_action.trigger()
        wait_idle(window)
        sweep = window.sweep_view
        assert len(sweep.matrix.painted) == 36
        tour.look("sweep")
        sweep.map_combo.setCurrentIndex(sweep.map_combo.findData("writer"))
        wait_idle(window)
        tour.look("sweep_writer_map")
        for name, labels in sweep.point_labels.items():  # the points' labels, whole, apart
            assert labels.drawn, name
            for box in labels.boxes:
                assert labels.area.left() - 1 <= box.left() and \
                    box.right() <= labels.area.right() + 1, (name, box, labels.area)
            assert not any(a.adjusted(-2, 0, 2, 0).intersects(b) for i, a in
                           enumerate(labels.boxes) for b in labels.boxes[i + 1:]), name
            if labels.avoid is not None:  # clear of the legend
                plot = sweep.time_plot
                legend = plot.mapFromScene(labels.avoid.sceneBoundingRect()).boundingRect()
                assert not any(QtCore.QRectF(legend).intersects(box) for box in labels.boxes), \
                    (name, legend, labels.boxes)
        for key, label in sweep.matrix.labels.items():  # every cell keeps its title
            assert label.pixmap() is not None and not label.pixmap().isNull(), key
            assert label.toolTip().split(" ")[0] == "x".join(map(str, key[0])), key
        window.tabs.setCurrentIndex(0)
        # shared-memory kernels: barriers some threads miss, uninitialised
        # reads, divergence; then an 8-way bank conflict
        tour.run_file("early_return.py", (20, 16, 20), "2x2", "16x16")
        tour.analysis_pages("early_return")
        analysis = window.maps_view.analysis
        analysis.setCurrentIndex(next(i for i in range(analysis.count())
                                      if analysis.tabText(i) == "Divergence"))
        analysis.divergence_table.selectRow(0)
        wait_idle(window)
        tour.look("early_return_divergence_row")
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("count"))
        wait_idle(window)
        tour.look("early_return_after_map_switch")
        tour.run_file("transposed_tile.py", (32, 32, 32), "2x2", "16x16")
        analysis.setCurrentIndex(next(i for i in range(analysis.count())
                                      if analysis.tabText(i) == "Shared"))
        analysis.bank_table.selectRow(0)
        wait_idle(window)
        tour.look("transposed_tile_bank_conflict")
        # a kernel file whose name is 200 characters long: elided, never
        # pushing widgets out of the window
        long_name = tmp_path / ("a_kernel_with_a_very_long_name_" * 7)[:197]
        long_file = long_name.with_suffix(".py")
        long_file.write_text((KERNELS / "early_return.py").read_text())
        window.controller.open_kernel_file(str(long_file))
        controls.backend_combo.setCurrentText("cpu")
        window.run_action.trigger()
        wait_idle(window)
        assert window.session.current.request.kernel_file == str(long_file)
        tour.look("long_file_name")
        window.tabs.setCurrentIndex(1)
        tour.look("long_file_name_sweep_tab")
        window.tabs.setCurrentIndex(0)
        # a kernel run as it is (issue 22): its Arguments and Reference in
        # place of M, K and N, its 1-D output drawn in rows, read by its arrays
        examples = Path(__file__).resolve().parents[1] / "examples"
        window.controller.open_kernel_file(str(examples / "saxpy.py"))
        controls.reference_edit.setText(f"{examples / 'references.py'}:saxpy")
        controls.backend_combo.setCurrentText("cpu")
        window.run_action.trigger()
        wait_idle(window)
        assert window.session.current.request.arguments
        tour.look("described_saxpy")
        maps = window.maps_view
        maps.map_combo.setCurrentIndex(maps.map_combo.findData("reads_x"))
        wait_idle(window)
        tour.look("described_saxpy_reads_x")
        # an array stored into besides the output: its own write maps, in the menu
        from tests.test_written_maps import SPLIT
        split = tmp_path / "split.py"
        split.write_text(SPLIT)
        window.controller.open_kernel_file(str(split))
        controls.grid_edit.setText("4")
        controls.block_edit.setText("64")
        window.run_action.trigger()
        wait_idle(window)
        maps.map_combo.setCurrentIndex(maps.map_combo.findData("count:sums"))
        wait_idle(window)
        assert window.session.current_image().domain == "written"
        tour.look("described_split_count_sums")
        # a 3-D array: its slices stacked, shown one at a time
        from tests.test_three_d import SHIFTED
        shifted = tmp_path / "shifted.py"
        shifted.write_text(SHIFTED)
        window.controller.open_kernel_file(str(shifted))
        controls.grid_edit.setText("2")
        controls.block_edit.setText("64")
        window.run_action.trigger()
        wait_idle(window)
        assert maps.slice_spin.isVisible() and window.session.current_image().slices
        maps.slice_spin.setValue(1)
        tour.look("described_3d_slice_1")
        assert not tour.problems, "\n".join(
            f"{page}: {line}" for page, lines in tour.problems.items() for line in lines)
    finally:
        window.close()


def test_a_kernel_file_restarted_as_it_is_keeps_the_run_panel_whole(qapp, tmp_path):
    """The Run panel was measured before the window was shown; a restart on
    a kernel run as it is (Arguments, Reference: wider rows) cut it off by
    3 px on the right."""
    from app.main_window import MainWindow
    from app.settings import Settings

    settings = str(tmp_path / "settings.ini")
    examples = Path(__file__).resolve().parents[1] / "examples"
    for opened in (True, False):
        window = MainWindow(synchronous=True, settings=Settings(settings),
                            confirm=lambda title, text: True)
        window.resize(1280, 800)
        window.show()
        settle(0.2)
        if opened:
            assert window.controller.open_kernel_file(str(examples / "saxpy.py"))
            settle(0.1)
        assert window.controls.described
        assert page_problems(window) == []
        window.close()
        settle(0.1)
