"""The Maps tab: the map chooser, the verdict, the heatmap with the analysis
panel beside it, the legend, what is under the cursor, timings and notes.

It renders what the session holds, and changes only the session's choice of
map; it never runs anything and never reads another view's insides.
"""
from __future__ import annotations

import html
import re

from kernels import (
    BACKEND_LABELS,
    KERNEL_OUTPUT_LINES,
    RunResult,
    ThreadMapError,
    format_dims,
    format_seconds,
)

from ..app_words import in_app_words
from ..export import run_title
from ..models.map_images import (
    ANALYSIS_MAPS,
    MAP_CHOICES,
    WRITER_KINDS,
    map_label,
    read_array_name,
    written_map_names,
)
from ..models.session import Session
from ..qt import QtCore, QtGui, QtWidgets
from .analysis import AnalysisPanel
from .heatmap import HeatmapWidget
from .map_painter import OFF_THREAD_ELEMENTS, MapPainter
from .readable import ROWS_SHOWN
from .source_view import SourceView

HOVER_PROMPT = "Hover over the map to see who wrote an element."
NO_RUN_YET = "No run yet: choose a kernel and a launch, then Run (Ctrl+R)."


def elide_long_words(text: str, longest: int = 60) -> str:
    """Words (file names, paths) past ``longest`` characters, middle elided:
    a label cannot wrap inside a word, and a 200-character kernel file name
    made the verdict scroll sideways."""
    import re

    half = longest // 2 - 1
    return re.sub(r"[^\s<>]{%d,}" % (longest + 1),
                  lambda m: f"{m.group(0)[:half]}\u2026{m.group(0)[-half:]}", text)


#: reasons and diagnoses the verdict shows before its "all of it" link
SUMMARY_ITEMS = 2


def verdict_html(result: RunResult, whole: bool = True) -> str:
    """The verdict, its causes and reasons; unless ``whole``, the first
    ``SUMMARY_ITEMS`` of them, each whole, and a link to the rest (a box of
    six lines cut the diagnosis mid-sentence, "Fix: line 19: insert `")."""
    verdict = result.verdict
    word = verdict.shown_word
    colour = {"PASS": "#1a7f37", "CHECKED": "#6d4c41"}.get(word, "#c62828")
    # the causes first, where the verdict's box shows them without scrolling
    items = [f"<li><b>why</b>, line {d.line_list}: "
             f"{html.escape(in_app_words(d.message))} (Source page: evidence and fix)</li>"
             for d in result.diagnoses]
    items += [f"<li>{in_app_words(r)}</li>" for r in verdict.reasons]
    if verdict.reference_note:
        items.append("<li>no correctness verdict: "
                     f"{html.escape(in_app_words(verdict.reference_note))}</li>")
    hidden = 0 if whole else max(0, len(items) - SUMMARY_ITEMS)
    reasons = "".join(items[:len(items) - hidden])
    if hidden:
        reasons += (f"<li><a href='more'>{hidden} more, the backend and the launch...</a>"
                    "</li>")
    elif len(items) > SUMMARY_ITEMS:
        reasons += "<li><a href='less'>show less</a></li>"
    head = (f"<b style='color:{colour}; font-size:14pt'>{word}</b> &nbsp; "
            f"{in_app_words(run_title(result))}")
    if hidden:
        return head + f"<ul style='margin:0'>{reasons}</ul>"
    return (head + f"<br>backend: {in_app_words(result.backend_note)}; launch: "
            f"{format_dims(result.request.grid)} x {format_dims(result.request.block)} "
            f"({result.request.launch_source})"
            + (f"; output: {result.output} ({result.output_reason})"
               if result.request.kernel_file else "")
            + (f"<ul style='margin:0'>{reasons}</ul>" if reasons else
               "<br>every element written once by one thread, no out-of-bounds access, "
               + ("every element equal to the reference's (integers, compared exactly)"
                  if verdict.errors.exact else
                  "every element within its own bound (the worst at "
                  f"{verdict.errors.worst_ratio:.2g}x); relative error ||C - ref|| / ||ref|| "
                  f"{verdict.errors.rel_error:.2e}")))


