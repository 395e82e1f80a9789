"""How long the app's event loop stalls during what users do.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_gui.py
    xvfb-run -a .venv/bin/python benchmarks/bench_gui.py      # a real X server
    ... bench_gui.py --throttle          # a machine at half speed (issue 20)
    ... bench_gui.py --only sweep        # the actions whose names hold "sweep"
    ... bench_gui.py --why               # and what the GUI thread did in each longest stall

A 2 ms timer runs throughout; a stall is the longest gap between two of its
ticks while an action runs (the GUI could not repaint or take input for that
long).  Actions drive the real window through its controls and public
signals.  Prints one line per action, ``ACTION: max stall N ms``, then
``worst stall: N ms``.  Goal (issue 10): every action under 100 ms on 2 cores;
(issue 20) and with ``--throttle``: one busy process per core competes with
the app and its engine throughout, so each gets about half the machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.qt import QtCore, QtWidgets  # noqa: E402


class StackSampler:
    """Samples the GUI thread's Python stack every few milliseconds from a
    second thread (``--why``), so that the longest stall can be named: the
    frames seen most often between its two ticks.  (A sample waits for the
    GIL, so C++ work that holds it shows as the Python line that called it.)"""

    def __init__(self, interval_s: float = 0.003):
        import threading

        self.interval_s = interval_s
        self.main_id = threading.main_thread().ident
        self.samples: list[tuple[float, tuple[str, ...]]] = []
        #: the other threads' innermost frames (the engine's, the painters')
        self.others: list[tuple[float, tuple[str, ...]]] = []
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        import threading

        me = threading.get_ident()
        while self.running:
            frames = sys._current_frames()
            now = time.perf_counter()
            frame = frames.get(self.main_id)
            if frame is not None:
                self.samples.append((now, self._stack(frame)))
                del self.samples[:-4000]
            for ident, other in frames.items():
                if ident not in (self.main_id, me):
                    self.others.append((now, self._stack(other, 3)))
            del self.others[:-8000]
            time.sleep(self.interval_s)

    @staticmethod
    def _stack(frame, depth: int = 14) -> tuple[str, ...]:
        import traceback

        return tuple(f"{Path(entry.filename).name}:{entry.lineno} {entry.name}"
                     for entry in traceback.extract_stack(frame)[-depth:])

    def describe(self, start: float, end: float, lines: int = 14) -> str:
        """The frames that were on the stack in most samples between
        ``start`` and ``end``, innermost last."""
        from collections import Counter

        inside = [stack for when, stack in self.samples if start <= when <= end]
        if not inside:
            return "    (no sample: the GUI thread held the GIL throughout)"
        counts = Counter(frame for stack in inside for frame in set(stack))
        deepest = max(inside, key=lambda stack: sum(counts[f] for f in stack))
        others = Counter(" < ".join(reversed(stack)) for when, stack in self.others
                         if start <= when <= end)
        return "\n".join([f"    {counts[frame]:3d}/{len(inside)} {frame}"
                          for frame in deepest[-lines:]]
                         + ["    other threads meanwhile:"]
                         + [f"      {n:3d} {where}" for where, n in others.most_common(6)])


class StallMeter(QtCore.QObject):
    """Records the longest gap between ticks of a fast timer."""

    def __init__(self, interval_ms: int = 2):
        super().__init__()
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.last = time.perf_counter()
        self.worst = 0.0
        self.worst_at = (0.0, 0.0)

    def _tick(self) -> None:
        now = time.perf_counter()
        if now - self.last > self.worst:
            self.worst = now - self.last
            self.worst_at = (self.last, now)
        self.last = now

    def start(self) -> None:
        self.worst = 0.0
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> float:
        self._tick()
        self.timer.stop()
        return self.worst


def pump(app, seconds: float) -> None:
    """Run the event loop for ``seconds``, as ``app.exec()`` would: asleep
    while there is nothing to do."""
    end = time.perf_counter() + seconds
    pump_until(app, lambda: time.perf_counter() >= end)


def pump_until(app, done, timeout: float = 600) -> None:
    """Run the event loop until ``done()``, asleep between events as
    ``app.exec()`` is.  (This loop once called ``processEvents`` without
    waiting: 1.9 million calls in a sweep, a GUI thread that never slept and
    took the GIL from the engine's threads as no user's app does.)  A 5 ms
    timer wakes it to look at ``done()`` while no event comes."""
    loop = QtCore.QEventLoop()
    wake = QtCore.QTimer()
    wake.setInterval(5)
    wake.start()
    end = time.perf_counter() + timeout
    try:
        while not done() and time.perf_counter() < end:
            loop.processEvents(QtCore.QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    finally:
        wake.stop()


class Throttle:
    """One busy process per core, at the app's own priority, for as long as
    the ``with`` lasts (and never longer: killed on the way out, and each
    ends itself when this process is gone)."""

    BUSY = ("import os, time\n"
            "parent = os.getppid()\n"
            "while os.getppid() == parent:\n"
            "    end = time.perf_counter() + 0.5\n"
            "    while time.perf_counter() < end:\n"
            "        pass\n")

    def __init__(self, processes: int):
        self.processes = processes
        self.children: list = []

    def __enter__(self):
        import subprocess

        self.children = [subprocess.Popen([sys.executable, "-c", self.BUSY])
                         for _ in range(self.processes)]
        return self

    def __exit__(self, *exc) -> None:
        for child in self.children:
            child.kill()
        for child in self.children:
            child.wait()


def measure(app, meter: StallMeter, name: str, action, results: dict) -> None:
    """Run ``action`` from the event loop (as a click would), pump events
    until the app is idle again, and record the longest stall."""
    only = getattr(measure, "only", None)
    if only and not any(part in name for part in only.split(",")):
        return
    meter.start()
    QtCore.QTimer.singleShot(0, action)
    pump(app, 0.05)
    window = measure.window
    pump_until(app, lambda: not window.controller.busy and not window.maps_view.drawing
               and not window.export_action.exporting and not window.sweep_view.painting)
    pump(app, 0.2)
    results[name] = meter.stop() * 1e3
    print(f"{name}: max stall {results[name]:.0f} ms", flush=True)
    sampler = getattr(measure, "sampler", None)
    if sampler is not None:
        print(sampler.describe(*meter.worst_at), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4096, help="M = N of the large result")
    parser.add_argument("--throttle", action="store_true",
                        help="a busy process per core throughout: the machine at half speed")
    parser.add_argument("--only", help="measure only the actions whose names hold one of "
                                       "these (comma-separated)")
    parser.add_argument("--why", action="store_true",
                        help="sample the GUI thread's stack and print it for each longest stall")
    args = parser.parse_args()
    measure.only = args.only
    measure.sampler = StackSampler() if args.why else None
    if args.throttle:
        with Throttle(len(os.sched_getaffinity(0))):
            print(f"throttled: {len(os.sched_getaffinity(0))} busy processes", flush=True)
            return _bench(args)
    return _bench(args)


def _bench(args) -> int:
    app = QtWidgets.QApplication(sys.argv[:1])
    from app.main_window import MainWindow
    from app.settings import Settings

    settings = Settings(str(Path(tempfile.mkdtemp()) / "settings.ini"))
    window = MainWindow(settings=settings, confirm=lambda title, text: True)
    window.resize(1280, 800)
    window.show()
    measure.window = window
    pump(app, 0.5)
    meter = StallMeter()
    results: dict[str, float] = {}
    controls = window.controls

    def run(kernel: str, m: int, k: int, n: int, grid: str, block: str) -> None:
        controls.select_kernel("builtin", kernel)
        controls.m_spin.setValue(m)
        controls.k_spin.setValue(k)
        controls.n_spin.setValue(n)
        controls.grid_edit.setText(grid)
        controls.block_edit.setText(block)
        controls.backend_combo.setCurrentText("cpu")
        window.run_action.trigger()

    # 20 small results first, for the table.
    for i in range(19):
        run("grid-stride", 256, 16, 256, str(1 + i), "128")
        pump_until(app, lambda: not window.controller.busy)
    big = args.size
    measure(app, meter, f"open a {big}x{big} result",
            lambda: run("grid-stride", big, 16, big, "2048", "256"), results)

    slowest: list[tuple[float, str]] = []

    def every_map() -> None:
        for index in range(window.maps_view.map_combo.count()):
            if window.maps_view.map_combo.itemData(index) is not None:
                began = time.perf_counter()
                window.maps_view.map_combo.setCurrentIndex(index)
                app.processEvents()
                # (a large map is drawn off the GUI thread: until it is on screen)
                pump_until(app, lambda: not window.maps_view.drawing)
                slowest.append((time.perf_counter() - began, window.maps_view.map_combo.itemText(index)))

    measure(app, meter, "switch through every map type", every_map, results)
    if slowest:
        seconds, label = max(slowest)
        print(f"  (slowest: {label!r}, {seconds * 1e3:.0f} ms)", flush=True)
    window.maps_view.map_combo.setCurrentIndex(window.maps_view.map_combo.findData("count"))
    pump_until(app, lambda: not window.maps_view.drawing)  # (hover the count map, drawn)

    def hover() -> None:
        plot = window.maps_view.heatmap.heatmap.plot
        for step in range(60):
            point = QtCore.QPointF(step * big / 60, step * big / 60)
            window.maps_view.heatmap.scene().sigMouseMoved.emit(plot.vb.mapViewToScene(point))
            app.processEvents()

    measure(app, meter, "hover across it", hover, results)

    def select_rows() -> None:
        for row in range(min(20, window.results_view.results.rowCount())):
            window.results_view.selectRow(row)
            app.processEvents()

    measure(app, meter, "select each of 20 results", select_rows, results)

    def sweep() -> None:
        controls.select_kernel("builtin", "grid-stride")
        controls.m_spin.setValue(512)
        controls.k_spin.setValue(16)
        controls.n_spin.setValue(512)
        window.sweep_view.blocks_edit.setText("1,2,4,8,16,32,64,128")
        window.sweep_view.threads_edit.setText("32,64,96,128,160,256,512,1024")
        window.sweep_view.run_requested.emit()

    measure(app, meter, "a 64-configuration sweep", sweep, results)

    def zoom_matrix() -> None:
        view = window.sweep_view.matrix
        for _ in range(10):  # (its cells take the new size once it settles)
            view.resize(view.width() + 8, view.height() + 6)
            app.processEvents()

    measure(app, meter, "zoom the sweep matrix", zoom_matrix, results)
    window.tabs.setCurrentIndex(0)
    window.results_view.selectRow(19)
    pump(app, 0.2)
    out = Path(tempfile.mkdtemp())
    measure(app, meter, "export the large map", lambda: window.export_action.export_to(
        str(out / "map.png"), background=True), results)
    if "export the large map" in results and not (out / "map.png").is_file():
        raise RuntimeError("the large map was not exported")
    print(f"worst stall: {max(results.values()):.0f} ms", flush=True)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
