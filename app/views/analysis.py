"""The analysis panel beside the maps: coalescing, shared memory (bank
conflicts, races, barriers), warp divergence, load balance, occupancy, replay
of grid-stride iterations, and the difference of two runs."""
from __future__ import annotations

import numpy as np

from kernels import (
    ASSUMED_REGISTERS,
    GPU_MODEL_NAMES,
    RunResult,
    bank_conflict_model,
    counted,
    gpu_model_source,
    load_balance,
    percent,
    reassume_registers,
)

from ..qt import QtCore, QtWidgets, pg
from .readable import ReadableTable

COALESCING_COLUMNS = ("line", "access", "requests", "mean sectors", "max", "ideal", "efficiency")
BANK_COLUMNS = ("line", "access", "requests", "mean ways", "max", "ideal")
DIVERGENCE_COLUMNS = ("line", "branch", "warp runs", "went on", "split", "mean lanes",
                      "fewest")
OCCUPANCY_COLUMNS = ("GPU", "blocks / SM", "limited by", "occupancy", "waves", "last wave idle")


def _read_only_table(name: str, columns: tuple[str, ...]) -> QtWidgets.QTableWidget:
    table = ReadableTable(0, len(columns))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().hide()
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _page(note: str | None = None) -> tuple[QtWidgets.QWidget, QtWidgets.QVBoxLayout]:
    """A tab page, with an explanatory note at the top when given."""
    page = QtWidgets.QWidget()
    layout = QtWidgets.QVBoxLayout(page)
    if note:
        label = QtWidgets.QLabel(note)
        label.setWordWrap(True)
        layout.addWidget(label)
    return page, layout


