"""Run requests and sweeps off the GUI thread, with progress and cancel.

A job runs in a QThread and talks to the GUI only through queued signals;
it never touches a widget.  Cancel sets a flag the engine checks between
chunks of threads (within ~50 ms), and ends the child process of a simulator
or kernel-file run at once.  ``synchronous=True`` (or THREADMAP_SYNCHRONOUS=1)
runs jobs in the calling thread instead, for deterministic tests.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import traceback
from collections.abc import Callable

from kernels import (
    KERNEL_FILE_TIME_LIMIT,
    RunCancelled,
    RunRequest,
    ThreadMapError,
    compile_ahead,
    confirm,
    hunt,
    run,
    run_sweep,
    with_occupancy,
)

from ..background import yield_to_the_gui
from ..qt import QtCore


def run_options(request: RunRequest) -> dict:
    """Kernel files run in a child process with a time limit: an endless loop
    there cannot be interrupted from a thread."""
    if request.kernel_file:
        return {"isolate": True, "time_limit": KERNEL_FILE_TIME_LIMIT}
    return {}


def attach_occupancy(result, assumed_registers: int):
    """The result with its occupancy on every GPU model, worked out here in the
    worker (ptxas, ~1 s per architecture, once per kernel), so that no view
    reads the kernel again or makes the GUI wait.  A kernel that cannot be
    read again (a file deleted meanwhile) keeps an empty table."""
    try:
        return with_occupancy(result, assumed_registers)
    except ThreadMapError:
        return result


class _Job(QtCore.QThread):
    """One unit of work; its body calls ``emit_*`` which become queued signals."""

    progressed = QtCore.Signal(float, str)
    produced = QtCore.Signal(object)
    #: (a first answer, the same with a second backend's run added)
    confirmed = QtCore.Signal(object)
    failed = QtCore.Signal(str)
    was_cancelled = QtCore.Signal()

    def __init__(self, body: Callable[[_Job], None]):
        super().__init__()
        self.body = body
        self.cancel_event = threading.Event()

    def check_cancel(self) -> None:
        if self.cancel_event.is_set():
            raise RunCancelled("cancelled")

    def run(self) -> None:  # QThread entry point
        yield_to_the_gui()
        try:
            self.body(self)
        except RunCancelled:
            self.was_cancelled.emit()
        except ThreadMapError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # a bug of ours: report it, keep the app alive
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.failed.emit(f"unexpected error: {detail}")


class Worker(QtCore.QObject):
    """Starts one job at a time and relays its signals to the GUI thread."""

    busy_changed = QtCore.Signal(bool)
    progress = QtCore.Signal(float, str)
    run_finished = QtCore.Signal(object)  # RunResult
    #: (first answer, confirmed result): the GPU's run of a shown result came
    run_confirmed = QtCore.Signal(object)
    sweep_cell = QtCore.Signal(object)  # SweepCell
    sweep_finished = QtCore.Signal()
    hunt_finished = QtCore.Signal(object)  # kernels.HuntReport
    failed = QtCore.Signal(str)
    cancelled = QtCore.Signal()

    def __init__(self, parent=None, synchronous: bool | None = None):
        super().__init__(parent)
        if synchronous is None:
            synchronous = os.environ.get("THREADMAP_SYNCHRONOUS") == "1"
        self.synchronous = synchronous
        self._job: _Job | None = None
        self._succeeded = True
        self._success_signal = None

    @property
    def busy(self) -> bool:
        return self._job is not None

    def start_run(self, request: RunRequest, assumed_registers: int = 32) -> None:
        def body(job: _Job) -> None:
            # (on a GPU machine auto answers from the CPU emulation at once,
            # and the GPU's run follows below)
            result = run(request, progress=job.progressed.emit, cancel=job.cancel_event.is_set,
                         gpu_follows=True, **run_options(request))
            job.progressed.emit(1.0, "measuring the kernel's registers for the occupancy figures")
            job.check_cancel()
            result = attach_occupancy(result, assumed_registers)
            job.check_cancel()  # cancelled meanwhile: the result is dropped, as asked
            job.produced.emit(result)
            if result.follows:
                job.progressed.emit(0.0, "the GPU's run of the same launch: its times and "
                                         "its own verdict")
                confirmed = confirm(result, progress=job.progressed.emit,
                                    cancel=job.cancel_event.is_set, **run_options(request))
                job.check_cancel()
                job.confirmed.emit((result, confirmed))
            # An instant-tier answer of a built-in kernel: its compiled tier
            # compiles meanwhile, in a process of its own, for the next, larger
            # run (here, off the GUI thread: it reads the kernel's plan).
            compile_ahead(result)

        self._start(body, self.run_finished, None)

    def start_sweep(self, base: RunRequest, grids, blocks, assumed_registers: int = 32) -> None:
        def run_one(request: RunRequest, progress, cancel):
            return run(request, progress=progress, cancel=cancel, **run_options(request))

        def body(job: _Job) -> None:
            for cell in run_sweep(base, grids, blocks, progress=job.progressed.emit,
                                  cancel=job.cancel_event.is_set, run_one=run_one):
                if cell.result is not None:
                    # (after the run: on a GPU, numba's own register count of the
                    # compiled kernel is then there to be read)
                    cell = dataclasses.replace(
                        cell, result=attach_occupancy(cell.result, assumed_registers))
                job.check_cancel()
                job.produced.emit(cell)

        self._start(body, self.sweep_cell, self.sweep_finished)

    def start_hunt(self, base: RunRequest, budget: float, assumed_registers: int = 32) -> None:
        def body(job: _Job) -> None:
            report = hunt(base, budget=budget, progress=job.progressed.emit,
                          cancel=job.cancel_event.is_set)
            if report.result is not None:
                report.result = attach_occupancy(report.result, assumed_registers)
            job.check_cancel()
            job.produced.emit(report)

        self._start(body, self.hunt_finished, None)

    def cancel(self) -> None:
        if self._job is not None:
            self._job.cancel_event.set()

    def wait(self, msecs: int = 30000) -> bool:
        """Block until the current job ends (for tests and shutdown)."""
        job = self._job
        return True if job is None else job.wait(msecs)

    def _start(self, body, item_signal, success_signal) -> None:
        if self._job is not None:
            raise RuntimeError("a run is already in progress")
        job = _Job(body)
        self._job = job
        self._succeeded = True
        self._success_signal = success_signal
        # Signal-to-signal and method connections whose receiver (self) lives
        # in the GUI thread: queued, so they run there whatever thread emits.
        queued = QtCore.Qt.ConnectionType.QueuedConnection if not self.synchronous \
            else QtCore.Qt.ConnectionType.DirectConnection
        job.progressed.connect(self.progress, queued)
        job.produced.connect(item_signal, queued)
        job.confirmed.connect(self.run_confirmed, queued)
        job.failed.connect(self._on_job_failed, queued)
        job.was_cancelled.connect(self._on_job_cancelled, queued)
        self.busy_changed.emit(True)
        if self.synchronous:
            job.run()
            self._on_job_finished()
        else:
            job.finished.connect(self._on_job_finished, queued)
            # On the event loop's next pass: what the start set off on the GUI
            # thread (a sweep's new matrix, the switch to its tab) is laid out
            # before the engine's thread competes for the interpreter; the two
            # together stalled a busy machine's window 110-130 ms.
            QtCore.QTimer.singleShot(0, job, job.start)

    @QtCore.Slot(str)
    def _on_job_failed(self, message: str) -> None:
        self._succeeded = False
        self.failed.emit(message)

    @QtCore.Slot()
    def _on_job_cancelled(self) -> None:
        self._succeeded = False
        self.cancelled.emit()

    @QtCore.Slot()
    def _on_job_finished(self) -> None:
        job, self._job = self._job, None
        if job is not None:
            job.wait()
            job.deleteLater()
        self.busy_changed.emit(False)
        if self._succeeded and self._success_signal is not None:
            self._success_signal.emit()
