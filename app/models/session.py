"""The session: every result of this sitting, the one on screen, what is
drawn of it, the diff pair and the sweep, with a signal for each change.

Views render what the session gives them and change it only through its
methods; the controller puts results in.  Qt-light: a QObject for its
signals, nothing else of Qt.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from kernels import (
    ASSUMED_REGISTERS,
    RunRequest,
    RunResult,
    Stowage,
    SweepCell,
    ThreadMapError,
    bytes_in_memory,
    counted,
    format_bytes,
)

from ..app_words import in_app_words
from ..background import yield_to_the_gui
from ..qt import QtCore
from .map_images import (
    ANALYSIS_MAPS,
    MapImage,
    diff_map,
    make_map,
    replay_map,
    warp_map,
    written_map_names,
)

#: the per-warp maps and the analysis table each one draws a row of
WARP_MAPS = ("sectors", "ways", "lanes")


def rel_error_text(result: RunResult) -> str:
    """The relative error for a table cell: ``no reference`` (or ``not
    compared``, the reference having failed) where there was nothing to
    compare with, never ``nan``."""
    verdict = result.verdict
    errors = verdict.errors
    if verdict.reference_note and not math.isfinite(errors.rel_error):
        return "no reference" if verdict.reference_note.startswith("no reference") \
            else "not compared"
    return f"{errors.rel_error:.2e}" if errors.computed else "not computed"


def default_memory_budget() -> int:
    """A quarter of this machine's memory, in bytes."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError, AttributeError):
        return 4 << 30


