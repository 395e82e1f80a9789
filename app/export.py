"""Export heatmaps to PNG / SVG: functions that take a file name.

The dialogs only choose the names; everything here runs without them (and
offscreen), so the command line and the tests use the same code.
"""
from __future__ import annotations

import errno
import html
from html import escape as html_escape
import re
from pathlib import Path

import numpy as np

from kernels import (
    BACKEND_SHORT,
    RunRequest,
    RunResult,
    SweepCell,
    ThreadMapError,
    dims_heading,
    dims_order,
    encode_png,
    format_dims,
    format_seconds,
    write_atomically,
)

from .app_words import in_app_words
from .models.map_images import (
    MAP_CHOICES,
    MapImage,
    make_map,
    map_label,
    replay_map,
    written_map_names,
    written_of,
)
from .qt import QtCore, QtGui, QtWidgets, pg
from .views.colors import colour_map
from .views.heatmap import HeatmapPlot, MapTile, colour_bar_ticks


def ensure_app() -> QtWidgets.QApplication:
    """A QApplication, created offscreen when there is no display (command line)."""
    import os

    app = QtWidgets.QApplication.instance()
    if app is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QtWidgets.QApplication([])
    return app


def run_title(result: RunResult, html: bool = False) -> str:
    """``grid-stride 128x256x128 float32, grid 1 x block 1024, CPU emulation: PASS``
    (two lines in HTML)."""
    r = result.request
    what = (f"{r.kernel_label} {r.shape_label} {r.dtype}, grid {format_dims(r.grid)} x "
            f"block {format_dims(r.block)}, {BACKEND_SHORT.get(r.backend, r.backend)}")
    # (in the app's words: an exported picture named "--reference FILE:FUNCTION")
    summary = in_app_words(result.verdict.summary())
    if not html:
        return f"{what}: {summary}"
    colour = "#1a7f37" if result.verdict.passed else "#c62828"
    return f"{what}<br><b><span style='color:{colour}'>{html_escape(summary)}</span></b>"


def export_file_name(request: RunRequest, map_name: str, suffix: str = ".png") -> str:
    """The name an export of map ``map_name`` suggests:
    ``grid-stride_128x256x128_g4x1_b256_count.png``.  The launch is in it:
    two launches of one shape had one name, and the second export
    overwrote the first.  Letters, digits, ``.``, ``-`` and ``_`` only (a
    kernel file's ``file.py:kernel``, a map's ``count:out``), safe on any
    file system."""
    grid, block = ("x".join(map(str, dims)) for dims in (request.grid, request.block))
    r = request
    name = f"{r.kernel_label}_{r.m}x{r.k}x{r.n}_g{grid}_b{block}_{map_name}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") + suffix


def _wrapped(text: str, width_px: int, point_size: float = 9) -> str:
    """Break ``text`` into HTML lines that fit ``width_px`` (LabelItems do not
    wrap), measured in the label's font (a guess of 0.62 points a character
    had cut the count map's legend at 1,200 px)."""
    font = QtGui.QFont()
    font.setPointSizeF(point_size)
    metrics = QtGui.QFontMetricsF(font)
    lines: list[str] = []
    for word in text.split():
        if lines and metrics.horizontalAdvance(f"{lines[-1]} {word}") <= width_px:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "<br>".join(html.escape(line) for line in lines)


def _offscreen_widget(size: tuple[int, int]) -> pg.GraphicsLayoutWidget:
    ensure_app()
    widget = pg.GraphicsLayoutWidget()
    widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    # Not a window the app waits for: the export figure the window keeps is
    # "shown", so closing the main window left it the last window open, and
    # Quit hid the window while the process ran on.
    widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_QuitOnClose, False)
    # Exports render the scene themselves: painting the unseen view on each
    # event loop pass only cost time (3 ms an image, 0.1 s a contact sheet).
    widget.setUpdatesEnabled(False)
    widget.resize(*size)
    widget.show()
    QtWidgets.QApplication.processEvents()
    return widget


