"""The desktop app, driven through its widgets (offscreen)."""
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from app.qt import QtCore, QtGui, QtWidgets

ROOT = Path(__file__).resolve().parents[1]


def set_shape(window, m, k, n):
    for spin, value in ((window.controls.m_spin, m), (window.controls.k_spin, k),
                        (window.controls.n_spin, n)):
        spin.setValue(value)


def wait_for_pictures(window, timeout: float = 30.0) -> None:
    """Until the sweep's cells are painted (off the GUI thread) and placed."""
    import time

    end = time.monotonic() + timeout
    while window.sweep_view.painting and time.monotonic() < end:
        QtWidgets.QApplication.processEvents()
        time.sleep(0.005)
    QtWidgets.QApplication.processEvents()


def prepare_sweep(window, kernel, shape, blocks, threads):
    """Kernel, shape, the CPU emulation and the sweep's lists, ready to run."""
    window.controls.select_kernel("builtin", kernel)
    set_shape(window, *shape)
    window.controls.backend_combo.setCurrentText("cpu")
    window.sweep_view.blocks_edit.setText(blocks)
    window.sweep_view.threads_edit.setText(threads)


def run_preset(window, kernel, preset="seed-launch", backend="cpu"):
    window.controls.select_kernel("builtin", kernel)
    window.controls.apply_preset(preset)
    window.controls.backend_combo.setCurrentText(backend)
    window.run_action.trigger()


def test_window_title_and_backend_status(window):
    assert window.windowTitle().startswith("ThreadMap")
    from kernels.api import gpu_available
    if not gpu_available():
        assert "no CUDA device" in window.status.backend_status.text()
        gpu_index = window.controls.backend_combo.findData("gpu")
        assert not window.controls.backend_combo.model().item(gpu_index).isEnabled()


def test_seed_preset_runs_and_passes(window):
    run_preset(window, "grid-stride")
    assert window.results_view.results.rowCount() == 1
    verdict_column = 5
    assert window.results_view.results.cell_text(0, verdict_column) == "PASS"
    assert window.results_view.results.cell_text(0, 3) == "1 x 1024"
    assert "CPU emulation" in window.results_view.results.cell_text(0, 8)
    drawn = window.maps_view.heatmap.heatmap.image.image
    assert drawn.shape == (128, 128)
    np.testing.assert_array_equal(drawn, 1)  # every element written once
    assert "PASS" in window.maps_view.verdict_label.text()


def test_tid_rows_shows_collisions_in_the_count_map(window):
    run_preset(window, "tid-rows")
    result = window.session.current
    assert window.results_view.results.cell_text(0, 5) == "FAIL"
    assert "collisions" in window.results_view.results.cell_text(0, 6)
    from app.models.map_images import count_of_scale, count_scale

    drawn = window.maps_view.heatmap.heatmap.image.image
    # drawn on the count scale (0, 1, then log from 2 to the maximum)
    np.testing.assert_array_equal(drawn, count_scale(result.maps.writes, 1024))
    # every thread of the block stored every element
    assert result.maps.writes.max() == 1024 and count_of_scale(drawn.max(), 1024) == 1024


def test_hover_names_the_writer_of_a_known_element(window, qtbot):
    run_preset(window, "grid-stride")
    # C is 128 x 128, 1024 threads: element (3, 5) is linear 389, thread 389, iteration 0.
    plot = window.maps_view.heatmap.heatmap.plot
    scene_pos = plot.vb.mapViewToScene(QtCore.QPointF(5, 3))
    window.maps_view.heatmap.scene().sigMouseMoved.emit(scene_pos)
    text = window.maps_view.hover_label.text()
    assert "C[3, 5]" in text
    assert "thread 389 = block 0 (0,0), thread 389 (389,0), warp 12" in text
    assert "iteration: 0" in text
    assert f"{window.session.current.c[3, 5]:.7g}" in text


def test_hover_text_follows_the_result_on_screen(window):
    run_preset(window, "grid-stride")
    plot = window.maps_view.heatmap.heatmap.plot
    window.maps_view.heatmap.scene().sigMouseMoved.emit(plot.vb.mapViewToScene(QtCore.QPointF(5, 3)))
    assert "thread 389" in window.maps_view.hover_label.text()
    # A new run on 1 x 64: element (3, 5) is linear 389, thread 389 mod 64 = 5.
    window.controls.grid_edit.setText("1")
    window.controls.block_edit.setText("64")
    window.run_action.trigger()
    assert window.session.current.request.block == (64,)
    text = window.maps_view.hover_label.text()
    assert "thread 389" not in text and "thread 5 = block 0 (0,0)" in text, text
    # Selecting the first run in the results table: its writer again.
    window.results_view.selectRow(0)
    assert "thread 389" in window.maps_view.hover_label.text()


def test_bad_input_keeps_the_previous_results(window):
    run_preset(window, "grid-stride")
    previous = window.session.current
    window.controls.block_edit.setText("2048")
    window.run_action.trigger()
    assert window.maps_view.error_label.isVisible()
    assert "past CUDA's limit of 1,024" in window.maps_view.error_label.text()
    assert window.results_view.results.rowCount() == 1 and window.session.current is previous
    window.controls.block_edit.setText("abc")
    window.run_action.trigger()
    assert "block must be N or NxM" in window.maps_view.error_label.text()
    assert window.results_view.results.rowCount() == 1


def test_a_kernel_that_fails_keeps_the_previous_results(window, tmp_path):
    run_preset(window, "grid-stride")
    previous = window.session.current
    bad = tmp_path / "bad.py"
    bad.write_text("from numba import cuda\n@cuda.jit\ndef k(A, B, C):\n"
                   "    i = cuda.grid(1)\n    C[i, 0] = A[i, 0] + undefined_name\n")
    assert window.controller.open_kernel_file(str(bad))
    window.run_action.trigger()
    assert window.maps_view.error_label.isVisible()
    assert window.session.current is previous and window.results_view.results.rowCount() == 1


def test_selecting_a_row_shows_that_run_again(window):
    run_preset(window, "grid-stride")
    run_preset(window, "tid-rows")
    assert window.session.current.request.kernel == "tid-rows"
    window.results_view.selectRow(0)
    assert window.session.current.request.kernel == "grid-stride"
    np.testing.assert_array_equal(window.maps_view.heatmap.heatmap.image.image, 1)