class Session(QtCore.QObject):
    """What the user has run and is looking at."""

    #: a result was added at this row of :attr:`results`
    result_added = QtCore.Signal(int)
    #: the result on screen changed (RunResult)
    current_changed = QtCore.Signal(object)
    #: what is drawn changed: the map, its writer kind, a warp row, the replay step, the diff pair
    map_changed = QtCore.Signal()
    #: the two runs compared, or None
    diff_changed = QtCore.Signal(object)
    #: a sweep began over (blocks, threads per block)
    sweep_started = QtCore.Signal(tuple, tuple)
    sweep_cell_added = QtCore.Signal(object)  # SweepCell
    sweep_finished = QtCore.Signal(int)  # configurations done
    #: registers per thread assumed where none were measured
    assumed_registers_changed = QtCore.Signal(int)
    #: a kernel file was opened: (path, its kernels' names)
    kernel_file_opened = QtCore.Signal(str, tuple)
    #: a kernel file open here was saved: (path, its kernels' names as it reads now)
    kernel_file_saved = QtCore.Signal(str, tuple)
    #: an error to show (message, whether it is about the run asked for)
    error_raised = QtCore.Signal(str, bool)
    sweep_error_raised = QtCore.Signal(str)
    error_cleared = QtCore.Signal()
    #: a passing message for the status bar (text, milliseconds; 0 = until replaced)
    told = QtCore.Signal(str, int)
    #: the result at this row went to disk, or came back (the row's object changed)
    result_moved = QtCore.Signal(int)
    #: (row, the result stowed or brought back), from the stowing thread
    _moved_off_thread = QtCore.Signal(int, object, bool)

    def __init__(self, parent=None, memory_budget: int | None = None,
                 synchronous: bool = False):
        super().__init__(parent)
        #: bytes of maps kept in memory; older results go to disk past it
        self.memory_budget = memory_budget or default_memory_budget()
        self.synchronous = synchronous
        self._stowage: Stowage | None = None
        self._mover = None if synchronous else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="stowing", initializer=yield_to_the_gui)
        #: rows on their way to disk or back
        self._moving: set[int] = set()
        #: the row asked to be shown while it comes back from disk
        self._wanted: int | None = None
        self._clock = itertools.count()
        self._shown_at: dict[int, int] = {}
        self._moved_off_thread.connect(self._on_moved, QtCore.Qt.ConnectionType.QueuedConnection)
        self.results: list[RunResult] = []
        self.current: RunResult | None = None
        #: the runs selected in the results table (two of them can be compared)
        self.selection: list[RunResult] = []
        self.diff_pair: tuple[RunResult, RunResult] | None = None
        self.diff_summary = ""
        self.sweep_axes: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        self.sweep_cells: list[SweepCell] = []
        self.map_name = "count"
        self.writer_kind = "thread"
        #: the analysis-table row each per-warp map shows
        self.warp_rows: dict[str, int] = {name: 0 for name in WARP_MAPS}
        self.replay_iteration = 0
        self.assumed_registers = ASSUMED_REGISTERS
        #: while above 0, the Run panel keeps the user's request instead of
        #: following the result shown (see ``holding_run_panel``)
        self._panel_held = 0
        #: while a saved kernel file's rerun is put on screen: the request it
        #: ran again (see ``showing_a_rerun``)
        self.rerun_of: RunRequest | None = None

    # -- results ------------------------------------------------------------------------

    @contextmanager
    def holding_run_panel(self) -> Iterator[None]:
        """While a result the user did not ask for in the Run panel is put on
        screen (the failing case a hunt found), the panel keeps the user's own
        request (Find a failing case had left M, K and N at 1, 1, 1, and the
        settings kept them for the next start)."""
        self._panel_held += 1
        try:
            yield
        finally:
            self._panel_held -= 1

    @contextmanager
    def showing_a_rerun(self, of: RunRequest) -> Iterator[None]:
        """While the rerun of a saved kernel file's shown run (of request
        ``of``) is put on screen: the Run panel takes its request only where
        it still shows ``of`` (Arguments or a launch typed and not yet run
        were replaced by the rerun's, and lost)."""
        self.rerun_of = of
        try:
            yield
        finally:
            self.rerun_of = None

    @property
    def run_panel_follows(self) -> bool:
        """Whether the Run panel shows the request of the result shown."""
        return self._panel_held == 0

    def add_result(self, result: RunResult) -> int:
        """Keep ``result`` and show it; returns its row."""
        self.results.append(result)
        row = len(self.results) - 1
        self.result_added.emit(row)
        self.show(result)
        return row

    def replace_result(self, old: RunResult, new: RunResult) -> bool:
        """Put ``new`` in ``old``'s row (the same run with a second backend's
        figures added), and on screen where ``old`` was; False when ``old``
        is no longer kept as it was (moved to disk meanwhile)."""
        row = self.row_of(old)
        if row is None:
            return False
        self.results[row] = new
        self.selection = [new if r is old else r for r in self.selection]
        if self.diff_pair is not None:
            self.diff_pair = tuple(new if r is old else r for r in self.diff_pair)
        self.result_moved.emit(row)
        if self.current is old:
            self.current = new
            self.current_changed.emit(new)
        return True

    def show(self, result: RunResult) -> None:
        """Put ``result`` on screen (it keeps its row; a diff no longer applies).
        A result on disk is read back first (off the GUI thread)."""
        if result is self.current:
            return
        row = self.row_of(result)
        if result.stowed is not None and row is not None:
            self._wanted = row
            self.tell(f"reading run {row + 1} back from disk...", 0)
            self._move(row, result, to_disk=False)
            return
        self._wanted = None
        self.current = result
        if row is not None:
            self._shown_at[row] = next(self._clock)
        self.diff_pair = None
        self.replay_iteration = 0
        if self.map_name in ANALYSIS_MAPS or (self.map_name.startswith("reads_")
                                              and self.map_name not in result.read_maps()) \
                or (":" in self.map_name and self.map_name not in written_map_names(result)):
            self.map_name = "count"  # (its figures, or its array, were the previous result's)
        self.current_changed.emit(result)
        self.keep_within_budget()

    def set_selection(self, results: list[RunResult]) -> None:
        self.selection = list(results)

    def row_of(self, result: RunResult) -> int | None:
        for row, kept in enumerate(self.results):
            if kept is result:
                return row
        return None

    # -- memory ---------------------------------------------------------------------------

    @property
    def bytes_in_memory(self) -> int:
        """Bytes of maps the session's results hold now (shared arrays once)."""
        return bytes_in_memory(self.results)

    def keep_within_budget(self) -> None:
        """Send the least recently shown results to disk until the rest fit
        the budget (never the one shown, nor a diff pair's)."""
        kept = {id(r) for r in (self.current, *(self.diff_pair or ())) if r is not None}
        candidates = sorted(
            (row for row, r in enumerate(self.results)
             if r.stowed is None and id(r) not in kept and row not in self._moving),
            key=lambda row: self._shown_at.get(row, -1))
        excess = self.bytes_in_memory - self.memory_budget
        for row in candidates:
            if excess <= 0:
                break
            excess -= bytes_in_memory([self.results[row]])
            self._move(row, self.results[row], to_disk=True)

    def close(self) -> None:
        """Remove what went to disk (at the end of the session)."""
        if self._mover is not None:
            self._mover.shutdown(wait=True, cancel_futures=True)
        if self._stowage is not None:
            self._stowage.close()

    def _move(self, row: int, result: RunResult, to_disk: bool) -> None:
        if row in self._moving:
            return
        if self._stowage is None:
            self._stowage = Stowage()
        stowage = self._stowage
        work = stowage.stow if to_disk else stowage.unstow
        if self._mover is None:
            self._on_moved(row, work(result), to_disk)
            return
        self._moving.add(row)

        def move() -> None:
            try:
                moved = work(result)
            except OSError as exc:  # a full disk: the result stays as it was
                self._moved_off_thread.emit(row, exc, to_disk)
                return
            self._moved_off_thread.emit(row, moved, to_disk)

        self._mover.submit(move)

    def _on_moved(self, row: int, moved, to_disk: bool) -> None:
        self._moving.discard(row)
        if isinstance(moved, OSError):
            self.raise_error(f"run {row + 1} could not be {'written to' if to_disk else 'read from'}"
                             f" disk: {moved}", about_the_run=False)
            return
        old = self.results[row]
        self.results[row] = moved
        self.selection = [moved if r is old else r for r in self.selection]
        self.result_moved.emit(row)
        if to_disk:
            self.tell(f"run {row + 1} moved to disk ({format_bytes(moved.stowed.nbytes)} of "
                      f"maps; {counted(sum(r.stowed is not None for r in self.results), 'run')} "
                      f"on disk, back when selected)")
        elif self._wanted == row:
            self.show(moved)
            self.tell(f"run {row + 1} read back from disk", 5000)

    # -- what is drawn --------------------------------------------------------------------

    def set_map(self, name: str, writer_kind: str | None = None) -> None:
        changed = name != self.map_name or (writer_kind not in (None, self.writer_kind))
        self.map_name = name
        if writer_kind is not None:
            self.writer_kind = writer_kind
        if changed:
            self.map_changed.emit()

    def show_warp_row(self, kind: str, row: int) -> None:
        """Draw per-warp map ``kind`` for row ``row`` of its analysis table."""
        self.warp_rows[kind] = row
        self.map_name = kind
        self.map_changed.emit()

    def show_replay(self, iteration: int) -> None:
        self.replay_iteration = iteration
        self.map_name = "replay"
        self.map_changed.emit()

    def compare(self, first: RunResult, second: RunResult) -> MapImage:
        """Draw the difference of two runs; raises ThreadMapError when they
        cannot be compared (different shapes)."""
        image = diff_map(first, second)
        self.diff_pair = (first, second)
        #: what differs, in words ("8,192 with a different writer, ...")
        self.diff_summary = image.context[1].summary()
        self.map_name = "diff"
        self.diff_changed.emit(self.diff_pair)
        self.map_changed.emit()
        return image

    def shown_result(self) -> RunResult | None:
        """The result whose elements the map shows (the first of a diff pair)."""
        if self.map_name == "diff" and self.diff_pair is not None:
            return self.diff_pair[0]
        return self.current

    def current_image(self) -> MapImage:
        """The image of what is chosen; ThreadMapError says why there is none."""
        return self.image_maker()()

    def image_maker(self) -> Callable[[], MapImage]:
        """A function that makes the image of what is chosen now, whatever is
        chosen later: safe to call off the GUI thread (it reads only the
        result's arrays and the choices captured here)."""
        result, name = self.current, self.map_name
        writer_kind, rows = self.writer_kind, dict(self.warp_rows)
        iteration, pair = self.replay_iteration, self.diff_pair

        def make() -> MapImage:
            if result is None:
                raise ThreadMapError("nothing to show yet: run something first")
            if name in WARP_MAPS:
                analysis = result.analysis
                if analysis is None:
                    raise ThreadMapError(f"no per-warp figures for this run: "
                                         f"{result.analysis_note}")
                sites = {"sectors": analysis.coalescing, "ways": analysis.bank_conflicts,
                         "lanes": analysis.divergence}[name]
                if not sites:
                    raise ThreadMapError({"sectors": "this run makes no access to A, B or C",
                                          "ways": "this kernel has no shared array",
                                          "lanes": "this kernel has no branch"}[name])
                return warp_map(result, name, min(rows[name], len(sites) - 1))
            if name == "replay":
                return replay_map(result, iteration)
            if name == "diff":
                if pair is None:
                    raise ThreadMapError("select two runs in the results table (Ctrl+click), "
                                         "then Compare on the Diff page (Show, beside the "
                                         "map)")
                return diff_map(*pair)
            return make_map(result, name, writer_kind)

        return make

    # -- sweep ----------------------------------------------------------------------------

    def begin_sweep(self, grids, blocks) -> None:
        self.sweep_axes = (tuple(grids), tuple(blocks))
        self.sweep_cells = []
        self.sweep_started.emit(self.sweep_axes[0], self.sweep_axes[1])

    def add_sweep_cell(self, cell: SweepCell) -> None:
        self.sweep_cells.append(cell)
        self.sweep_cell_added.emit(cell)

    def finish_sweep(self) -> None:
        self.sweep_finished.emit(len(self.sweep_cells))

    # -- settings, messages ---------------------------------------------------------------

    def set_assumed_registers(self, registers: int) -> None:
        if registers != self.assumed_registers:
            self.assumed_registers = registers
            self.assumed_registers_changed.emit(registers)

    def raise_error(self, message: str, about_the_run: bool = True) -> None:
        """(The engine's message, its command-line options named by the app's
        fields: app_words.py.)"""
        self.error_raised.emit(in_app_words(message), about_the_run)

    def raise_sweep_error(self, message: str) -> None:
        """An error about the sweep asked for (its lists, its launches): shown
        on the Sweep tab."""
        self.sweep_error_raised.emit(in_app_words(message))

    def clear_error(self) -> None:
        self.error_cleared.emit()

    def tell(self, message: str, milliseconds: int = 10000) -> None:
        self.told.emit(message, milliseconds)