def _write_scene(widget: pg.GraphicsLayoutWidget, path: Path, size: tuple[int, int]) -> Path:
    from pyqtgraph.exporters import ImageExporter

    widget.resize(*size)
    QtWidgets.QApplication.processEvents()
    suffix = path.suffix.lower()
    # Written whole or not at all (a temporary file renamed into place): a
    # full disk leaves the previous image.
    if suffix == ".png":
        exporter = ImageExporter(widget.scene())
        exporter.parameters()["width"] = size[0]
        exporter.parameters()["height"] = size[1]
        exporter.parameters()["antialias"] = False
        opaque = QtGui.QColor(exporter.parameters()["background"]).alpha() == 255
        write_atomically(path, encode_png(_pixels(exporter.export(toBytes=True), opaque),
                                          level=3))
    elif suffix == ".svg":
        write_atomically(path, lambda temporary: _write_svg(widget, temporary, size))
    else:
        raise ValueError(f"export to .png or .svg, not {suffix or 'no extension'}")
    return path


def _pixels(image, opaque: bool) -> np.ndarray:
    """A QImage's pixels as RGB bytes (``opaque``: drawn on an opaque
    background), else RGBA."""
    formats = QtGui.QImage.Format
    image = image.convertToFormat(formats.Format_RGB888 if opaque else formats.Format_RGBA8888)
    rows, cols, channels = image.height(), image.width(), 3 if opaque else 4
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(
        rows, image.bytesPerLine())[:, :cols * channels].reshape(rows, cols, channels)
    return pixels.copy()  # the array must not outlive the QImage whose memory it views


def _write_svg(widget: pg.GraphicsLayoutWidget, path: Path, size: tuple[int, int]) -> None:
    """Render the scene through Qt's own SVG generator.  (pyqtgraph's
    SVGExporter cannot parse the path data that Qt 6.12 writes.)"""
    from PySide6 import QtGui, QtSvg

    generator = QtSvg.QSvgGenerator()
    generator.setFileName(str(path))  # (a temporary file: see _write_scene)
    generator.setSize(QtCore.QSize(*size))
    generator.setViewBox(QtCore.QRect(0, 0, *size))
    # The generator's default resolution (72 dpi) differs from the widget's
    # (96 on most screens and offscreen): Qt then scales the items it paints
    # in device-independent units (axes, text, the colour bar) by 72/96 =
    # 0.75 but not the image, and the axes covered 75% of the map.
    generator.setResolution(widget.logicalDpiX())
    generator.setTitle("ThreadMap heatmap")
    painter = QtGui.QPainter()
    if not painter.begin(generator):
        raise OSError(errno.EACCES, "the SVG file could not be opened for writing", str(path))
    try:
        widget.scene().render(painter, QtCore.QRectF(0, 0, *size), widget.sceneRect())
    finally:
        painter.end()
    if path.stat().st_size == 0:  # Qt's writers fail silently
        raise OSError(errno.EIO, "the SVG could not be written", str(path))