def test_every_map_draws(window):
    run_preset(window, "one-block-chunks", preset="ragged")
    from app.models.map_images import MAP_CHOICES
    for name in MAP_CHOICES:
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData(name))
        image = window.maps_view.heatmap.image
        assert image is not None and image.name == name and image.data.size > 0
    window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("writer"))
    for kind in ("thread", "block", "warp"):
        window.maps_view.writer_combo.setCurrentText(kind)
        assert kind in window.maps_view.heatmap.heatmap.plot.titleLabel.text


def test_export_png_size_and_pixels_and_svg_parses(window, tmp_path):
    run_preset(window, "tid-rows")
    window.maps_view.export_width.setValue(640)
    window.maps_view.export_height.setValue(480)
    png = window.export_action.export_to(tmp_path / "count.png")
    image = QtGui.QImage(str(png))
    assert (image.width(), image.height()) == (640, 480)
    colours = {image.pixel(x, y) for x in range(0, 640, 7) for y in range(0, 480, 7)}
    assert len(colours) > 10  # title, heatmap, colour bar: not blank
    svg = window.export_action.export_to(tmp_path / "count.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")


def test_settings_are_remembered(qtbot, settings):
    from app.main_window import MainWindow
    first = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(first)
    first.controls.m_spin.setValue(77)
    first.controls.grid_edit.setText("3x2")
    first.sweep_view.blocks_edit.setText("1,3")
    first.close()
    second = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(second)
    assert second.controls.m_spin.value() == 77
    assert second.controls.grid_edit.text() == "3x2"
    assert second.sweep_view.blocks_edit.text() == "1,3"


def test_start_up_names_no_launch_of_a_kernel_file_not_selected(qtbot, settings):
    from pathlib import Path

    from app.main_window import MainWindow
    first = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(first)
    assert first.controller.open_kernel_file(str(Path(__file__).parent / "kernels" / "doc_style_tiled.py"))
    first.controls.select_kernel("builtin", "grid-stride")
    first.close()
    second = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(second)
    assert second.controls.kernel_choice()[0] == "builtin"
    # (it said "launch 8x8 x 16x16: guessed: 2-D kernel, ..." of the file's kernel)
    assert not second.status.currentMessage().startswith("launch")


def test_a_kernel_run_as_it_is_comes_back_so_after_a_restart(qtbot, settings):
    """The saxpy example with its Arguments edited and a Reference: a restart
    shows them, not M, K and N (it showed C = A @ B, and Run then refused the
    file: 'expected the matmul convention'), and Run runs the edited ones."""
    from app.main_window import MainWindow
    examples = ROOT / "examples"
    first = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(first)
    assert first.controller.open_kernel_file(str(examples / "saxpy.py"))
    edited = "x=float32[512] y=float32[512] out=float32[512] n=512 alpha=2.5"
    reference = f"{examples / 'references.py'}:saxpy"
    first.controls.arguments_edit.setText(edited)
    first.controls.reference_edit.setText(reference)
    first.close()
    second = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(second)
    controls = second.controls
    assert controls.described and controls.kernel_choice()[1].endswith("saxpy.py")
    assert controls.arguments_edit.isVisibleTo(second) and not controls.m_spin.isVisibleTo(second)
    assert (controls.arguments_edit.text(), controls.reference_edit.text()) == (edited, reference)
    controls.backend_combo.setCurrentText("cpu")
    second.run_action.trigger()
    result = second.session.current
    assert result is not None and result.verdict.passed and not result.verdict.reference_note
    assert result.request.shape_label == "x=float32[512], y=float32[512], out=float32[512]"


def test_a_kernel_file_gone_by_the_restart_gives_way_to_a_built_in_kernel(
        qtbot, settings, tmp_path):
    """The file last used deleted between sessions: grid-stride on its own
    launch, said so; not the file's Arguments or its launch under the file's
    label shown for a built-in kernel."""
    import shutil

    from app.main_window import MainWindow
    path = tmp_path / "histogram.py"
    shutil.copy(ROOT / "examples" / "histogram.py", path)
    first = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(first)
    assert first.controller.open_kernel_file(str(path))
    assert (first.controls.grid_edit.text(), first.controls.block_edit.text()) == ("16", "256")
    first.close()
    path.unlink()
    second = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(second)
    controls = second.controls
    assert controls.kernel_choice() == ("builtin", "grid-stride") and not controls.described
    assert controls.m_spin.isVisibleTo(second) and not controls.arguments_edit.isVisibleTo(second)
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("1", "1024")
    assert "preset" in controls.launch_source()
    message = second.status.currentMessage()
    assert message.startswith("histogram.py, the kernel file last used, cannot be read now")


def test_shortcuts_and_about(window):
    assert window.run_action.shortcut().toString() == "Ctrl+R"
    assert window.export_action.shortcut().toString() == "Ctrl+E"
    assert window.cancel_action.shortcut().toString() == "Esc"
    from app.main_window import about_text
    text = about_text()
    for name in ("numba", "numba-cuda", "numpy", "PySide6", "pyqtgraph"):
        assert name in text
    assert not window.windowIcon().isNull()


def test_slow_simulator_run_asks_first(window, monkeypatch):
    asked = []
    window.controller.confirm = lambda title, text: asked.append(text) or False
    window.controls.select_kernel("builtin", "grid-stride")
    window.controls.apply_preset("seed-launch")
    window.controls.backend_combo.setCurrentText("sim")
    window.run_action.trigger()
    assert asked and "at least" in asked[0] and "1,024 threads" in asked[0]
    assert window.results_view.results.rowCount() == 0


def test_sweep_fills_the_matrix_and_opens_a_cell(window):
    prepare_sweep(window, "grid-stride", (20, 4, 30), "1,2", "32,64,96")
    window.sweep_action.trigger()
    cells = window.session.sweep_cells
    assert [(c.blocks, c.threads) for c in cells] == [(1, 32), (1, 64), (1, 96), (2, 32),
                                                       (2, 64), (2, 96)]
    assert all(c.result.verdict.passed for c in cells)
    wait_for_pictures(window)
    assert len(window.sweep_view.matrix.painted) == 6
    # The time plot's numbers are in the unit its label names.
    assert "kernel time (ms)" in window.sweep_view.time_plot.getAxis("left").labelString()
    plotted = sorted(y for item in window.sweep_view.time_plot.getPlotItem().listDataItems()
                     for y in (item.yData if item.yData is not None else ()))
    assert plotted == pytest.approx(sorted(c.result.kernel_timing.seconds * 1e3 for c in cells))
    # Occupancy for every GPU model came with each cell's result, from the worker.
    assert all(len(c.result.occupancy) == 5 for c in cells)
    window.sweep_view.cell_opened.emit(cells[4])
    assert window.session.current is cells[4].result
    assert window.tabs.currentIndex() == 0


