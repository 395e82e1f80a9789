"""The session: every result of this sitting, the one on screen, what is
drawn of it, the diff pair and the sweep, with a signal for each change.

Views render what the session gives them and change it only through its
methods; the controller puts results in.  Qt-light: a QObject for its
signals, nothing else of Qt.
"""
from __future__ import annotations

from typing import Callable

from kernels import ASSUMED_REGISTERS, RunResult, SweepCell, ThreadMapError

from ..qt import QtCore
from .map_images import (
    ANALYSIS_MAPS,
    MapImage,
    diff_map,
    make_map,
    replay_map,
    warp_map,
)

#: the per-warp maps and the analysis table each one draws a row of
WARP_MAPS = ("sectors", "ways", "lanes")


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
    #: an error to show (message, whether it is about the run asked for)
    error_raised = QtCore.Signal(str, bool)
    error_cleared = QtCore.Signal()
    #: a passing message for the status bar (text, milliseconds; 0 = until replaced)
    told = QtCore.Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
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

    # -- results ------------------------------------------------------------------------

    def add_result(self, result: RunResult) -> int:
        """Keep ``result`` and show it; returns its row."""
        self.results.append(result)
        row = len(self.results) - 1
        self.result_added.emit(row)
        self.show(result)
        return row

    def show(self, result: RunResult) -> None:
        """Put ``result`` on screen (it keeps its row; a diff no longer applies)."""
        if result is self.current:
            return
        self.current = result
        self.diff_pair = None
        self.replay_iteration = 0
        if self.map_name in ANALYSIS_MAPS:
            self.map_name = "count"  # (its figures belonged to the previous result)
        self.current_changed.emit(result)

    def set_selection(self, results: list[RunResult]) -> None:
        self.selection = list(results)

    def row_of(self, result: RunResult) -> int | None:
        for row, kept in enumerate(self.results):
            if kept is result:
                return row
        return None

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
                                         "then Compare in the Diff tab")
                return diff_map(*pair)
            return make_map(result, name, writer_kind)

        return make

    # -- sweep ----------------------------------------------------------------------------

    def begin_sweep(self, blocks: tuple[int, ...], threads: tuple[int, ...]) -> None:
        self.sweep_axes = (tuple(blocks), tuple(threads))
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
        self.error_raised.emit(message, about_the_run)

    def clear_error(self) -> None:
        self.error_cleared.emit()

    def tell(self, message: str, milliseconds: int = 10000) -> None:
        self.told.emit(message, milliseconds)