class HeatmapExporter:
    """One offscreen heatmap figure (title, map, colour bar, legend) that
    writes many maps: a sweep's 64 images reuse it instead of building 64
    figures (building one is ~30 ms of pyqtgraph set-up, most of an export)."""

    def __init__(self, size: tuple[int, int] = (1200, 900)) -> None:
        width, height = size
        if not (16 <= width <= 16384 and 16 <= height <= 16384):
            raise ValueError(f"image size {width} x {height} must be between 16 and 16384 pixels")
        self.size = size
        self.widget = _offscreen_widget(size)
        self.title = self.widget.ci.addLabel("", row=0, col=0, size="11pt")
        self.plot = HeatmapPlot(self.widget.ci, row=1, col=0)
        self.legend = self.widget.ci.addLabel("", row=2, col=0, size="9pt")

    def write(self, result: RunResult, path: str | Path, map_name: str = "count",
              writer_kind: str = "thread", image: MapImage | None = None,
              rgba: np.ndarray | None = None) -> Path:
        """Write map ``map_name`` of ``result`` (or a ready ``image``, with its
        colours when they were made ahead: views/map_painter.py) to ``path``."""
        if image is None and map_name not in MAP_CHOICES \
                and map_name not in written_map_names(result):
            raise ValueError(f"unknown map {map_name!r}; maps: {', '.join(MAP_CHOICES)}")
        width, height = self.size
        self.title.setText(run_title(result, html=True), size="11pt")
        image = image if image is not None else make_map(result, map_name, writer_kind)
        svg = Path(path).suffix.lower() == ".svg"
        self.plot.show(image, rgba=None if svg else rgba)
        # A 3-D array's slices, all, parted by lines (not in an SVG: pyqtgraph's
        # made each line a dashed band half a row wide, over the cells).
        self.plot.show_slice(-1, lines=not svg)
        # The row axis only ever widens to fit its labels: fixed from this
        # map's rows, an image does not depend on the maps written before it.
        self.plot.plot.getAxis("left").setWidth(24 + 8 * len(str(image.data.shape[0])))
        if svg:
            self.plot.sharpen(width, height)
        self.legend.setText(_wrapped(image.legend, width - 40), size="9pt")
        return _write_scene(self.widget, Path(path), self.size)

    def close(self) -> None:
        if self.widget is None:
            return
        self.widget.close()
        self.widget.deleteLater()
        self.widget = None

    def __enter__(self) -> HeatmapExporter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def export_heatmap(result: RunResult, path: str | Path, map_name: str = "count",
                   size: tuple[int, int] = (1200, 900), writer_kind: str = "thread",
                   image: MapImage | None = None) -> Path:
    """Write map ``map_name`` of ``result`` (or a ready ``image``) to ``path``
    (.png or .svg): titled with kernel, shape, launch, backend and verdict,
    with its colour bar."""
    with HeatmapExporter(size) as exporter:
        return exporter.write(result, path, map_name, writer_kind, image)


class SweepImages:
    """A sweep's images: one .png per configuration (``grid<B>_block<T>.png``,
    beside its .npz) as each comes (``threadmap sweep`` writes them while the
    next configurations run), then ``contact_sheet.png``."""

    def __init__(self, out: Path, map_name: str = "count", size: tuple[int, int] = (800, 600)):
        ensure_app()
        self.out = Path(out)
        self.map_name = map_name
        #: each configuration's image size (the app's chosen export size)
        self.size = size
        self._exporter: HeatmapExporter | None = None

    def add(self, cell: SweepCell) -> None:
        if cell.result is None:
            return
        if self._exporter is None:
            self._exporter = HeatmapExporter(self.size)
        self._exporter.write(cell.result, self.out / f"{cell.stem}.png",
                             self.map_name)

    def finish(self, cells: list[SweepCell]) -> None:
        if self._exporter is not None:
            self._exporter.close()
            self._exporter = None
        export_contact_sheet(cells, self.out / "contact_sheet.png", self.map_name)


def export_sweep_images(cells: list[SweepCell], out: Path, map_name: str = "count",
                        size: tuple[int, int] = (800, 600)) -> None:
    """Every image of a finished sweep (SweepImages), each configuration's
    ``size`` pixels: the sweep tab's export to a folder."""
    images = SweepImages(out, map_name, size)
    for cell in cells:
        images.add(cell)
    images.finish(cells)


def png_bytes(result: RunResult, map_name: str = "count",
              size: tuple[int, int] = (800, 600)) -> bytes:
    """Map ``map_name`` of ``result`` as a PNG file's bytes (for notebooks:
    ``ThreadMapResult.image`` and its rich display)."""
    import tempfile

    ensure_app()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "map.png"
        export_heatmap(result, path, map_name, size)
        return path.read_bytes()