def test_a_2d_kernel_sweeps_2d_launches_and_errors_show_on_the_sweep_tab(window):
    view = window.sweep_view
    window.controls.select_kernel("builtin", "tiled")
    # its own 16 x 16 block, and 2-D grids, in place of the 1-D defaults
    assert (view.blocks_edit.text(), view.threads_edit.text()) == (
        "1x1,2x2,4x4,8x8,16x16", "16x16")
    prepare_sweep(window, "tiled", (40, 16, 24), "1x1,2x2,1x1x1", "16x16")
    window.sweep_action.trigger()
    # named on the Sweep tab, not under the Run button
    assert window.tabs.currentWidget() is view
    assert not view.error.isHidden()
    assert "Grids: '1x1x1' is not N or NxM" in view.error.text()
    assert window.controls.message.text() == ""
    assert window.session.sweep_cells == []
    view.blocks_edit.setText("2x3, 1x1, 2x3")  # a repeated entry runs once
    window.sweep_action.trigger()
    assert view.error.isHidden()
    cells = window.session.sweep_cells
    assert [c.label for c in cells] == ["2x3 x 16x16", "1x1 x 16x16"]
    assert [c.result.verdict.word for c in cells] == ["PASS", "FAIL"]
    # placed by their dims: 1x1 on the first row, 2x3 on the second
    wait_for_pictures(window)
    assert set(view.matrix.painted) == {((1, 1), (16, 16)), ((2, 3), (16, 16))}
    assert view._grid == (((1, 1), (2, 3)), ((16, 16),))
    # a launch past CUDA's limits: named, with the launch, on the Sweep tab
    view.threads_edit.setText("64x32")
    window.sweep_action.trigger()
    assert "2x3 x 64x32" in view.error.text() and "1,024" in view.error.text()


def test_sweep_exports(window, tmp_path):
    prepare_sweep(window, "one-block-chunks", (10, 3, 7), "1,2", "16,32")
    window.sweep_action.trigger()
    window.export_folder_action.export_to(tmp_path / "sweep")
    names = {p.name for p in (tmp_path / "sweep").iterdir()}
    assert {"summary.csv", "summary.json", "contact_sheet.png", "grid2_block16.npz",
            "grid2_block16.png"} <= names
    import json
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    verdicts = {(r["blocks"], r["threads_per_block"]): r["verdict"]
                for r in summary["configurations"]}
    assert verdicts[(1, 16)] == "FAIL"  # 70 elements / 16 threads: chunk 5 overruns C
    assert verdicts[(2, 32)] == "FAIL"  # two blocks redo the same work: collisions


def test_cancel_mid_sweep(qtbot, settings):
    from app.main_window import MainWindow
    win = MainWindow(synchronous=False, settings=settings, confirm=lambda title, text: True)
    qtbot.addWidget(win)
    prepare_sweep(win, "grid-stride", (400, 200, 400), "1,2,3,4,5,6,7,8", "32,64,128,256")
    with qtbot.waitSignal(win.session.sweep_cell_added, timeout=60000):
        win.sweep_action.trigger()
    assert win.controller.busy
    with qtbot.waitSignal(win.controller.cancelled, timeout=10000):
        win.cancel_action.trigger()
    qtbot.waitUntil(lambda: not win.controller.busy, timeout=10000)
    assert 1 <= len(win.session.sweep_cells) < 32
    assert win.controls.run_button.isEnabled()
    assert "cancelled" in win.statusBar().currentMessage()


def test_run_off_the_gui_thread_reports_progress(qtbot, settings):
    from app.main_window import MainWindow
    win = MainWindow(synchronous=False, settings=settings)
    qtbot.addWidget(win)
    win.controls.select_kernel("builtin", "grid-stride")
    win.controls.apply_preset("seed-launch")
    win.controls.backend_combo.setCurrentText("cpu")
    seen = []
    win.controller.progress.connect(lambda f, m: seen.append(f))
    with qtbot.waitSignal(win.session.result_added, timeout=60000):
        win.run_action.trigger()
    qtbot.waitUntil(lambda: not win.controller.busy)
    assert seen and max(seen) == 1.0
    assert win.results_view.results.rowCount() == 1


def test_open_a_kernel_file_with_two_kernels_and_run_one(window, tmp_path):
    from tests.test_custom_kernels import TWO_KERNELS, write
    run_preset(window, "grid-stride")
    path = write(tmp_path, "two.py", TWO_KERNELS)
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    assert controls.kernel_combo.currentText() == "two.py"
    assert controls.layout().isRowVisible(controls.function_combo)
    assert [controls.function_combo.itemText(i) for i in range(controls.function_combo.count())] \
        == ["add_kernel", "matmul_n"]
    controls.function_combo.setCurrentText("matmul_n")
    # The file's own launch, matmul_n[(2, 2), (TPB, TPB)], became the launch.
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("2x2", "16x16")
    for spin in (controls.m_spin, controls.k_spin, controls.n_spin):
        spin.setValue(20)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.results_view.results.rowCount() == 2
    assert window.session.current.kernel_name == "matmul_n" and window.session.current.verdict.passed
    assert window.results_view.results.cell_text(1, 1) == "two.py:matmul_n"


def test_a_file_that_does_not_parse_is_refused_and_nothing_is_lost(window, tmp_path):
    run_preset(window, "grid-stride")
    previous = window.session.current
    bad = tmp_path / "broken.py"
    bad.write_text("from numba import cuda\n@cuda.jit\ndef k(A, B, C:\n    pass\n")
    assert not window.controller.open_kernel_file(str(bad))
    assert "does not parse" in window.maps_view.error_label.text() and "broken.py:3" in \
        window.maps_view.error_label.text()
    assert window.session.current is previous
    assert window.controls.kernel_choice() == ("builtin", "grid-stride")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert not window.controller.open_kernel_file(str(empty))
    assert "no CUDA kernel found" in window.maps_view.error_label.text()