class AnalysisPanel(QtWidgets.QTabWidget):
    """Shows the figures of the current run; asks the window for special maps."""

    #: show a per-warp map: ("sectors" | "ways" | "lanes", row of its table)
    warp_map_requested = QtCore.Signal(str, int)
    replay_changed = QtCore.Signal(int)  # show the replay map at this iteration
    export_replay_requested = QtCore.Signal()
    diff_requested = QtCore.Signal()
    occupancy_settings_changed = QtCore.Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result: RunResult | None = None
        self.addTab(self._build_coalescing(), "Coalescing")
        self.addTab(self._build_shared(), "Shared")
        self.addTab(self._build_divergence(), "Divergence")
        self.addTab(self._build_load_balance(), "Balance")
        self.addTab(self._build_occupancy(), "Occupancy")
        self.addTab(self._build_replay(), "Replay")
        self.addTab(self._build_diff(), "Diff")
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(333)  # 3 steps a second (replay_speed)
        self._timer.timeout.connect(self._on_timer_timeout)

    # -- coalescing ---------------------------------------------------------------------

    def _site_table(self, name: str, columns: tuple[str, ...], kind: str) -> QtWidgets.QTableWidget:
        """A table of sites; selecting a row asks for its per-warp map."""
        table = _read_only_table(name, columns)
        table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)

        def selected() -> None:
            rows = table.selectionModel().selectedRows()
            if rows:
                self.warp_map_requested.emit(kind, rows[0].row())

        table.itemSelectionChanged.connect(selected)
        return table

    def _build_coalescing(self) -> QtWidgets.QWidget:
        page, layout = _page(
            "Distinct 32-byte sectors each warp request touches at each access to A, B and C: "
            "every request, with the warp's active lanes as they run in lockstep. Ideal: the "
            "fewest sectors its distinct elements fill (4 for 32 consecutive float32, 8 for "
            "float64, 1 when every lane reads one element). Select a row for its per-warp map.")
        self.coalescing_table = self._site_table("coalescing-table", COALESCING_COLUMNS,
                                                 "sectors")
        layout.addWidget(self.coalescing_table, 1)
        return page

    def coalescing_rows(self) -> list[list[str]]:
        if self.result is None:
            return []
        rows = []
        for c in self.result.coalescing:
            rows.append([str(c.site.line), f"{c.site.kind} {c.site.text}", f"{c.requests:,}",
                         f"{c.mean_sectors:.2f}", str(c.max_sectors), f"{c.ideal_sectors:.3g}",
                         f"{c.efficiency:.0%}" if c.requests else "-"])
        return rows

    def _build_shared(self) -> QtWidgets.QWidget:
        MODEL = bank_conflict_model()
        page, layout = _page()
        self.hazards_label = QtWidgets.QLabel()
        self.hazards_label.setObjectName("hazards")
        self.hazards_label.setWordWrap(True)
        self.hazards_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.hazards_label)
        note = QtWidgets.QLabel(
            "Bank conflicts: passes per warp request (1 = none). A row: its per-warp map.")
        note.setWordWrap(True)
        note.setToolTip(f"{MODEL['ways']}; {MODEL['wide_accesses']}. Source: {MODEL['source']}")
        layout.addWidget(note)
        self.bank_table = self._site_table("bank-table", BANK_COLUMNS, "ways")
        layout.addWidget(self.bank_table, 1)
        return page

    def hazard_text(self) -> str:
        """Barrier divergence, races and uninitialised reads of the shown run."""
        result = self.result
        if result is None:
            return ""
        analysis = result.analysis
        if analysis is None:
            return f"Shared memory and barriers: {result.analysis_note or 'not measured'}."
        lines = [barrier.describe() for barrier in analysis.barrier_divergence] or [
            "every barrier was reached by all threads of each block"]
        lines.append(analysis.races.describe() if analysis.races.count
                     else "no shared-memory race")
        lines.append(analysis.uninitialised.describe() if analysis.uninitialised.count
                     else "no read of shared memory the block had not written")
        lines.extend(hazard.describe() for hazard in analysis.warp)
        if analysis.global_races.count:
            lines.append(analysis.global_races.describe())
        elif result.request.arguments:  # (a described kernel's arrays are checked)
            unchecked = analysis.global_races.unchecked
            lines.append("no race in global memory" + (
                f" (not checked, too large: {', '.join(unchecked)})" if unchecked else ""))
        return "\n".join(f"• {line[0].upper()}{line[1:]}" for line in lines)

    def bank_rows(self) -> list[list[str]]:
        if self.result is None or self.result.analysis is None:
            return []
        return [[str(c.site.line), f"{c.site.kind} {c.site.text}", f"{c.requests:,}",
                 f"{c.mean_ways:.2f}", str(c.max_ways), f"{c.ideal_ways:.3g}"]
                for c in self.result.analysis.bank_conflicts]

    def _build_divergence(self) -> QtWidgets.QWidget:
        page, layout = _page(
            "At each branch (if, loop test, return): how many times a warp reached it, in how "
            "many of those some of its lanes went on into it, how many split the warp's active "
            "lanes, and how many lanes went on. Select a row for its per-warp map.")
        self.divergence_table = self._site_table("divergence-table", DIVERGENCE_COLUMNS,
                                                 "lanes")
        layout.addWidget(self.divergence_table, 1)
        return page

    def divergence_rows(self) -> list[list[str]]:
        if self.result is None or self.result.analysis is None:
            return []
        return [[str(d.branch.line), d.branch.text, f"{d.evaluations:,}", f"{d.requests:,}",
                 f"{d.divergent:,}", f"{d.mean_active_lanes:.1f}", str(d.min_active_lanes)]
                for d in self.result.analysis.divergence]

    # -- load balance ---------------------------------------------------------------------

    def _build_load_balance(self) -> QtWidgets.QWidget:
        page, layout = _page()
        self.balance_label = QtWidgets.QLabel()
        self.balance_label.setObjectName("balance")
        self.balance_label.setWordWrap(True)
        layout.addWidget(self.balance_label)
        self.balance_plot = pg.PlotWidget()
        self.balance_plot.setMinimumHeight(160)
        self.balance_plot.setLabel("bottom", "elements stored by a thread")
        self.balance_plot.setLabel("left", "threads")
        layout.addWidget(self.balance_plot, 1)
        return page

    # -- occupancy ------------------------------------------------------------------------

    def _build_occupancy(self) -> QtWidgets.QWidget:
        page, layout = _page()
        form = QtWidgets.QHBoxLayout()
        form.addWidget(QtWidgets.QLabel("Registers per thread when not measured"))
        self.registers_spin = QtWidgets.QSpinBox()
        self.registers_spin.setRange(1, 255)
        self.registers_spin.setValue(ASSUMED_REGISTERS)
        self.registers_spin.valueChanged.connect(lambda _: self.occupancy_settings_changed.emit())
        form.addWidget(self.registers_spin)
        form.addStretch(1)
        layout.addLayout(form)
        self.occupancy_label = QtWidgets.QLabel()
        self.occupancy_label.setWordWrap(True)
        layout.addWidget(self.occupancy_label)
        self.occupancy_table = _read_only_table("occupancy-table", OCCUPANCY_COLUMNS)
        layout.addWidget(self.occupancy_table, 1)
        return page

    @property
    def assumed_registers(self) -> int:
        return self.registers_spin.value()

    def _show_occupancy(self) -> None:
        self.occupancy_table.setRowCount(0)
        if self.result is None:
            return
        result = reassume_registers(self.result, self.assumed_registers)  # arithmetic only
        request = result.request
        if not result.occupancy:
            self.occupancy_label.setText("no occupancy figures for this result (its kernel "
                                         "could not be read again after the run)")
            return
        sources = set()
        for name in GPU_MODEL_NAMES:
            occ = result.occupancy[name]
            sources.add(f"{occ.registers_per_thread} registers ({occ.registers_source})")
            row = self.occupancy_table.rowCount()
            self.occupancy_table.insertRow(row)
            values = (name, str(occ.blocks_per_sm), occ.limited_by, percent(occ.occupancy),
                      str(occ.waves), percent(occ.last_wave_idle))
            for column, value in enumerate(values):
                item = QtWidgets.QTableWidgetItem(value)
                item.setToolTip(gpu_model_source(name))
                self.occupancy_table.setItem(row, column, item)
        self.occupancy_table.resizeColumnsToContents()
        self.occupancy_label.setText(
            f"{counted(request.blocks, 'block')} of {counted(request.threads_per_block, 'thread')}; per thread: "
            + "; ".join(sorted(sources))
            + f"; shared memory per block: {occ.shared_per_block} bytes. Hover a model for "
            "the source of its figures.")

    # -- replay -----------------------------------------------------------------------------

    def _build_replay(self) -> QtWidgets.QWidget:
        page, layout = _page("Step through the grid-stride iterations: which elements "
                             "each warp writes at each step.")
        row = QtWidgets.QHBoxLayout()
        self.play_button = QtWidgets.QPushButton("Play")
        self.play_button.setCheckable(True)
        self.play_button.toggled.connect(self._on_play_toggled)
        self.replay_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.replay_slider.setObjectName("replay-slider")
        self.replay_slider.valueChanged.connect(self._on_replay_slider_changed)
        self.replay_label = QtWidgets.QLabel("iteration 0")
        row.addWidget(self.play_button)
        row.addWidget(self.replay_slider, 1)
        row.addWidget(self.replay_label)
        layout.addLayout(row)
        # Stride and speed: tid-rows has 16,384 iterations, 90 minutes one by
        # one at 3 frames a second.
        pace = QtWidgets.QHBoxLayout()
        self.replay_stride = QtWidgets.QSpinBox()
        self.replay_stride.setObjectName("replay-stride")
        self.replay_stride.setRange(1, 1_000_000)
        self.replay_stride.setToolTip("iterations per step (set from the run: about 100 steps "
                                      "in all)")
        self.replay_stride.valueChanged.connect(self.replay_slider.setPageStep)
        self.replay_speed = QtWidgets.QSpinBox()
        self.replay_speed.setObjectName("replay-speed")
        self.replay_speed.setRange(1, 30)
        self.replay_speed.setValue(3)
        self.replay_speed.setSuffix(" steps/s")
        self.replay_speed.valueChanged.connect(
            lambda fps: self._timer.setInterval(int(1000 / fps)))
        pace.addWidget(QtWidgets.QLabel("step"))
        pace.addWidget(self.replay_stride)
        pace.addWidget(QtWidgets.QLabel("iterations at"))
        pace.addWidget(self.replay_speed)
        pace.addStretch(1)
        layout.addLayout(pace)
        self.export_frames_button = QtWidgets.QPushButton("Export frames (PNG + GIF)...")
        self.export_frames_button.clicked.connect(self.export_replay_requested.emit)
        layout.addWidget(self.export_frames_button)
        layout.addStretch(1)
        return page

    @property
    def iterations(self) -> int:
        if self.result is None:
            return 0
        return self.result.maps.iterations

    def _on_replay_slider_changed(self, value: int) -> None:
        self.replay_label.setText(f"iteration {value} of {max(self.iterations - 1, 0)}")
        self.replay_changed.emit(value)

    def _on_play_toggled(self, playing: bool) -> None:
        self.play_button.setText("Pause" if playing else "Play")
        if playing:
            if self.replay_slider.value() >= self.replay_slider.maximum():
                self.replay_slider.setValue(0)
            self._timer.start()
        else:
            self._timer.stop()

    def _on_timer_timeout(self) -> None:
        value = self.replay_slider.value()
        if value >= self.replay_slider.maximum():
            self.play_button.setChecked(False)
            return
        self.replay_slider.setValue(min(value + self.replay_stride.value(),
                                        self.replay_slider.maximum()))

    # -- diff ---------------------------------------------------------------------------------

    def _build_diff(self) -> QtWidgets.QWidget:
        page, layout = _page("Select two runs in the results table (Ctrl+click), then "
                             "compare them element by element.")
        self.diff_button = QtWidgets.QPushButton("Compare the two selected runs")
        self.diff_button.clicked.connect(self.diff_requested.emit)
        layout.addWidget(self.diff_button)
        self.diff_label = QtWidgets.QLabel()
        self.diff_label.setObjectName("diff")
        self.diff_label.setWordWrap(True)
        layout.addWidget(self.diff_label)
        layout.addStretch(1)
        return page

    # -- the current run ----------------------------------------------------------------------

    def show_result(self, result: RunResult | None) -> None:
        self.result = result
        self.play_button.setChecked(False)
        self.balance_plot.clear()
        tables = ((self.coalescing_table, self.coalescing_rows), (self.bank_table, self.bank_rows),
                  (self.divergence_table, self.divergence_rows))
        for table, rows in tables:
            blocked = table.blockSignals(True)
            table.setRowCount(0)
            for row, values in enumerate(rows()):
                table.insertRow(row)
                for column, value in enumerate(values):
                    table.setItem(row, column, QtWidgets.QTableWidgetItem(value))
            table.resizeColumnsToContents()
            table.blockSignals(blocked)
        self.hazards_label.setText(self.hazard_text())
        if result is None:
            return
        balance = load_balance(result.maps.stores_per_thread)
        edges = np.array(balance["histogram"]["edges"])
        counts = np.array(balance["histogram"]["counts"])
        bars = pg.BarGraphItem(x0=edges[:-1], x1=edges[1:] - 0.1 * np.diff(edges), height=counts,
                               brush="#4c72b0")
        self.balance_plot.addItem(bars)
        without = balance["threads_without_output"]
        self.balance_label.setText(
            f"{counted(balance['threads'], 'thread')}: {without:,} stored no output "
            f"({without / balance['threads']:.0%}); elements of {result.output} stored per "
            f"thread min {balance['min']}, mean {balance['mean']:.2f}, max {balance['max']}")
        blocked = self.replay_slider.blockSignals(True)
        self.replay_slider.setRange(0, max(self.iterations - 1, 0))
        self.replay_slider.setValue(0)
        self.replay_slider.blockSignals(blocked)
        self.replay_stride.setValue(max(1, self.iterations // 100))
        self.replay_label.setText(f"iteration 0 of {max(self.iterations - 1, 0)}")
        self._show_occupancy()