def export_contact_sheet(cells: list[SweepCell], path: str | Path, map_name: str = "count",
                         cell_size: int = 220) -> Path:
    """The sweep matrix (grids down, blocks across) as one PNG, every map on
    one shared colour scale with its colour bar, each cell titled with its
    verdict, time and, for a FAIL, why."""
    ensure_app()  # (the bar's labels are measured before the figure is made)
    blocks = dims_order(c.grid for c in cells)
    threads = dims_order(c.block for c in cells)
    ok = [c for c in cells if c.result is not None]
    top = shared_top(ok, map_name)
    # (the first map made ahead: its colour bar's labels size the sheet)
    shown = make_map(ok[0].result, map_name, shared_top=top) if ok else None
    bar_axis = _SheetBarAxis(shown, cell_size * len(blocks)) if shown else None
    # Room for the row labels, the colour bar with its tick labels and
    # caption, and the titles.
    room = max(150, 50 + bar_axis.width) if bar_axis else 150
    size = (cell_size * len(threads) + room, cell_size * len(blocks) + 110)
    widget = _offscreen_widget(size)
    try:
        first = ok[0].result.request if ok else None
        title = (f"{first.kernel_label} {first.shape_label}: {map_label(map_name, first)}"
                 " (grids down, blocks across)") if first else "sweep"
        widget.ci.addLabel(_wrapped(title, size[0] - 40, 11), row=0, col=0,
                           colspan=len(threads) + 2, size="11pt")
        for col, dims in enumerate(threads):
            widget.ci.addLabel(dims_heading(dims, "thread"), row=1, col=col + 1, size="9pt")
        for row, dims in enumerate(blocks):
            widget.ci.addLabel(dims_heading(dims, "block"), row=row + 2, col=0, angle=-90,
                               size="9pt")
        for cell in cells:
            row = 2 + blocks.index(cell.grid)
            col = 1 + threads.index(cell.block)
            tile = MapTile(widget.ci, row, col)
            if cell.result is None:
                tile.set_caption(f"{cell.label}: error")
                continue
            image = shown if cell is ok[0] else make_map(cell.result, map_name, shared_top=top)
            findings = cell_findings(cell)
            colour = "#1a7f37" if cell.result.verdict.passed else "#c62828"
            caption = f"<span style='color:{colour}'>{cell_title(cell)}</span>"
            if findings:
                caption += f"<br>{_wrapped(findings, cell_size - 10, 8)}"
            tile.show(image)
            tile.set_caption(caption)
        if shown is not None:
            bar = pg.ColorBarItem(values=shown.levels, colorMap=colour_map(shown.colouring),
                                  interactive=False, width=14)
            bar_axis.apply(bar.axis)
            widget.ci.addItem(bar, row=2, col=len(threads) + 1, rowspan=len(blocks))
        return _write_scene(widget, Path(path), size)
    finally:
        widget.close()
        widget.deleteLater()


class _SheetBarAxis:
    """The contact sheet's colour bar axis: every tick label, and a caption
    saying what the colour means (the map's title).  pyqtgraph's bar keeps
    its axis 45 px wide and drops each label that does not fit ("outside C",
    "1 thread, 2+", "20,000"), leaving a bar without words: the width is
    measured from the labels instead."""

    def __init__(self, image: MapImage, height_px: int, point_size: float = 9):
        self.ticks = colour_bar_ticks(image)
        self.font = QtGui.QFont()
        self.font.setPointSizeF(point_size)
        metrics = QtGui.QFontMetricsF(self.font)
        # (labels pyqtgraph chooses itself, where ticks is None: numbers such
        # as "8e-08" or "1,500")
        labels = [label for level in self.ticks or [] for _, label in level] or ["-8.88e-08"]
        longest = max(metrics.horizontalAdvance(label) for label in labels)
        #: the caption, shortened to the bar's height (it runs along it)
        self.caption = metrics.elidedText(image.title, QtCore.Qt.TextElideMode.ElideRight,
                                          max(height_px, 40))
        # tick (5) + gap (2) + the longest label + a margin, then the caption's line
        self.width = int(5 + 2 + longest + 6 + metrics.height() + 6)

    def apply(self, axis: pg.AxisItem) -> None:
        axis.setStyle(tickFont=self.font, showValues=True)
        axis.enableAutoSIPrefix(False)  # ("8e-08", never "80" and "(x1e-09)")
        if self.ticks is not None:
            axis.setTicks(self.ticks)
        axis.setLabel(self.caption, **{"font-size": f"{self.font.pointSizeF():g}pt"})
        axis.setWidth(self.width)


#: More frames than this are sampled evenly (a kernel can have 16,384 iterations).
MAX_REPLAY_FRAMES = 120


def replay_iterations(result: RunResult, max_frames: int = MAX_REPLAY_FRAMES) -> list[int]:
    """The iterations with any store, sampled evenly down to ``max_frames``."""
    iterations = np.unique(result.maps.iteration[result.maps.iteration >= 0])
    if iterations.size > max_frames:
        picks = np.round(np.linspace(0, iterations.size - 1, max_frames)).astype(int)
        iterations = iterations[picks]
    return [int(i) for i in iterations]