def test_coalescing_table_and_per_warp_map(window):
    run_preset(window, "grid-stride")
    rows = window.maps_view.analysis.coalescing_rows()
    # 128 x 128 C, K = 256, 1 x 1024: each thread stores 16 elements, so each of
    # the 32 warps makes 16 x 256 = 4,096 requests to A and to B (131,072 in
    # all) and 16 to C (512).  A is a broadcast (1 sector, ideal 1); B and C
    # take 4 sectors, the ideal for 32 consecutive float32.
    assert [r[1] for r in rows] == ["load A[row, idx]", "load B[idx, col]", "store C[row, col]"]
    assert [(r[2], r[3], r[4], r[5], r[6]) for r in rows] == [
        ("131,072", "1.00", "1", "1", "100%"), ("131,072", "4.00", "4", "4", "100%"),
        ("512", "4.00", "4", "4", "100%")]
    window.maps_view.analysis.coalescing_table.selectRow(2)
    image = window.maps_view.heatmap.image
    assert image.name == "sectors" and image.data.shape == (1, 32)  # 1 block, 32 warps
    np.testing.assert_array_equal(image.data, 4)
    assert window.maps_view.heatmap.text_at(0, 5) == "block 0, warp 5: 4 sectors per request (ideal 4)"


def test_shared_memory_and_divergence_tabs(window):
    # The transposed tile store sA[tx, ty] on 16 x 16 blocks: a warp holds
    # ty = 0, 1 and tx = 0..15, so word tx * 16 + ty sits in bank
    # 16 * (tx % 2) + ty: 4 banks of 8 distinct words each, 8 passes.
    path = Path(__file__).parent / "kernels" / "transposed_tile.py"
    assert window.controller.open_kernel_file(str(path))
    set_shape(window, 32, 32, 32)
    window.controls.grid_edit.setText("2x2")
    window.controls.block_edit.setText("16x16")
    window.controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.verdict.passed, window.session.current.verdict.reasons
    rows = window.maps_view.analysis.bank_rows()
    assert rows[0][:5] == ["16", "store sA[tx, ty]", "64", "8.00", "8"]
    assert "No shared-memory race" in window.maps_view.analysis.hazards_label.text()
    window.maps_view.analysis.bank_table.selectRow(0)
    image = window.maps_view.heatmap.image
    assert image.name == "ways" and image.data.shape == (4, 8)  # 4 blocks of 8 warps
    np.testing.assert_array_equal(image.data, 8)
    window.maps_view.analysis.divergence_table.selectRow(0)
    assert window.maps_view.heatmap.image.name == "lanes"
    assert [r[1] for r in window.maps_view.analysis.divergence_rows()] == [
        "for i in range(A.shape[1] // TPB)", "for j in range(TPB)"]




def test_load_balance_and_occupancy_tables(window):
    window.controls.select_kernel("builtin", "grid-stride")
    set_shape(window, 10, 4, 10)
    window.controls.grid_edit.setText("2")
    window.controls.block_edit.setText("64")
    window.controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    # 100 elements on 128 threads: 28 threads stored no element of C.
    assert "128 threads: 28 stored no output (22%)" in \
        window.maps_view.analysis.balance_label.text()
    table = window.maps_view.analysis.occupancy_table
    models = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert models == ["H100 SXM", "H200", "A100", "RTX 4090", "T4"]
    # 2 blocks on 132 SMs: one wave, nearly all of it idle.
    # (99.2%: not rounded up to "100%")
    assert table.item(0, 4).text() == "1" and table.item(0, 5).text() == ">99%"


def test_replay_steps_through_iterations(window):
    window.controls.select_kernel("builtin", "grid-stride")
    set_shape(window, 8, 2, 8)
    window.controls.grid_edit.setText("1")
    window.controls.block_edit.setText("32")
    window.controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    slider = window.maps_view.analysis.replay_slider
    assert slider.maximum() == 1  # 64 elements, 32 threads: iterations 0 and 1
    slider.setValue(1)
    image = window.maps_view.heatmap.image
    assert image.name == "replay"
    assert np.all(image.data[:4] == -1)  # rows 0-3 written at iteration 0: black
    assert not np.isnan(image.data[4:]).any() and (image.data[4:] >= 0).all()


def test_replay_of_16384_iterations_steps_by_a_stride_at_a_chosen_speed(window):
    run_preset(window, "tid-rows")  # 1 x 1024 on 128 x 256 x 128: 16,384 iterations
    analysis = window.maps_view.analysis
    assert analysis.replay_slider.maximum() == 16_383
    assert analysis.replay_stride.value() == 163  # about 100 steps in all
    analysis.replay_speed.setValue(20)
    assert analysis._timer.interval() == 50
    analysis._on_timer_timeout()
    analysis._on_timer_timeout()
    assert analysis.replay_slider.value() == 2 * 163
    assert window.maps_view.heatmap.image.name == "replay"
    analysis.replay_stride.setValue(20_000)  # a step past the end stops at the end
    analysis._on_timer_timeout()
    assert analysis.replay_slider.value() == 16_383


def test_replay_frames_export(window, tmp_path):
    window.controls.select_kernel("builtin", "grid-stride")
    set_shape(window, 8, 2, 8)
    window.controls.grid_edit.setText("1")
    window.controls.block_edit.setText("16")
    window.controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    from app.export import export_replay
    files = export_replay(window.session.current, tmp_path, (320, 240))
    names = [f.name for f in files]
    assert names == ["replay_000.png", "replay_001.png", "replay_002.png", "replay_003.png",
                     "replay.gif"]
    from PIL import Image
    with Image.open(files[-1]) as gif:
        assert gif.n_frames == 4 and gif.size == (320, 240)