def details_text(result: RunResult) -> str:
    """Timings, notes and the kernel's own output (the first lines)."""
    lines = [t.describe() for t in result.timings] + [f"note: {n}" for n in result.notes]
    if result.kernel_output:
        printed = result.kernel_output.splitlines()
        lines.append(f"kernel output ({len(printed):,} lines, from its instrumented launch "
                     "only):")
        lines += [f"| {line}" for line in printed[:KERNEL_OUTPUT_LINES]]
        if len(printed) > KERNEL_OUTPUT_LINES:
            lines.append(f"| ... {len(printed) - KERNEL_OUTPUT_LINES:,} more (export "
                         "the result for all of it)")
    return "\n".join(lines)


class DetailsTable(QtWidgets.QTableWidget):
    """A run's timings (what, time, on what, measured how) and its notes, a
    row each (a note's words in the last column, which stretches); a cell's
    whole text on hover, the rows within a few lines."""

    COLUMNS = ("what", "time", "on", "measured how")

    def __init__(self, parent=None):
        super().__init__(0, len(self.COLUMNS), parent)
        self.setObjectName("details")
        self.setHorizontalHeaderLabels(self.COLUMNS)
        self.verticalHeader().hide()
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(False)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        header = self.horizontalHeader()
        for column in range(3):
            header.setSectionResizeMode(column, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        # (never sideways: the last column takes the rest and elides, its
        # whole text on hover)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self._fit_rows(ROWS_SHOWN)
        self._text = ""

    def _fit_rows(self, rows: int) -> None:
        """As tall as ``rows`` rows, at most ``ROWS_SHOWN`` (the layout check's
        least; more scroll): room left for the map."""
        rows = max(1, min(rows, ROWS_SHOWN))
        self.setFixedHeight(self.horizontalHeader().sizeHint().height() + rows
                            * self.verticalHeader().defaultSectionSize() + 2 * self.frameWidth())

    def show_result(self, result: RunResult) -> None:
        # (the backend's name in the cell, what that means on hover: "not a GPU time")
        rows = [(t.what, format_seconds(t.seconds)
                 + (f", {t.gflops:.3g} GFLOP/s" if t.gflops is not None else ""),
                 BACKEND_LABELS.get(t.backend, t.backend), t.method) for t in result.timings]
        rows += [("note", "", "", note) for note in result.notes]
        if result.kernel_output:
            printed = result.kernel_output.splitlines()
            shown = printed[:KERNEL_OUTPUT_LINES]
            more = (f" ... {len(printed) - KERNEL_OUTPUT_LINES:,} more (export the result for "
                    "all of it)" if len(printed) > KERNEL_OUTPUT_LINES else "")
            rows.append(("kernel output", f"{len(printed):,} lines", "instrumented launch",
                         " | ".join(shown) + more))
        self.setRowCount(len(rows))
        self._fit_rows(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QtWidgets.QTableWidgetItem(
                    re.split(r" \(|, ", text)[0] if c == 2 else text)
                item.setToolTip(text)
                self.setItem(r, c, item)
        self._text = details_text(result)

    def text(self) -> str:
        """Everything shown, as lines of text."""
        return self._text


class MapsView(QtWidgets.QWidget):
    """The Maps tab, on a :class:`Session`."""

    export_requested = QtCore.Signal()

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(self._build_bar())
        self.verdict_label = QtWidgets.QLabel(NO_RUN_YET)
        self.verdict_label.setObjectName("verdict")
        self.verdict_label.setWordWrap(True)
        self.verdict_label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.verdict_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        # Whole sentences, never a scroll box: the first causes, and a link to
        # the rest (which pushes the map down only when the user asks for it).
        self.verdict_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.LinksAccessibleByMouse
            | QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict_label.linkActivated.connect(self._on_verdict_link)
        self.verdict_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred,
                                         QtWidgets.QSizePolicy.Policy.Maximum)
        #: whether the verdict shows all its reasons (the user's last choice)
        self.verdict_whole = False
        layout.addWidget(self.verdict_label)
        self.error_label = QtWidgets.QLabel()
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet("color: #b71c1c; background: #fdecea; padding: 4px")
        self.error_label.hide()
        layout.addWidget(self.error_label)
        self.heatmap = HeatmapWidget()
        self.heatmap.setObjectName("heatmap")
        self.analysis = AnalysisPanel()
        # The source first, beside the map: users think in lines.
        self.source_view = SourceView(session)
        self.analysis.insertTab(0, self.source_view, "Source")
        self.analysis.setCurrentIndex(0)
        # The map with its legend, hover line and timings on the left; the
        # analysis pages beside all of them, not beside the map alone (there
        # they had ~250 px at 1280 x 800, and every page scrolled).
        map_column = QtWidgets.QWidget()
        column = QtWidgets.QVBoxLayout(map_column)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.heatmap, 1)
        self.legend_label = QtWidgets.QLabel()
        self.legend_label.setWordWrap(True)
        column.addWidget(self.legend_label)
        self.hover_label = QtWidgets.QLabel(HOVER_PROMPT)
        self.hover_label.setObjectName("hover")
        self.hover_label.setFont(QtGui.QFontDatabase.systemFont(
            QtGui.QFontDatabase.SystemFont.FixedFont))
        self.hover_label.setMinimumHeight(2 * self.hover_label.fontMetrics().height())
        self.hover_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        column.addWidget(self.hover_label)
        # Timings as a table (what, time, measured how), then the notes, each
        # a row, its whole text on hover: long bracketed sentences had filled
        # a box of four lines.
        self.details = DetailsTable()
        column.addWidget(self.details)
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        splitter.setObjectName("map-and-analysis")
        splitter.addWidget(map_column)
        pages = self._with_page_chooser(self.analysis)
        # Wide enough for its tables' columns (at ~300 px the coalescing table
        # lost a column and source lines were cut); the user drags the
        # handle for more, and the window remembers it (main_window).
        pages.setMinimumWidth(340)
        splitter.addWidget(pages)
        splitter.setChildrenCollapsible(False)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.splitter = splitter
        layout.addWidget(splitter, 1)

        self.painter = MapPainter(self)
        self.painter.painted.connect(self._on_painted)
        #: the painter's request whose answer is awaited (0: none)
        self._awaited = 0
        self._awaited_view = (None, False)
        self.map_combo.currentIndexChanged.connect(self._on_map_chosen)
        self.writer_combo.currentIndexChanged.connect(self._on_map_chosen)
        self.slice_spin.valueChanged.connect(self.heatmap.heatmap.show_slice)
        self.export_button.clicked.connect(self.export_requested)
        self.heatmap.hovered.connect(self._on_hovered)
        self.heatmap.clicked.connect(self._on_element_clicked)
        self.analysis.warp_map_requested.connect(session.show_warp_row)
        self.analysis.replay_changed.connect(session.show_replay)
        self.analysis.occupancy_settings_changed.connect(
            lambda: session.set_assumed_registers(self.analysis.assumed_registers))
        session.current_changed.connect(self._on_current_changed)
        session.map_changed.connect(lambda: self._show_map(reset_view=False))
        session.diff_changed.connect(self._on_diff_changed)
        session.assumed_registers_changed.connect(
            lambda _: self.analysis.show_result(session.current))
        session.error_raised.connect(self.show_error)
        session.error_cleared.connect(self.error_label.hide)
        self._on_map_chosen()

    @staticmethod
    def _with_page_chooser(pages: QtWidgets.QTabWidget) -> QtWidgets.QWidget:
        """The analysis pages under a chooser in place of their tab bar: eight
        tabs do not fit beside the map at 1280 px, and a scrolling tab bar
        hides pages; a list of pages fits any width."""
        box = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QtWidgets.QHBoxLayout()
        chooser = QtWidgets.QComboBox()
        chooser.setObjectName("analysis-page")
        for index in range(pages.count()):
            chooser.addItem(pages.tabText(index))
        chooser.setCurrentIndex(pages.currentIndex())
        chooser.currentIndexChanged.connect(pages.setCurrentIndex)
        pages.currentChanged.connect(chooser.setCurrentIndex)
        row.addWidget(QtWidgets.QLabel("Show"))
        row.addWidget(chooser, 1)
        layout.addLayout(row)
        pages.tabBar().hide()
        pages.setDocumentMode(True)
        layout.addWidget(pages, 1)
        return box

    def _build_bar(self) -> QtWidgets.QHBoxLayout:
        bar = QtWidgets.QHBoxLayout()
        self.map_combo = QtWidgets.QComboBox()
        self.map_combo.setObjectName("map")
        for name, (label, description) in MAP_CHOICES.items():
            self.map_combo.addItem(label, name)
            self.map_combo.setItemData(self.map_combo.count() - 1, description,
                                       QtCore.Qt.ItemDataRole.ToolTipRole)
        self.map_combo.insertSeparator(self.map_combo.count())
        for name, label in ANALYSIS_MAPS.items():
            self.map_combo.addItem(label, name)
        self.writer_combo = QtWidgets.QComboBox()
        self.writer_combo.setObjectName("writer-kind")
        self.writer_combo.addItems(WRITER_KINDS)
        # A 3-D array's map: its slices stacked, shown one at a time (or all).
        self.slice_label = QtWidgets.QLabel("Slice")
        self.slice_spin = QtWidgets.QSpinBox()
        self.slice_spin.setObjectName("slice")
        self.slice_spin.setRange(-1, 0)
        self.slice_spin.setSpecialValueText("all")
        self.slice_spin.setToolTip("the 3-D array's slice [s, :, :] to show; all: every slice, "
                                   "stacked")
        self.slice_label.hide()
        self.slice_spin.hide()
        self.export_width = QtWidgets.QSpinBox()
        self.export_height = QtWidgets.QSpinBox()
        for spin, value in ((self.export_width, 1200), (self.export_height, 900)):
            spin.setRange(16, 16384)
            spin.setValue(value)
            spin.setSuffix(" px")
        self.export_button = QtWidgets.QPushButton("Export...")
        self.export_button.setToolTip("Ctrl+E: PNG or SVG, with title and colour bar")
        bar.addWidget(QtWidgets.QLabel("Map"))
        bar.addWidget(self.map_combo)
        self.writer_label = QtWidgets.QLabel("by")
        bar.addWidget(self.writer_label)
        bar.addWidget(self.writer_combo)
        bar.addWidget(self.slice_label)
        bar.addWidget(self.slice_spin)
        bar.addStretch(1)
        bar.addWidget(QtWidgets.QLabel("Export size"))
        bar.addWidget(self.export_width)
        bar.addWidget(QtWidgets.QLabel("x"))
        bar.addWidget(self.export_height)
        bar.addWidget(self.export_button)
        return bar

    @property
    def export_size(self) -> tuple[int, int]:
        return self.export_width.value(), self.export_height.value()

    def set_export_size(self, width: int, height: int) -> None:
        self.export_width.setValue(width)
        self.export_height.setValue(height)

    # -- from the user ------------------------------------------------------------------

    def _on_map_chosen(self, _index=None) -> None:
        name = self.map_combo.currentData()
        writer = str(name).partition(":")[0] == "writer"
        self.writer_combo.setVisible(writer)
        self.writer_label.setVisible(writer)
        if name is not None:
            self.session.set_map(name, self.writer_combo.currentText())

    def _on_element_clicked(self, row: int, col: int) -> None:
        image = self.heatmap.image
        if image is not None and image.domain == "C":
            self.source_view.mark_element(row, col)

    def _on_hovered(self, text: str) -> None:
        if text:
            self.hover_label.setText(text)

    # -- from the session -----------------------------------------------------------------

    def _on_current_changed(self, result: RunResult) -> None:
        shown = self.heatmap.image
        reset = shown is None or self.heatmap.result is None or \
            self.heatmap.result.c.shape != result.c.shape
        self._show_verdict(result)
        self.verdict_label.setToolTip(run_title(result))
        self.details.show_result(result)
        self._list_read_maps(result)
        self.analysis.show_result(result)
        self.analysis.diff_label.clear()
        self._show_map(reset_view=reset)

    def _list_read_maps(self, result: RunResult) -> None:
        """One "Reads of" entry per array the run reads (A and B for a matmul,
        each input by its name for a kernel run as it is), and the write maps
        of every array it stores into besides its output."""
        combo = self.map_combo
        names = list(result.read_maps()) + written_map_names(result)
        listed = [(combo.itemData(i), combo.itemText(i)) for i in range(combo.count())
                  if _per_array(combo.itemData(i))]
        if listed == [(name, map_label(name, result)) for name in names]:
            return  # (a matmul's reads_a is A's, a described kernel's its array a's)
        blocked = combo.blockSignals(True)
        for index in reversed(range(combo.count())):
            if _per_array(combo.itemData(index)):
                combo.removeItem(index)
        at = combo.findData("stores") + 1
        for offset, name in enumerate(names):
            combo.insertItem(at + offset, map_label(name, result), name)
            which = read_array_name(name, result) if name.startswith("reads_") else None
            combo.setItemData(at + offset,
                              f"how many times each element of {which} was read" if which
                              else f"{map_label(name, result)}, as the output's map shows it",
                              QtCore.Qt.ItemDataRole.ToolTipRole)
        combo.blockSignals(blocked)

    def _on_diff_changed(self, pair) -> None:
        if pair is None:
            self.analysis.diff_label.clear()
            return
        rows = [self.session.row_of(result) for result in pair]
        self.analysis.diff_label.setText(
            f"run {(rows[0] or 0) + 1} vs run {(rows[1] or 0) + 1}: {self.session.diff_summary}")

    def _show_map(self, reset_view: bool) -> None:
        """Draw the session's chosen map of its current result."""
        session = self.session
        index = self.map_combo.findData(session.map_name)
        if index >= 0 and index != self.map_combo.currentIndex():
            blocked = self.map_combo.blockSignals(True)
            self.map_combo.setCurrentIndex(index)
            self.map_combo.blockSignals(blocked)
            writer = session.map_name.partition(":")[0] == "writer"  # (an array's too)
            self.writer_combo.setVisible(writer)
            self.writer_label.setVisible(writer)
        if session.current is None:
            return
        shown = session.shown_result()
        if shown.c.size > OFF_THREAD_ELEMENTS:
            self._awaited = self.painter.paint(session.image_maker())
            self._awaited_view = (shown, reset_view)
            self.legend_label.setText("drawing the map...")
            return
        self._awaited = 0
        try:
            image = session.current_image()
        except ThreadMapError as exc:
            self._show_no_map(str(exc))
            return
        self._draw(shown, image, None, reset_view)

    def _show_no_map(self, why: str) -> None:
        """The map chosen cannot be drawn for this run: say why where the map
        goes (the picture of the map before had stayed, under "this kernel has
        no shared array"; Diff with one run showed the Replay)."""
        why = in_app_words(why)
        first = why.split(": ")[0] if len(why) > 60 else why
        self.heatmap.clear_map(first)
        self.legend_label.setText(why)
        self.hover_label.setText(HOVER_PROMPT)
        self.slice_label.setVisible(False)
        self.slice_spin.setVisible(False)

    def _on_painted(self, number: int, image, rgba) -> None:
        if number != self._awaited:
            return  # a later choice is on its way
        self._awaited = 0
        shown, reset_view = self._awaited_view
        if image is None:
            self._show_no_map(rgba)  # (why not)
            return
        self._draw(shown, image, rgba, reset_view)

    def _draw(self, shown: RunResult, image, rgba, reset_view: bool) -> None:
        self.heatmap.show_map(shown, image, reset_view=reset_view, rgba=rgba)
        self.legend_label.setText(image.legend)
        self._offer_slices(image, reset_view)
        # The hover text describes what is on screen now, never the previous run.
        self.hover_label.setText(self.heatmap.hover_text_now() or HOVER_PROMPT)

    def _offer_slices(self, image, reset_view: bool) -> None:
        """The slice chooser, for a 3-D array's map only; the slice chosen is
        kept from map to map of one shape."""
        sliced = image.slices is not None
        self.slice_label.setVisible(sliced)
        self.slice_spin.setVisible(sliced)
        if not sliced:
            self.heatmap.heatmap.show_slice(-1)  # (no lines left from a 3-D map)
            return
        blocked = self.slice_spin.blockSignals(True)
        self.slice_spin.setMaximum(image.slices[0] - 1)
        if reset_view and self.slice_spin.value() < 0:
            self.slice_spin.setValue(0)  # (one slice at a time, from the first)
        self.slice_spin.blockSignals(blocked)
        if self.heatmap.heatmap.view_reset:  # (asked, or a map of another shape)
            self.heatmap.heatmap.show_slice(self.slice_spin.value())
        else:
            self._keep_view_with_lines()

    def _keep_view_with_lines(self) -> None:
        """The slice lines of a map redrawn in place (the view as the user left it)."""
        plot = self.heatmap.heatmap
        x_range, y_range = plot.plot.vb.viewRange()
        plot.show_slice(self.slice_spin.value())
        plot.plot.setRange(xRange=x_range, yRange=y_range, padding=0)

    def _show_verdict(self, result: RunResult) -> None:
        self.verdict_label.setText(elide_long_words(verdict_html(result, self.verdict_whole)))

    def _on_verdict_link(self, link: str) -> None:
        self.verdict_whole = link == "more"
        if self.session.current is not None:
            self._show_verdict(self.session.current)

    @property
    def drawing(self) -> bool:
        """A map is being made off the GUI thread."""
        return self._awaited != 0

    def show_error(self, message: str, _about_the_run: bool = True) -> None:
        """Above the map; whatever was shown stays."""
        self.error_label.setText(message)
        self.error_label.show()


def _per_array(map_name) -> bool:
    """A map entry listed per result: an array's reads, or another written
    array's maps."""
    return str(map_name).startswith("reads_") or ":" in str(map_name)
