"""Screenshots of the app as a person sees it (run under a real X server):

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/take_screenshots.py OUT_DIR
    xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python scripts/take_screenshots.py OUT_DIR \
        --size 1280x800 --only shared

Drives the window through its own controls (seed preset, tid-rows, sweeps,
shared-memory kernels) and grabs the whole screen after each step.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from app.main_window import MainWindow
from app.qt import QtWidgets
from app.settings import Settings

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "kernels"


def settle(app, seconds=0.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def wait_idle(app, window, timeout=600):
    end = time.monotonic() + timeout
    settle(app, 0.3)
    while (window.controller.busy or window.maps_view.drawing) and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.05)
    settle(app, 0.5)


def shoot(app, window, path: Path):
    settle(app, 0.5)
    screen = app.primaryScreen()
    screen.grabWindow(0).save(str(path))
    print("wrote", path, flush=True)


def analysis_tab(window, title: str) -> None:
    tabs = window.maps_view.analysis
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.tabText(i) == title))


def run_file(app, window, name: str, shape, grid: str, block: str) -> None:
    window.controller.open_kernel_file(str(KERNELS / name))
    controls = window.controls
    for edit, value in zip((controls.m_spin, controls.k_spin, controls.n_spin), shape):
        edit.setValue(value)
    controls.grid_edit.setText(grid)
    controls.block_edit.setText(block)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    wait_idle(app, window)


def shared_memory_views(app, window, out_dir: Path, suffix: str) -> None:
    """The lockstep emulation's views: tiled's tables, an 8-way conflict, a
    barrier after an early return, a missing barrier, a divergent branch."""
    controls = window.controls
    controls.select_kernel("builtin", "tiled")
    controls.apply_preset("ragged")
    controls.backend_combo.setCurrentText("auto")
    window.run_action.trigger()
    wait_idle(app, window)
    analysis_tab(window, "Shared")
    shoot(app, window, out_dir / f"tiled_shared{suffix}.png")
    run_file(app, window, "transposed_tile.py", (32, 32, 32), "2x2", "16x16")
    analysis_tab(window, "Shared")
    window.maps_view.analysis.bank_table.selectRow(0)
    shoot(app, window, out_dir / f"transposed_tile_conflicts{suffix}.png")
    run_file(app, window, "early_return.py", (20, 16, 20), "2x2", "16x16")
    analysis_tab(window, "Shared")
    shoot(app, window, out_dir / f"early_return_barrier{suffix}.png")
    run_file(app, window, "missing_barrier.py", (16, 16, 16), "1x1", "16x16")
    analysis_tab(window, "Shared")
    shoot(app, window, out_dir / f"missing_barrier_race{suffix}.png")
    run_file(app, window, "divergent_branch.py", (32, 8, 64), "2x32", "32x1")
    analysis_tab(window, "Divergence")
    window.maps_view.analysis.divergence_table.selectRow(2)
    shoot(app, window, out_dir / f"divergent_branch_lanes{suffix}.png")
    analysis_tab(window, "Coalescing")
    window.maps_view.analysis.coalescing_table.selectRow(1)
    shoot(app, window, out_dir / f"divergent_branch_sectors{suffix}.png")


def main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="screenshots")
    parser.add_argument("--size", default="1580x980", help="window size WxH")
    parser.add_argument("--only", choices=("shared",), help="only the shared-memory views")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    width, height = (int(v) for v in args.size.split("x"))
    app = QtWidgets.QApplication(sys.argv[:1])
    settings = Settings(str(Path(tempfile.mkdtemp()) / "settings.ini"))
    window = MainWindow(settings=settings, confirm=lambda title, text: True)
    window.resize(width, height)
    window.move(0, 0)
    window.show()
    settle(app, 1.0)
    if args.only == "shared":
        shared_memory_views(app, window, out_dir, f"_{args.size}")
        window.close()
        return 0
    controls = window.controls
    for kernel, stem in (("grid-stride", "seed_grid_stride"), ("tid-rows", "seed_tid_rows")):
        controls.select_kernel("builtin", kernel)
        controls.apply_preset("seed-launch")
        controls.backend_combo.setCurrentText("auto")
        window.run_action.trigger()
        wait_idle(app, window)
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("count"))
        shoot(app, window, out_dir / f"{stem}_count.png")
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("writer"))
        window.maps_view.writer_combo.setCurrentText("warp")
        shoot(app, window, out_dir / f"{stem}_writer_warp.png")
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("oob"))
        shoot(app, window, out_dir / f"{stem}_oob.png")
        # The source beside the map, its first finding selected.
        analysis_tab(window, "Source")
        window.maps_view.source_view.select_finding(0)
        shoot(app, window, out_dir / f"{stem}_source.png")
        window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("count"))
        window.sweep_view.blocks_edit.setText("1,2,4,8")
        window.sweep_view.threads_edit.setText("32,128,512,1024")
        window.sweep_action.trigger()
        wait_idle(app, window)
        shoot(app, window, out_dir / f"{stem}_sweep.png")
        window.tabs.setCurrentIndex(0)
    # Issue 5: the warp view (coalescing) of both grid-stride walks, replay, diff.
    for kernel in ("grid-stride", "grid-stride-colmajor"):
        controls.select_kernel("builtin", kernel)
        controls.apply_preset("seed-launch")
        window.run_action.trigger()
        wait_idle(app, window)
        analysis_tab(window, "Coalescing")
        window.maps_view.analysis.coalescing_table.selectRow(2)  # the store to C
        shoot(app, window, out_dir / f"warp_view_{kernel}.png")
    analysis_tab(window, "Balance")
    shoot(app, window, out_dir / "load_balance.png")
    analysis_tab(window, "Occupancy")
    shoot(app, window, out_dir / "occupancy.png")
    controls.select_kernel("builtin", "grid-stride")
    controls.grid_edit.setText("2")
    controls.block_edit.setText("512")
    window.run_action.trigger()
    wait_idle(app, window)
    analysis_tab(window, "Replay")
    window.maps_view.analysis.replay_slider.setValue(5)
    shoot(app, window, out_dir / "replay.png")
    rows = window.results_view.results.rowCount()
    selection = window.results_view.selectionModel()
    from app.qt import QtCore
    flags = (QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect
             | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    selection.select(window.results_view.results.index(0, 0), flags)
    selection.select(window.results_view.results.index(rows - 1, 0),
                     QtCore.QItemSelectionModel.SelectionFlag.Select
                     | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    analysis_tab(window, "Diff")
    window.maps_view.analysis.diff_button.click()
    shoot(app, window, out_dir / "diff.png")
    window.sweep_view.gpu_combo.setCurrentText("H100 SXM")
    window.sweep_view.blocks_edit.setText("1,8,66,264")
    window.sweep_view.threads_edit.setText("64,256,1024")
    window.sweep_action.trigger()
    wait_idle(app, window)
    shoot(app, window, out_dir / "sweep_occupancy.png")
    window.tabs.setCurrentIndex(0)
    shared_memory_views(app, window, out_dir, "")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