def test_diff_of_two_runs(window):
    run_preset(window, "grid-stride")
    window.controls.grid_edit.setText("2")
    window.controls.block_edit.setText("256")
    window.run_action.trigger()
    window.results_view.clearSelection()
    window.results_view.selectionModel().select(
        window.results_view.results.index(0, 0),
        QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    window.results_view.selectionModel().select(
        window.results_view.results.index(1, 0),
        QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    window.maps_view.analysis.diff_button.click()
    image = window.maps_view.heatmap.image
    assert image.name == "diff"
    # 1 x 1024 and 2 x 256 threads write element e with threads e % 1024 and
    # e % 512: the same for the first 512 elements of every 1024, else not.
    linear = np.arange(128 * 128).reshape(128, 128)
    expected_writer_changed = (linear % 1024) != (linear % 512)
    np.testing.assert_array_equal(image.data == 2, expected_writer_changed)
    assert "8,192 with a different writer" in window.maps_view.analysis.diff_label.text()


def test_sweep_cells_show_occupancy_and_threads_without_output(window):
    prepare_sweep(window, "grid-stride", (16, 2, 16), "1,4", "128")
    window.sweep_action.trigger()
    one, four = window.session.sweep_cells
    # 256 elements: 1 x 128 stores 2 a thread; 4 x 128, threads 256-511 none.
    assert window.sweep_view.occupancy_text(one).endswith("<br>every thread stored output")
    assert window.sweep_view.occupancy_text(four).endswith(
        "<br>50% of threads stored no output")
    window.sweep_view.gpu_combo.setCurrentText("T4")
    assert "1 wave" in window.sweep_view.occupancy_text(four)


def test_sweep_cells_name_what_the_lockstep_checks_found():
    from app.export import cell_findings
    from kernels import RunRequest, run
    from kernels.sweep import SweepCell

    kernels = Path(__file__).parent / "kernels"
    racy = RunRequest(kernel=None, kernel_file=str(kernels / "missing_barrier.py"), m=16, k=16,
                      n=16, grid=(1, 1), block=(16, 16), backend="cpu")
    conflicted = racy.with_(kernel_file=str(kernels / "transposed_tile.py"), m=32, k=32, n=32,
                            grid=(2, 2))
    racy_cell = SweepCell((1, 1), (16, 16), racy, run(racy))
    conflicted_cell = SweepCell((2, 2), (16, 16), conflicted, run(conflicted))
    assert "shared races" in cell_findings(racy_cell)
    assert cell_findings(conflicted_cell) == "8-way bank conflicts"
    row = racy_cell.row()
    # (in elements of shared memory: every element of sA and sB, 256 + 256;
    # tests/test_lockstep.py works it out)
    assert row["shared_races"] == 512 and row["max_bank_ways"] == 1


def test_opening_a_2d_kernel_file_applies_its_guessed_launch_and_says_so(window, tmp_path):
    path = tmp_path / "naive.py"
    path.write_text("""from numba import cuda


@cuda.jit
def naive(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s
""")
    set_shape(window, 100, 37, 40)
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    # C 100 x 40 with x along the rows: 7 x 3 blocks of 16 x 16.
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("7x3", "16x16")
    assert controls.launch_source().startswith("guessed: 2-D kernel")
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.verdict.passed, window.session.current.verdict.reasons
    assert "launch: 7x3 x 16x16 (guessed: 2-D kernel" in window.maps_view.verdict_label.text()
    controls.block_edit.setText("8x8")  # edited: the launch is the user's now
    assert controls.launch_source() == "given"


def test_garbage_is_collected_on_the_gui_thread_only(window):
    # A cycle of Qt wrappers collected by a worker thread's allocation can
    # deadlock against the GUI thread deleting widgets (seen in this suite).
    # With automatic collection on, the worker's allocations below would
    # collect the fresh cycle (still in generation 0) on the worker.
    import gc
    import threading
    import weakref

    assert not gc.isenabled()
    collected_in = []

    class Cycle:
        pass

    cycle = Cycle()
    cycle.me = cycle
    weakref.finalize(cycle, lambda: collected_in.append(threading.current_thread()))
    del cycle
    worker = threading.Thread(target=lambda: [[i] for i in range(200000)])
    worker.start()
    worker.join()
    assert collected_in == []
    gc.collect()  # what the GUI thread's timer does
    assert collected_in == [threading.main_thread()]


def test_file_dialogs_open_where_the_last_one_ended(window, settings, monkeypatch, tmp_path):
    from pathlib import Path

    from app.qt import QtWidgets

    kernel = Path(__file__).parent / "kernels" / "doc_style_tiled.py"
    started_in = []

    def open_file(parent, caption, folder, filters):
        started_in.append(folder)
        return str(kernel), filters

    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName", open_file)
    window.open_action.trigger()
    window.open_action.trigger()
    assert started_in[0] == str(Path.home()) and started_in[1] == str(kernel.parent)
    # Exports remember their own folder, and both survive a restart.
    saved = []

    def save_file(parent, caption, suggested, filters):
        saved.append(suggested)
        return str(tmp_path / "map.png"), filters

    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", save_file)
    run_preset(window, "grid-stride")
    window.export_action.trigger()
    window.export_action.trigger()
    assert Path(saved[1]).parent == tmp_path
    assert settings.dialog_folder("kernel") == str(kernel.parent)


def test_an_export_error_is_shown_once(window, monkeypatch, tmp_path):
    from app.qt import QtWidgets

    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        lambda *args: (str(blocker / "map.png"), ""))
    run_preset(window, "grid-stride")
    shown = window.session.current
    window.export_action.trigger()
    assert window.maps_view.error_label.isVisibleTo(window)
    assert window.maps_view.error_label.text().startswith("export failed")
    assert window.controls.message.text() == ""  # not a second time under Run
    assert window.session.current is shown  # and the result stays


def test_a_sweep_paints_each_cell_off_the_gui_thread_as_it_arrives(window, monkeypatch):
    import threading

    import app.views.sweep_matrix as sweep_matrix

    painted = []
    original = sweep_matrix.paint_cell

    def counting(cell, *args, **kwargs):
        painted.append((cell.label, threading.current_thread() is threading.main_thread()))
        return original(cell, *args, **kwargs)

    monkeypatch.setattr(sweep_matrix, "paint_cell", counting)
    prepare_sweep(window, "grid-stride", (20, 4, 30), "1,2,4", "32,64,96")
    window.sweep_action.trigger()
    assert len(window.session.sweep_cells) == 9
    wait_for_pictures(window)
    # every cell painted, none on the GUI thread; not once per arrival (81
    # for 9 cells): once, and again only when the cells' size changed with
    # the window (or a new colour scale's top: not here, every count is 1)
    assert not any(on_gui for _, on_gui in painted)
    labels = [label for label, _ in painted]
    assert set(labels) == {c.label for c in window.session.sweep_cells}
    assert len(labels) <= 18
    assert len(window.sweep_view.matrix.painted) == 9
    # titles are part of the pictures: a map switch keeps them
    window.sweep_view.map_combo.setCurrentIndex(window.sweep_view.map_combo.findData("writer"))
    wait_for_pictures(window)
    label = window.sweep_view.matrix.labels[((2,), (64,))]
    assert label.pixmap() is not None and not label.pixmap().isNull()
    assert label.toolTip().startswith("2 x 64 PASS")


def test_the_map_and_tabs_stay_put_whatever_the_verdict_says(window, qtbot):
    run_preset(window, "grid-stride")  # PASS: one line of figures
    qtbot.wait(50)
    top = window.maps_view.analysis.mapTo(window, window.maps_view.analysis.rect().topLeft()).y()
    run_preset(window, "tid-rows")  # FAIL: several reasons
    qtbot.wait(50)
    assert len(window.session.current.verdict.reasons) >= 3
    assert window.maps_view.analysis.mapTo(window, window.maps_view.analysis.rect().topLeft()).y() == top


def test_saving_the_shown_kernel_file_runs_it_again_beside_the_old_result(window, tmp_path):
    """Follow the file (on by default): a save of the shown kernel file runs
    the shown request again, and the new result joins the table; with the
    toggle off, a save does nothing."""
    from tests.test_custom_kernels import TWO_KERNELS, write
    path = write(tmp_path, "two.py", TWO_KERNELS)
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    controls.function_combo.setCurrentText("matmul_n")
    for spin in (controls.m_spin, controls.k_spin, controls.n_spin):
        spin.setValue(20)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.results_view.results.rowCount() == 1 and window.session.current.verdict.passed
    assert window.follow_action.isChecked()
    # A bug saved in the editor: the shown request runs again by itself.
    path.write_text(TWO_KERNELS.replace("C[i, j] = s", "C[i, j] = s + 1"))
    window.controller._look_at_the_file()
    assert window.results_view.results.rowCount() == 2
    assert not window.session.current.verdict.passed
    assert window.session.results[0].verdict.passed  # the old result is kept beside it
    window.follow_action.setChecked(False)
    path.write_text(TWO_KERNELS)
    window.controller._look_at_the_file()
    assert window.results_view.results.rowCount() == 2


def test_sweep_plots_name_their_points_and_keep_tick_labels_apart(window):
    from app.views.sweep_view import spread_ticks

    # 4 x 64 and 1 x 256: the same 256 threads, the same share idle: one label
    prepare_sweep(window, "grid-stride", (4, 4, 4), "1,4", "64,256")
    window.sweep_action.trigger()
    wait_for_pictures(window)
    labels = set(window.sweep_view.point_labels["idle"].texts)
    assert "1 x 256, 4 x 64" in labels or "4 x 64, 1 x 256" in labels
    assert set(window.sweep_view.point_labels["time"].texts) >= {"1 x 64", "4 x 256"}
    # 8,192 lies 0.3 decades from 4,096 and from 16,384: too close where a
    # label takes 0.35
    ticks = spread_ticks([64, 256, 1024, 4096, 8192, 16384], apart=0.35)
    assert [label for _, label in ticks] == ["64", "256", "1,024", "4,096", "16,384"]
    assert [label for _, label in spread_ticks([64, 4096, 8192], apart=0.2)] == [
        "64", "4,096", "8,192"]


def test_the_run_panel_and_the_launch_label_follow_the_run_shown(window):
    from app.views.maps_view import verdict_html

    prepare_sweep(window, "grid-stride", (20, 4, 30), "1,2", "32,64")
    window.controls.apply_preset("ragged")
    window.sweep_action.trigger()
    cell = window.session.sweep_cells[3]  # 2 x 64
    window.sweep_view.cell_opened.emit(cell)
    assert window.session.current is cell.result
    assert (window.controls.grid_edit.text(), window.controls.block_edit.text()) == ("2", "64")
    assert "launch: 2 x 64 (the sweep's configuration 2 x 64)" in verdict_html(cell.result)
    assert "preset" not in verdict_html(cell.result)
    # a row of the results table: the fields follow it too
    first = window.session.sweep_cells[0].result
    window.session.add_result(first)
    window.session.add_result(window.session.sweep_cells[1].result)
    window.results_view.selectRow(window.session.row_of(first))
    assert window.session.current is first
    assert (window.controls.grid_edit.text(), window.controls.block_edit.text()) == ("1", "32")
    assert window.controls.request().grid == (1,) and window.controls.launch_source() == \
        "the sweep's configuration 1 x 32"


def test_the_kernel_box_names_the_whole_file_on_hover_and_selects_by_request(window, tmp_path):
    # a 2-kernel file: set_request picks the file, then the request's kernel in it
    path = tmp_path / ("two_kernels_" + "x" * 120 + ".py")
    path.write_text((Path(__file__).parent / "kernels" / "early_return.py").read_text()
                    + "\n\n@cuda.jit\ndef second(A, B, C):\n    i, j = cuda.grid(2)\n"
                    "    if i < C.shape[0] and j < C.shape[1]:\n        C[i, j] = 0.0\n")
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    assert controls.select_kernel("file", str(path.resolve())) is True
    assert path.name in controls.kernel_combo.toolTip() and str(path.resolve()) in \
        controls.kernel_combo.toolTip()
    request = controls.request().with_(kernel="second")
    controls.select_kernel("builtin", "tiled")
    assert controls.kernel_combo.toolTip().startswith("tiled")
    controls.set_request(request)
    assert controls.function_combo.currentText() == "second"


def test_a_file_that_describes_its_arguments_sets_the_shape_it_runs(window, tmp_path):
    """THREADMAP_ARGS (read, never run) sets M, K, N and the dtype when the
    file is opened; a description that does not fit C = A @ B runs the kernel
    as it is, says why, and the shape fields keep what they held."""
    from tests.test_arguments import MATMUL
    path = tmp_path / "described.py"
    path.write_text(MATMUL.replace("float32", "float64"))
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    assert (controls.m_spin.value(), controls.k_spin.value(), controls.n_spin.value()) == \
        (48, 20, 36)
    assert controls.dtype_combo.currentText() == "float64"
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    result = window.session.current
    assert result.request.shape == (48, 20, 36) and result.verdict.passed
    bad = tmp_path / "bad.py"
    bad.write_text(MATMUL.replace('"float32[20, 36]"', '"float32[21, 36]"'))
    told = []
    window.session.told.connect(lambda message, _ms: told.append(message))
    assert window.controller.open_kernel_file(str(bad))
    # (three arrays that are not A, B and C as described: run as they are, and why said)
    assert controls.described
    assert any("read as C = A @ B they do not fit" in m and
               "THREADMAP_ARGS B=float32[21, 36]: its row count is 21" in m for m in told)
    assert (controls.m_spin.value(), controls.k_spin.value()) == (48, 20)


def test_a_kernel_outside_the_matmul_convention_runs_as_it_is_on_its_arguments(
        window, tmp_path):
    """Opening a kernel that is not C = A @ B shows its Arguments (from its
    THREADMAP_ARGS) and a Reference in place of M, K and N; it runs, its
    verdict held to the reference, its read maps listed by its arrays."""
    controls = window.controls
    examples = ROOT / "examples"
    assert window.controller.open_kernel_file(str(examples / "saxpy.py"))
    assert controls.described
    assert not controls.m_spin.isVisibleTo(window) and controls.arguments_edit.isVisibleTo(window)
    assert controls.arguments_edit.text() == \
        "x=float32[1000] y=float32[1000] out=float32[1000] n=1000 alpha=2.5"
    controls.reference_edit.setText(f"{examples / 'references.py'}:saxpy")
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    result = window.session.current
    assert result.request.arguments and result.verdict.passed
    assert not result.verdict.reference_note  # (held to the reference: a real PASS)
    labels = [window.maps_view.map_combo.itemText(i)
              for i in range(window.maps_view.map_combo.count())]
    assert "Reads of x" in labels and "Reads of y" in labels and "Reads of A" not in labels
    window.maps_view.map_combo.setCurrentIndex(labels.index("Reads of x"))
    image = window.session.current_image()
    assert image.data.shape == (25, 40) and np.all(image.data == 1)  # (1,000 drawn 40 a row)
    assert "1,000 elements drawn 40 a row" in image.legend
    assert image.x_label == "x[row x 40 + column]: column"
    from app.models.map_images import hover_text
    assert hover_text(result, image, 1, 2) == "x[42]: read 1 times"
    # Arguments edited: the run takes them (the file's entries replaced by name)
    controls.arguments_edit.setText("x=float32[512] y=float32[512] out=float32[512] n=512")
    window.run_action.trigger()
    assert window.session.current.request.shape_label == \
        "x=float32[512], y=float32[512], out=float32[512]"
    # back to a built-in kernel: C = A @ B again
    controls.select_kernel("builtin", "grid-stride")
    assert not controls.described and controls.m_spin.isVisibleTo(window)


def test_every_array_the_kernel_stores_into_has_its_maps_in_the_menu(window, tmp_path):
    """A kernel that stores into an array besides its output: that array's write count,
    writer and iteration maps are listed by its name, drawn from its own maps, and gone
    (the map back to the output's count) once a run without it is shown."""
    from tests.test_written_maps import SPLIT
    path = tmp_path / "split.py"
    path.write_text(SPLIT)
    assert window.controller.open_kernel_file(str(path))
    window.controls.backend_combo.setCurrentText("cpu")
    window.controls.grid_edit.setText("4")
    window.controls.block_edit.setText("64")
    window.run_action.trigger()
    result = window.session.current
    assert result.output == "out" and [w.name for w in result.maps.written] == ["sums"]
    combo = window.maps_view.map_combo
    labels = [combo.itemText(i) for i in range(combo.count())]
    for label in ("Write count of sums", "Writer of sums", "Grid-stride iteration of sums"):
        assert label in labels
    combo.setCurrentIndex(combo.findData("writer:sums"))
    assert window.maps_view.writer_combo.isVisibleTo(window)
    image = window.session.current_image()
    assert image.domain == "written" and image.title.startswith("Writer of sums")
    combo.setCurrentIndex(combo.findData("count:sums"))
    image = window.session.current_image()
    inner = image.data[image.margin:image.data.shape[0] - image.margin,
                       image.margin:image.data.shape[1] - image.margin]
    assert inner.shape == (2, 2) and inner[0, 1] == 0  # sums[1]: never written
    # a run that stores into nothing else: its entries go, the map is its output's count
    window.controls.select_kernel("builtin", "grid-stride")
    window.run_action.trigger()
    labels = [combo.itemText(i) for i in range(combo.count())]
    assert not any("of sums" in label for label in labels)
    assert window.session.map_name == "count"


def test_a_saved_threadmap_args_is_followed_but_typed_arguments_are_kept(window, tmp_path):
    """Follow the file: a run on the file's THREADMAP_ARGS runs again on them as
    saved; a run on Arguments typed in the app keeps those."""
    text = (ROOT / "examples" / "vector_add.py").read_text()
    path = tmp_path / "vector_add.py"
    path.write_text(text)
    controls = window.controls
    assert window.controller.open_kernel_file(str(path))
    controls.reference_edit.clear()
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.request.shape_label.startswith("x=float32[4096]")
    path.write_text(text.replace("4096", "1000"))
    window.controller._look_at_the_file()
    assert window.session.current.request.shape_label == \
        "x=float32[1000], y=float32[1000], out=float32[1000]"
    assert window.results_view.results.rowCount() == 2
    # typed in the app: a save runs them again as typed
    controls.arguments_edit.setText("x=float32[64] y=float32[64] out=float32[64]")
    window.run_action.trigger()
    path.write_text(text.replace("4096", "2000"))
    window.controller._look_at_the_file()
    assert window.results_view.results.rowCount() == 4
    assert window.session.current.request.shape_label == \
        "x=float32[64], y=float32[64], out=float32[64]"


def test_without_a_reference_a_kernel_run_as_it_is_has_maps_and_checks_only(window):
    controls = window.controls
    assert window.controller.open_kernel_file(str(ROOT / "examples" / "vector_add.py"))
    controls.reference_edit.clear()
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    result = window.session.current
    assert result.verdict.reference_note.startswith("no reference given")
    # never a green PASS it did not earn: CHECKED, and why, in the verdict and the table
    shown = window.maps_view.verdict_label.text()
    assert ">CHECKED</b>" in shown and "no correctness verdict: no reference given" in shown
    table = window.results_view.model()
    row = table.rowCount() - 1
    assert table.cell_text(row, list(range(table.columnCount())).index(5)) == "CHECKED"
    names = [window.maps_view.map_combo.itemData(i)
             for i in range(window.maps_view.map_combo.count())]
    window.maps_view.map_combo.setCurrentIndex(names.index("error"))
    assert "no reference to compare with" in window.maps_view.legend_label.text()
    # Find a failing case searches it on its arguments resized: one element per
    # thread, so one block of its 256 threads leaves most of 527 elements unwritten
    told = []
    window.session.told.connect(lambda message, _ms: told.append(message))
    window.hunt_action.trigger()
    failing = window.controller.last_hunt.failing
    assert failing is not None and failing.arguments
    assert failing.size_label == "x=float32[527], y=float32[527], out=float32[527]"
    assert failing.grid == (1,) and "fewer threads than elements" in failing.why
    assert window.session.current.request.arguments == failing.arguments
    assert any("smallest failing case" in m and "covers out" in m for m in told)


def test_a_kernel_with_nothing_to_describe_it_asks_for_its_arguments(window, tmp_path):
    from tests.test_described_runs import TRANSPOSE
    path = tmp_path / "transpose.py"
    path.write_text(TRANSPOSE.replace("THREADMAP_ARGS", "NOT_READ"))
    earlier = window.session.current
    assert window.controller.open_kernel_file(str(path))
    controls = window.controls
    assert controls.described and controls.arguments_edit.text() == ""
    window.run_action.trigger()  # nothing described: said, nothing lost
    assert "describe its arguments" in window.maps_view.error_label.text()
    assert window.session.current is earlier
    controls.arguments_edit.setText("a=float32[64, 64] oops")
    window.run_action.trigger()
    assert "Arguments: cannot read" in window.maps_view.error_label.text()
    controls.arguments_edit.setText("a=float32[64, 48] out=float32[48, 64]")
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.request.shape_label == "a=float32[64, 48], out=float32[48, 64]"


def test_a_3d_arrays_maps_are_shown_one_slice_at_a_time(window, tmp_path):
    """A kernel of 3-D arrays: its maps are the slices stacked, the Slice chooser shows
    one (the first, at first) or all, hover names the element in the kernel's own three
    indices, and the chooser goes when a 2-D run is shown."""
    from app.models.map_images import hover_text
    from tests.test_three_d import SHIFTED
    path = tmp_path / "shifted.py"
    path.write_text(SHIFTED)
    assert window.controller.open_kernel_file(str(path))
    window.controls.reference_edit.clear()
    window.controls.backend_combo.setCurrentText("cpu")
    window.controls.grid_edit.setText("2")
    window.controls.block_edit.setText("64")
    window.run_action.trigger()
    result = window.session.current
    assert result.output == "out" and result.c.shape == (15, 7)
    view = window.maps_view
    assert view.slice_spin.isVisibleTo(window)
    assert (view.slice_spin.minimum(), view.slice_spin.maximum()) == (-1, 2)
    assert view.slice_spin.value() == 0
    plot = view.heatmap.heatmap
    # (cells are square: the view holds the slice's rows, centred, and as
    # much around them as the plot's shape leaves)
    _, (top, bottom) = plot.plot.vb.viewRange()
    assert top <= -0.5 and bottom >= 4.5 and round(top + bottom, 1) == 4.0  # slice 0: rows 0..4
    view.slice_spin.setValue(2)
    _, (top, bottom) = plot.plot.vb.viewRange()
    assert top <= 9.5 and bottom >= 14.5 and round(top + bottom, 1) == 24.0
    assert len(plot._slice_lines) == 2
    # whole row numbers of the slice on its axis, never 10.5
    assert [r for r, _ in plot.plot.getAxis("left")._tickLevels[0]] == [10, 11, 12, 13, 14]
    image = view.heatmap.image
    assert image.slices == (3, 5) and "3 slices of 5 x 7 stacked" in image.legend
    # row 12 of the stack is slice 2, row 2; out[2, 2, 3] is written by thread 86
    assert hover_text(result, image, 12, 3).startswith("out[2, 2, 3]: stored 1 time")
    assert "thread 86" in hover_text(result, image, 12, 3) or \
        "gtid 86" in hover_text(result, image, 12, 3)
    view.map_combo.setCurrentIndex(view.map_combo.findData("reads_a"))
    reads = window.session.current_image()
    assert reads.slices == (3, 5) and reads.data.shape == (15, 7)
    # another map, of another shape (no margin): still slice 2, as Slice says
    assert view.slice_spin.value() == 2
    _, (top, bottom) = plot.plot.vb.viewRange()
    assert (round(top, 1), round(bottom, 1)) == (9.5, 14.5)
    assert hover_text(result, reads, 6, 0) == "a[1, 1, 0]: read 1 times"
    view.slice_spin.setValue(-1)  # all: every slice, stacked
    _, (top, bottom) = plot.plot.vb.viewRange()
    assert top <= -0.5 and bottom >= 14.5  # (reads: no margin)
    window.controls.select_kernel("builtin", "grid-stride")
    window.run_action.trigger()
    assert not view.slice_spin.isVisibleTo(window) and not plot._slice_lines
    assert plot.plot.getAxis("left")._tickLevels is None


def test_another_kernel_file_clears_the_reference(window, tmp_path):
    """A Reference is one kernel's host code: opening another file clears it (split.py
    run with saxpy's reference said the reference raised TypeError), and showing the
    first run again brings it back with its request."""
    from tests.test_written_maps import SPLIT
    examples = ROOT / "examples"
    controls = window.controls
    assert window.controller.open_kernel_file(str(examples / "saxpy.py"))
    controls.reference_edit.setText(f"{examples / 'references.py'}:saxpy")
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.verdict.passed
    split = tmp_path / "split.py"
    split.write_text(SPLIT)
    assert window.controller.open_kernel_file(str(split))
    assert controls.reference_edit.text() == ""
    window.run_action.trigger()
    assert "TypeError" not in (window.session.current.verdict.reference_note or "")
    window.results_view.selectRow(0)
    assert controls.reference_edit.text().endswith("references.py:saxpy")


def test_opening_a_symbolic_link_is_refused_and_its_target_never_shown(window, tmp_path):
    """A teacher opening a submission ``mallory.py -> secret`` in the app: one
    line that says what it names, nothing of the target read or shown, and
    the kernel on screen kept (issue 42)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("root:SECRET-HASH:0:0\n")
    link = tmp_path / "mallory.py"
    link.symlink_to(secret)
    shown = window.controls.kernel_combo.currentText()
    raised = []
    window.session.error_raised.connect(lambda message, _: raised.append(message))
    assert not window.controller.open_kernel_file(str(link))
    message, = raised
    assert "a symbolic link (to " in message and "SECRET" not in message
    assert window.controls.kernel_combo.currentText() == shown
