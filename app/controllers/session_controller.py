"""The controller: owns the worker, checks requests through the engine's API
before they run, and puts what comes back into the session.

Nothing here draws; a refused request becomes an error in the session, and
what was on screen stays.
"""
from __future__ import annotations

import contextlib
import dataclasses

from collections.abc import Callable

from kernels import (
    SLOW_SIMULATOR_SECONDS,
    ArgumentsNeeded,
    FileWatcher,
    RunRequest,
    RunResult,
    ThreadMapError,
    default_launch,
    describe_request,
    describe_seconds,
    format_dims,
    kernel_names,
    resolve_backend,
    simulator_estimate,
    stop_child_processes,
    sweep_defaults,
    sweep_requests,
)

from ..app_words import in_app_words
from ..export import run_title
from ..models.session import Session
from ..qt import QtCore
from .worker import Worker

#: asks the user a yes/no question: (title, text) -> yes
Confirm = Callable[[str, str], bool]
#: How often the shown kernel file is looked at, to follow its saves.
FOLLOW_INTERVAL_MS = 400


class SessionController(QtCore.QObject):
    """Runs, sweeps, kernel files and comparisons, on behalf of the views."""

    #: True while a run or a sweep is in progress
    busy_changed = QtCore.Signal(bool)
    progress = QtCore.Signal(float, str)
    #: the run or sweep in progress stopped at the user's request
    cancelled = QtCore.Signal()

    def __init__(self, session: Session, confirm: Confirm, synchronous: bool | None = None,
                 parent=None):
        super().__init__(parent)
        self.session = session
        self.confirm = confirm
        self.worker = Worker(self, synchronous=synchronous)
        self.worker.busy_changed.connect(self.busy_changed)
        self.worker.progress.connect(self.progress)
        self.worker.run_finished.connect(self._on_run_finished)
        self.worker.run_confirmed.connect(self._on_run_confirmed)
        self.worker.sweep_cell.connect(session.add_sweep_cell)
        self.worker.sweep_finished.connect(self._on_sweep_finished)
        self.worker.hunt_finished.connect(self._on_hunt_finished)
        #: the last hunt's report (kernels.HuntReport), for its list of cases
        self.last_hunt = None
        self.worker.failed.connect(self._on_failed)
        self.worker.cancelled.connect(self._on_cancelled)
        # Follow the file: when the kernel file of the shown result is saved,
        # its request runs again and the new result joins the table beside
        # the old one.
        self.follow = True
        self._watcher: FileWatcher | None = None
        self._watched_request: RunRequest | None = None
        #: the arguments the watched file's THREADMAP_ARGS gave when it was
        #: first shown (a run on them follows their edits)
        self._file_arguments: tuple | None = None
        self._saved_while_busy = False
        #: the request a saved file's rerun runs again, while it runs
        self._rerun_of: RunRequest | None = None
        self._follow_timer = QtCore.QTimer(self)
        self._follow_timer.setInterval(FOLLOW_INTERVAL_MS)
        self._follow_timer.timeout.connect(self._look_at_the_file)
        self._follow_timer.start()
        session.current_changed.connect(self._watch_shown)
        self.worker.busy_changed.connect(self._on_busy_for_follow)

    @property
    def busy(self) -> bool:
        return self.worker.busy

    # -- runs --------------------------------------------------------------------------

    def run(self, request: RunRequest) -> bool:
        """Start ``request`` off the GUI thread; False (with the reason in the
        session) when it is refused or declined."""
        if self.busy:
            return False
        backend = self._checked_backend(request, gpu_follows=True)
        if backend is None:
            return False
        if backend[0] == "sim" and not self._simulator_ok(request.with_(backend="sim"), 1):
            return False
        self.session.clear_error()
        self.session.tell(f"running on {backend[0]}: {backend[1]}", 0)
        self.worker.start_run(request, self.session.assumed_registers)
        return True

    def sweep(self, base: RunRequest, grids, blocks) -> bool:
        """Start a sweep of ``base`` over grids x blocks (dims tuples)."""
        if self.busy:
            return False
        try:
            requests = sweep_requests(base, grids, blocks)
        except ThreadMapError as exc:
            self.session.raise_sweep_error(str(exc))
            return False
        backend = self._checked_backend(requests[-1])
        if backend is None:
            return False
        largest = max(requests, key=lambda r: r.total_threads)
        if backend[0] == "sim" and not self._simulator_ok(largest.with_(backend="sim"),
                                                           len(requests)):
            return False
        self.session.clear_error()
        self.session.begin_sweep(grids, blocks)
        self.worker.start_sweep(base, grids, blocks, self.session.assumed_registers)
        return True

    def hunt(self, base: RunRequest, budget: float = 60.0) -> bool:
        """Search, off the GUI thread, for the smallest shape and launch where
        ``base``'s kernel fails; the failing case is shown when found.  A
        kernel run as it is is searched on its Arguments, resized
        (search.hunt_cases), and held to its Reference if it has one."""
        if self.busy:
            return False
        asked = base.backend
        # (auto would pick the simulator for some kernels: the hunt runs many cases)
        base = base.with_(backend="cpu" if base.backend == "auto" else base.backend)
        try:  # (the kernel, its scalars and the backend are checked as for a run)
            resolve_backend(base)
        except ThreadMapError as exc:
            self.session.raise_error(str(exc))
            return False
        self.session.clear_error()
        self.session.tell(f"looking for a failing case of {base.kernel_label} (at most "
                          f"{budget:.0f} s)...", 0)
        self._hunt_asked = asked
        self.worker.start_hunt(base, budget, self.session.assumed_registers)
        return True

    def _on_hunt_finished(self, report) -> None:
        if report.result is not None:
            # (the hunt ran auto's cases on the CPU: it was asked for on auto)
            found = dataclasses.replace(report.result, asked_backend=self._hunt_asked)
            # The failing case is shown, and is a row of the table to click;
            # the Run panel keeps the user's M, K, N and launch (it had taken
            # the case's 1 x 1 x 1, and the settings kept it for the next start).
            with self.session.holding_run_panel():
                self.session.add_result(found)
            self.session.tell(report.summary(), 0)
        elif report.failing is not None:  # it hung or crashed: no maps to show
            self.session.raise_error(report.summary())
        else:
            self.session.tell(report.summary(), 0)
        self.last_hunt = report

    def cancel(self) -> None:
        self.worker.cancel()

    def shut_down(self, wait_ms: int = 15000) -> bool:
        """Cancel what runs and end any child process at once; False if the
        current step (a compile, a GPU launch) has not ended within ``wait_ms``."""
        if not self.busy:
            return True
        self.worker.cancel()
        stop_child_processes()
        return self.worker.wait(wait_ms)

    def wait(self, msecs: int = 30000) -> bool:
        return self.worker.wait(msecs)

    def _checked_backend(self, request: RunRequest,
                         gpu_follows: bool = False) -> tuple[str, str] | None:
        try:
            return resolve_backend(request, gpu_follows)
        except ThreadMapError as exc:
            self.session.raise_error(str(exc))
            return None

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
            f"{request.shape_label}) will take at least "
            f"{describe_seconds(seconds)}. You can cancel it at any time. Run it?")

    def _on_run_finished(self, result: RunResult) -> None:
        rerun_of, self._rerun_of = self._rerun_of, None
        with self.session.showing_a_rerun(rerun_of) if rerun_of else contextlib.nullcontext():
            self.session.add_result(result)
        if result.follows:
            self.session.tell(f"{in_app_words(run_title(result))}; the GPU's run of the same "
                              "launch follows...", 0)
        else:
            self.session.tell(f"done: {in_app_words(run_title(result))}")

    def _on_run_confirmed(self, pair) -> None:
        first, confirmed = pair
        if self.session.replace_result(first, confirmed):
            self.session.tell(confirmed.confirmation.line(), 0 if not
                              confirmed.confirmation.agrees else 10000)

    def _on_sweep_finished(self) -> None:
        self.session.finish_sweep()
        self.session.tell(f"sweep done: {len(self.session.sweep_cells)} configurations")

    def _on_failed(self, message: str) -> None:
        self._rerun_of = None
        self.session.raise_error(message)
        self.session.tell("the run failed; the previous results are still shown")

    def _on_cancelled(self) -> None:
        self._rerun_of = None
        self.session.tell("cancelled; the previous results are still shown")
        self.cancelled.emit()

    # -- following the kernel file -------------------------------------------------------------

    def set_follow(self, on: bool) -> None:
        """Run the shown request again when its kernel file is saved (on by default)."""
        self.follow = on
        self._watch_shown(self.session.current)

    def _watch_shown(self, result) -> None:
        request = getattr(result, "request", None)
        if request is not None:
            request = result.asked_request  # (run again as asked: auto stays auto)
        if not self.follow or request is None or not request.kernel_file:
            self._watcher = self._watched_request = None
            return
        if self._watched_request is not None and \
                self._watched_request.kernel_file == request.kernel_file and self._watcher:
            self._watched_request = request  # same file: keep what was seen of it
            return
        self._watcher = FileWatcher(request.kernel_file)
        self._watched_request = request
        on_file = _file_described(request)
        self._file_arguments = on_file.arguments if on_file is not None else None

    def _look_at_the_file(self) -> None:
        if self._watcher is None or not self._watcher.changed():
            return
        if self.busy:
            self._saved_while_busy = True
            return
        self._rerun_saved()

    def _on_busy_for_follow(self, busy: bool) -> None:
        if not busy and self._saved_while_busy:
            self._saved_while_busy = False
            QtCore.QTimer.singleShot(0, self._rerun_saved)

    def _rerun_saved(self) -> None:
        request = shown = self._watched_request
        if request is None or self.busy:
            return
        try:  # (its Function list as it reads now: a kernel renamed or added)
            names = kernel_names(request.kernel_file, follow_links=False)
        except ThreadMapError:
            pass  # (said by the run, which the file refuses the same way)
        else:
            self.session.kernel_file_saved.emit(request.kernel_file, tuple(names))
        said = "running it again"
        # A run on the file's THREADMAP_ARGS follows an edit of them too (one
        # on arguments typed in the app keeps those).
        if request.arguments and request.arguments == self._file_arguments:
            now = _file_described(request)
            if now is not None and now.arguments != request.arguments:
                request = self._watched_request = now
                said = f"running it again on its new THREADMAP_ARGS: {now.shape_label}"
            self._file_arguments = None if now is None else now.arguments
        self.session.tell(f"{request.kernel_label} was saved: {said}", 0)
        self._rerun_of = shown  # (before the run: a synchronous one ends within it)
        if not self.run(request):
            self._rerun_of = None
            # refused before it started (a save that does not parse): said
            # once, where "running it again" had stayed in the status bar
            self.session.tell(f"{request.kernel_label} was saved but cannot run (the reason "
                              "is above the map); the last good result is still shown")

    # -- kernels, results ------------------------------------------------------------------

    def open_kernel_file(self, path: str) -> bool:
        """Add a kernel file (parsed, never run); the reason when it has no kernel."""
        try:
            names = kernel_names(path, follow_links=False)
        except ThreadMapError as exc:
            self.session.raise_error(str(exc))
            return False
        self.session.clear_error()
        self.session.kernel_file_opened.emit(str(path), tuple(names))
        return True

    def sweep_defaults(self, request: RunRequest) -> tuple[str, str]:
        """The grids and blocks a sweep of ``request``'s kernel tries by
        default (2-D for a 2-D kernel); ThreadMapError where the kernel cannot
        be read.  It reads the kernel's plan, as ``file_launch`` does: parsing
        only, milliseconds."""
        return sweep_defaults(request)

    def file_arguments(self, request: RunRequest) -> tuple[RunRequest | None, bool]:
        """(``request`` with the shapes, dtype and scalars, or the arguments,
        that its kernel file describes in THREADMAP_ARGS (read, never run), or
        None when it describes none; whether the kernel needs its arguments
        described: it is not C = A @ B and nothing describes them).  A
        description that does not parse or fit is said; any other reason the
        file cannot be read yet is said by Run, as before."""
        unfit = ""
        try:
            described = describe_request(request)
        except ArgumentsNeeded as exc:
            self.session.tell(f"{exc}: in Arguments", 0)
            return None, True
        except ThreadMapError as exc:
            if "THREADMAP_ARGS" not in str(exc):
                return None, False
            # Three arrays described otherwise than as C = A @ B (a vector
            # add, or a typo): run as it is, and say what did not fit.
            try:
                described = describe_request(request, as_it_is_unless_matmul=True)
            except ThreadMapError:
                described = request.with_(arguments=())
            if not described.arguments:
                self.session.raise_error(str(exc))
                return None, False
            unfit = f" (read as C = A @ B they do not fit: {exc})"
        if described == request:
            return None, False
        if described.arguments:
            self.session.tell(f"{described.kernel_label} runs as it is, on the file's "
                              f"THREADMAP_ARGS: {described.shape_label}{unfit}", 0)
            return described, False
        self.session.tell(f"shape {described.m}x{described.k}x{described.n} "
                          f"{described.dtype}: the file's THREADMAP_ARGS")
        return described, False

    def file_launch(self, request: RunRequest) -> RunRequest | None:
        """``request`` with its kernel file's own launch (or a guessed one, said
        so), or None when the request cannot be read yet."""
        try:
            chosen = default_launch(request)
        except ThreadMapError:
            return None
        self.session.tell(f"launch {format_dims(chosen.grid)} x {format_dims(chosen.block)}: "
                          f"{chosen.launch_source}")
        return chosen

    def compare(self, chosen: list[RunResult]) -> bool:
        """Show the difference of exactly two runs."""
        if len(chosen) != 2:
            self.session.raise_error(f"select exactly two runs in the results table to compare "
                                     f"({len(chosen)} selected)")
            return False
        try:
            self.session.compare(chosen[0], chosen[1])
        except ThreadMapError as exc:
            self.session.raise_error(str(exc))
            return False
        self.session.clear_error()
        return True

    def open_sweep_cell(self, cell) -> None:
        """Show a sweep configuration's result (added to the results once)."""
        if cell.result is None:
            return
        if self.session.row_of(cell.result) is None:
            self.session.add_result(cell.result)
        else:
            self.session.show(cell.result)


def _file_described(request: RunRequest):
    """``request`` (a described run) on its kernel file's own THREADMAP_ARGS
    as they read now, the launch and the rest kept; None when the file
    describes none, or they do not parse."""
    if not request.arguments:
        return None
    described = {a.name for a in request.arguments}
    base = request.with_(arguments=(), scalars=tuple(
        (name, value) for name, value in request.scalars if name not in described))
    try:
        found = describe_request(base, as_it_is_unless_matmul=True)
    except ThreadMapError:
        return None
    return found if found.arguments else None
