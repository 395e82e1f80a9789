"""Screenshots of the app as a person sees it (run under a real X server):

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/take_screenshots.py OUT_DIR

Drives the window through its own controls (seed preset, tid-rows, sweeps)
and grabs the whole screen after each step.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from app.main_window import MainWindow
from app.qt import QtWidgets
from app.settings import Settings


def settle(app, seconds=0.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def wait_idle(app, window, timeout=600):
    end = time.monotonic() + timeout
    settle(app, 0.3)
    while window.controller.busy and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.05)
    settle(app, 0.5)


def shoot(app, window, path: Path):
    settle(app, 0.5)
    screen = app.primaryScreen()
    screen.grabWindow(0).save(str(path))
    print("wrote", path, flush=True)


def main(out: str) -> int:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    app = QtWidgets.QApplication(sys.argv)
    settings = Settings(str(Path(tempfile.mkdtemp()) / "settings.ini"))
    window = MainWindow(settings=settings, confirm=lambda title, text: True)
    window.resize(1580, 980)
    window.move(0, 0)
    window.show()
    settle(app, 1.0)
    controls = window.controls
    for kernel, stem in (("grid-stride", "seed_grid_stride"), ("tid-rows", "seed_tid_rows")):
        controls.select_kernel("builtin", kernel)
        controls.apply_preset("seed")
        controls.backend_combo.setCurrentText("auto")
        window._on_run_triggered()
        wait_idle(app, window)
        window.map_combo.setCurrentIndex(window.map_combo.findData("count"))
        shoot(app, window, out_dir / f"{stem}_count.png")
        window.map_combo.setCurrentIndex(window.map_combo.findData("writer"))
        window.writer_combo.setCurrentText("warp")
        shoot(app, window, out_dir / f"{stem}_writer_warp.png")
        window.map_combo.setCurrentIndex(window.map_combo.findData("oob"))
        shoot(app, window, out_dir / f"{stem}_oob.png")
        window.map_combo.setCurrentIndex(window.map_combo.findData("count"))
        window.sweep_view.blocks_edit.setText("1,2,4,8")
        window.sweep_view.threads_edit.setText("32,128,512,1024")
        window._on_sweep_triggered()
        wait_idle(app, window)
        shoot(app, window, out_dir / f"{stem}_sweep.png")
        window.tabs.setCurrentIndex(0)
    # Issue 5: the warp view (coalescing) of both grid-stride walks, replay, diff.
    for kernel in ("grid-stride", "grid-stride-colmajor"):
        controls.select_kernel("builtin", kernel)
        controls.apply_preset("seed")
        window._on_run_triggered()
        wait_idle(app, window)
        window.analysis.setCurrentIndex(0)
        window.analysis.coalescing_table.selectRow(2)  # the store to C
        shoot(app, window, out_dir / f"warp_view_{kernel}.png")
    window.analysis.setCurrentIndex(1)
    shoot(app, window, out_dir / "load_balance.png")
    window.analysis.setCurrentIndex(2)
    shoot(app, window, out_dir / "occupancy.png")
    controls.select_kernel("builtin", "grid-stride")
    controls.grid_edit.setText("2")
    controls.block_edit.setText("512")
    window._on_run_triggered()
    wait_idle(app, window)
    window.analysis.setCurrentIndex(3)
    window.analysis.replay_slider.setValue(5)
    shoot(app, window, out_dir / "replay.png")
    rows = window.results.rowCount()
    selection = window.table.selectionModel()
    from app.qt import QtCore
    flags = (QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect
             | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    selection.select(window.results.index(0, 0), flags)
    selection.select(window.results.index(rows - 1, 0),
                     QtCore.QItemSelectionModel.SelectionFlag.Select
                     | QtCore.QItemSelectionModel.SelectionFlag.Rows)
    window.analysis.setCurrentIndex(4)
    window.analysis.diff_button.click()
    shoot(app, window, out_dir / "diff.png")
    window.sweep_view.gpu_combo.setCurrentText("H100 SXM")
    window.sweep_view.blocks_edit.setText("1,8,66,264")
    window.sweep_view.threads_edit.setText("64,256,1024")
    window._on_sweep_triggered()
    wait_idle(app, window)
    shoot(app, window, out_dir / "sweep_occupancy.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "screenshots"))