def export_replay(result: RunResult, folder: str | Path, size: tuple[int, int] = (800, 600),
                  gif: bool = True, frame_ms: int = 500, max_frames: int = MAX_REPLAY_FRAMES,
                  progress=None) -> list[Path]:
    """One PNG per grid-stride iteration with stores (``replay_000.png``, ...;
    at most ``max_frames``, sampled evenly) and, with Pillow installed,
    ``replay.gif`` playing them.  ``progress(done, total)`` may return False to
    stop early.  Returns the files written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    iterations = replay_iterations(result, max_frames)
    if not iterations:
        raise ValueError("no element was written: nothing to replay")
    written = []
    widget = _offscreen_widget(size)
    try:
        widget.ci.addLabel(run_title(result, html=True), row=0, col=0, size="11pt")
        plot = HeatmapPlot(widget.ci, row=1, col=0)
        for frame, iteration in enumerate(iterations):
            if progress is not None and progress(frame, len(iterations)) is False:
                break
            plot.show(replay_map(result, iteration))
            written.append(_write_scene(widget, folder / f"replay_{frame:03d}.png", size))
    finally:
        widget.close()
        widget.deleteLater()
    if gif and written:
        try:
            from PIL import Image
        except ImportError:
            return written
        frames = [Image.open(path).convert("P", palette=Image.Palette.ADAPTIVE)
                  for path in written]
        target = folder / "replay.gif"
        write_atomically(target, lambda temporary: frames[0].save(
            temporary, format="GIF", save_all=True, append_images=frames[1:],
            duration=frame_ms, loop=0))
        for image in frames:
            image.close()
        written.append(target)
    return written


def cell_findings(cell: SweepCell) -> str:
    """What the lockstep checks found in a cell, in a few words ("" if nothing):
    why it failed, and bank conflicts."""
    if cell.result is None:
        return ""
    found = []
    verdict = cell.result.verdict
    if not verdict.passed:
        found.append(verdict.short_reasons)
    analysis = cell.result.analysis
    if analysis is not None:
        worst = max((c.max_ways for c in analysis.bank_conflicts if c.conflicted), default=0)
        if worst:
            found.append(f"{worst}-way bank conflicts")
    return "; ".join(found)


def cell_title(cell: SweepCell) -> str:
    """``"4 x 256 PASS 1.2 ms"`` (a time labelled "emulated" or "simulated"
    when it is not a GPU time: never an abbreviation a beginner must decode)."""
    if cell.result is None:
        return f"{cell.label} error"
    timing = cell.result.shown_timing
    when = ""
    if timing is not None:
        tag = "" if timing.is_gpu_time else {"cpu": " emulated", "cpu-instant": " emulated",
                                             "sim": " simulated"}.get(timing.backend, "")
        when = f" {format_seconds(timing.seconds)}{tag}"
    return f"{cell.label} {cell.result.verdict.shown_word}{when}"


def shared_top(cells: list[SweepCell], map_name: str) -> float | None:
    """One colour scale for every cell of a sweep (failed cells ignored)."""
    cells = [c for c in cells if c.result is not None]
    if not cells:
        return None
    base, _, array = map_name.partition(":")
    if array:  # (another array the kernel stores into: its maps, cell by cell)
        try:
            maps = [written_of(c.result, array) for c in cells]
        except ThreadMapError:
            return None
    else:
        maps = [c.result.maps for c in cells]
    if base == "count":
        return float(max(max(int(m.writes.max()), 1) for m in maps))
    if base == "iteration":
        return float(max(m.iterations - 1 for m in maps))
    if map_name in ("oob", "stores"):
        attr = "oob_per_thread" if map_name == "oob" else "stores_per_thread"
        return float(max(int(getattr(c.result.maps, attr).max(initial=0)) for c in cells))
    return None


def cli_exporter(result: RunResult, png: str | None = None, svg: str | None = None,
                 map_name: str = "count", size: tuple[int, int] = (1200, 900)) -> None:
    """The ``--png`` / ``--svg`` options of ``threadmap run``."""
    for path in (png, svg):
        if path:
            export_heatmap(result, path, map_name, size)
