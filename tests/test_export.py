"""Exported images: the SVG and the PNG of one map show the same picture
(issue 10, point 7), checked with a real SVG renderer (librsvg); their
files' modes, names and sizes; the contact sheet's colour bar."""
import os
import re
import shutil
import stat
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from kernels import RunRequest, run


def pixels(path) -> np.ndarray:
    """RGB over white, as floats."""
    from PySide6 import QtGui

    image = QtGui.QImage(str(path)).convertToFormat(QtGui.QImage.Format.Format_ARGB32)
    width, height = image.width(), image.height()
    raw = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
    argb = raw.reshape(height, image.bytesPerLine() // 4, 4)[:, :width].astype(float)
    alpha = argb[..., 3:4] / 255
    rgb = argb[..., [2, 1, 0]]  # (ARGB32 is B, G, R, A in memory)
    return rgb * alpha + 255 * (1 - alpha)


def block_means(image: np.ndarray, n: int = 8) -> np.ndarray:
    """Means of n x n blocks: the two renderers' antialiased text differs
    pixel by pixel, a misplaced axis or colour bar does not average out."""
    h, w, _ = image.shape
    return image[:h // n * n, :w // n * n].reshape(h // n, n, w // n, n, 3).mean(axis=(1, 3))


@pytest.mark.skipif(shutil.which("rsvg-convert") is None,
                    reason="needs rsvg-convert (apt package librsvg2-bin) to render the SVG")
def test_the_svg_export_matches_the_png_export(qapp, tmp_path):
    from app.export import export_heatmap

    result = run(RunRequest(kernel="grid-stride", m=64, k=8, n=48, grid=(3,), block=(32,),
                            backend="cpu"))
    png, svg = tmp_path / "map.png", tmp_path / "map.svg"
    export_heatmap(result, png, "writer", (800, 600))
    export_heatmap(result, svg, "writer", (800, 600))
    # The axes and colour bar were drawn at 72 / 96 dpi = 0.75 scale.
    assert "matrix(0.75," not in svg.read_text()
    rendered = tmp_path / "rendered.png"
    subprocess.run(["rsvg-convert", "-w", "800", "-h", "600", str(svg), "-o", str(rendered)],
                   check=True)
    difference = np.abs(block_means(pixels(png)) - block_means(pixels(rendered))).max(axis=2)
    # Measured: 0.6% of blocks differ by more than 20 levels once aligned, 4.7%
    # with the axes at 0.75 scale.
    assert (difference > 20).mean() < 0.02


def test_the_contact_sheet_has_its_colour_bar_and_room_for_captions(qapp, tmp_path):
    from app.export import export_contact_sheet
    from kernels import run_sweep

    cells = list(run_sweep(RunRequest(kernel="one-block-chunks", m=10, k=3, n=7,
                                      backend="cpu"), (1, 2), (16, 32)))
    path = export_contact_sheet(cells, tmp_path / "sheet.png", cell_size=200)
    image = pixels(path)
    height, width, _ = image.shape
    # The cells keep their size; the room beside them fits the colour bar's
    # labels and caption.
    assert height == 2 * 200 + 110 and 2 * 200 + 150 <= width <= 2 * 200 + 200
    # The shared colour bar, right of the cells: a column of black (never),
    # green (once) and red (more than once) bands of the write count.
    def is_bar(column) -> bool:
        colours = {tuple(c) for c in column.astype(int)}
        return (0, 0, 0) in colours and (0x1a, 0x98, 0x50) in colours and \
            any(r > 150 and g < 120 and b < 120 for r, g, b in colours)

    assert any(is_bar(image[:, x]) for x in range(2 * 200, width))


def test_the_png_holds_exactly_the_pixels_qt_rendered(qapp, tmp_path):
    """The PNG is written by kernels' own encoder (10x faster than Qt's):
    decoded by Qt, it gives back the rendered figure pixel for pixel."""
    from pyqtgraph.exporters import ImageExporter
    from PySide6 import QtGui

    from app.export import HeatmapExporter

    result = run(RunRequest(kernel="grid-stride", m=40, k=8, n=56, grid=(2,), block=(32,),
                            backend="cpu"))
    with HeatmapExporter((640, 480)) as exporter:
        path = exporter.write(result, tmp_path / "map.png", "writer")
        exporter_qt = ImageExporter(exporter.widget.scene())
        exporter_qt.parameters()["width"], exporter_qt.parameters()["height"] = 640, 480
        exporter_qt.parameters()["antialias"] = False
        rendered = exporter_qt.export(toBytes=True)
    rendered.save(str(tmp_path / "qt.png"))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ours, qts = pixels(path), pixels(tmp_path / "qt.png")
    assert ours.shape == qts.shape == (480, 640, 3)
    assert np.array_equal(ours, qts)
    assert len(np.unique(ours.reshape(-1, 3), axis=0)) > 10  # a figure, not a blank
    assert QtGui.QImage(str(path)).format() != QtGui.QImage.Format.Format_Invalid


def test_an_exported_legend_is_wrapped_to_the_images_width(qapp):
    """The count map's legend (~200 characters) ran past a 1,200-pixel image:
    its lines are now measured in the label's own font."""
    from app.export import _wrapped
    from app.models.map_images import make_map
    from app.qt import QtGui

    result = run(RunRequest(kernel="grid-stride", m=16, k=4, n=16, grid=(1,), block=(64,),
                            backend="cpu", repeats=1))
    legend = make_map(result, "count").legend
    font = QtGui.QFont()
    font.setPointSizeF(9)
    metrics = QtGui.QFontMetricsF(font)
    assert metrics.horizontalAdvance(legend) > 1160  # (it needs more than one line)
    lines = _wrapped(legend, 1160).split("<br>")
    assert len(lines) >= 2
    assert all(metrics.horizontalAdvance(line) <= 1160 for line in lines)
    assert " ".join(lines).replace("&amp;", "&") == " ".join(legend.split())


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_exports_get_the_mode_of_a_newly_created_file(qapp, tmp_path, monkeypatch, umask):
    """Written through a temporary file (mode 0600) renamed into place, the
    exports had been 0600 whatever the umask."""
    from app.export import export_heatmap
    from kernels import outputs

    result = run(RunRequest(kernel="grid-stride", m=16, k=4, n=16, grid=(1,), block=(32,),
                            backend="cpu"))
    before = os.umask(umask)
    try:
        for name in ("map.png", "map.svg"):
            path = export_heatmap(result, tmp_path / name, "writer", (320, 240))
            assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, name
        # Where there is no /proc to read the umask from, it is read by setting it.
        monkeypatch.setattr(outputs, "open", lambda *args, **kw: _raise(OSError()),
                            raising=False)
        path = export_heatmap(result, tmp_path / "elsewhere.png", "writer", (320, 240))
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
        assert os.umask(umask) == umask  # (and left as it was)
    finally:
        os.umask(before)


def _raise(exc):
    raise exc


def test_the_suggested_export_name_names_the_launch(qapp, tmp_path, monkeypatch):
    """Two launches of one shape had one suggested name: the second export
    overwrote the first."""
    from app.actions import ExportHeatmapAction
    from app.qt import QtWidgets
    from app.settings import Settings

    suggested = []

    def save_file(parent, caption, name, filters):
        suggested.append(name)
        return "", ""  # (cancelled: nothing written)

    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", save_file)
    window = QtWidgets.QWidget()
    session = SimpleNamespace(current=None, map_name="count")
    action = ExportHeatmapAction(session, SimpleNamespace(export_size=(640, 480)),
                                 Settings(str(tmp_path / "settings.ini")), window)
    try:
        shape = dict(m=128, k=256, n=128)
        for request in (RunRequest(kernel="grid-stride", grid=(4, 1), block=(256,), **shape),
                        RunRequest(kernel="grid-stride", grid=(1,), block=(1024,), **shape),
                        RunRequest(kernel="matmul", kernel_file="/kernels/my kernels.py",
                                   grid=(2, 3), block=(16, 16), **shape)):
            session.current = SimpleNamespace(request=request)
            session.map_name = "writer:out" if request.kernel_file else "count"
            action.act()
    finally:
        action.shut_down()
    names = [os.path.basename(name) for name in suggested]
    assert names[0] == "grid-stride_128x256x128_g4x1_b256_count.png"
    assert names[1] == "grid-stride_128x256x128_g1_b1024_count.png"
    assert names[2] == "my_kernels.py_matmul_128x256x128_g2x3_b16x16_writer_out.png"
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in names)


def test_a_folder_export_writes_images_at_the_chosen_size(qtbot, tmp_path):
    """The sweep's "export all to folder" wrote 800 x 600 images whatever
    export size was chosen in the maps view."""
    from app.main_window import MainWindow
    from app.qt import QtGui
    from app.settings import Settings
    from kernels import run_sweep

    window = MainWindow(synchronous=True, settings=Settings(str(tmp_path / "settings.ini")),
                        confirm=lambda title, text: True)
    qtbot.addWidget(window)
    window.session.sweep_cells = list(run_sweep(
        RunRequest(kernel="grid-stride", m=12, k=4, n=10, backend="cpu"), (1, 2), (32,)))
    window.maps_view.set_export_size(640, 360)
    folder = window.export_folder_action.export_to(tmp_path / "sweep")
    images = sorted(folder.glob("grid*_block*.png"))
    assert [p.name for p in images] == ["grid1_block32.png", "grid2_block32.png"]
    for path in images:
        image = QtGui.QImage(str(path))
        assert (image.width(), image.height()) == (640, 360), path.name
    assert (folder / "contact_sheet.png").exists()


def test_the_contact_sheets_colour_bar_has_tick_labels_and_a_caption(qapp, tmp_path,
                                                                        monkeypatch):
    """The sheet's colour bar had lost its labels ("outside C", "1 thread,
    2+" did not fit pyqtgraph's 45-pixel axis) and said nowhere what its
    colours mean."""
    import pyqtgraph as pg

    from app import export
    from app.models.map_images import make_map
    from app.qt import QtGui
    from app.views.heatmap import colour_bar_ticks
    from kernels import run_sweep

    drawn = {}
    write_scene = export._write_scene

    def look(widget, path, size):
        written = write_scene(widget, path, size)
        bar = next(item for item in widget.scene().items() if isinstance(item, pg.ColorBarItem))
        canvas = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
        painter = QtGui.QPainter(canvas)
        try:
            _, _, texts = bar.axis.generateDrawSpecs(painter)
        finally:
            painter.end()
        drawn["ticks"] = [(bar.axis.mapRectToScene(rect), text) for rect, _, text in texts]
        caption = bar.axis.label
        drawn["caption"] = caption.isVisible() and caption.toPlainText().strip()
        drawn["caption box"] = caption.mapRectToScene(caption.boundingRect())
        drawn["shows values"] = bar.axis.style["showValues"]
        drawn["width"] = size[0]
        return written

    monkeypatch.setattr(export, "_write_scene", look)
    cells = list(run_sweep(RunRequest(kernel="one-block-chunks", m=10, k=3, n=7,
                                      backend="cpu"), (1, 2), (16, 32)))
    export.export_contact_sheet(cells, tmp_path / "sheet.png", "count")
    assert drawn["shows values"]
    labels = [text for _, text in drawn["ticks"]]
    # every band named, the words included, each drawn once
    image = make_map(cells[0].result, "count", shared_top=export.shared_top(cells, "count"))
    wanted = [label for level in colour_bar_ticks(image) for _, label in level]
    assert {"outside C", "1 thread, 2+", "0", "1"} <= set(wanted)
    assert sorted(labels) == sorted(wanted)
    assert drawn["caption"] == "Write count"
    # beside the tick labels, not over them, and inside the image
    box = drawn["caption box"]
    assert all(rect.right() <= box.left() + 4 for rect, _ in drawn["ticks"])
    assert box.right() <= drawn["width"]


def test_an_exported_title_speaks_the_apps_words(qapp):
    """A run without a reference: the picture's title names the Reference
    field, not the command line's '--reference FILE:FUNCTION'."""
    from pathlib import Path

    from app.export import run_title
    from kernels import describe_request

    examples = Path(__file__).resolve().parents[1] / "examples"
    request = describe_request(RunRequest(kernel="saxpy", kernel_file=str(examples / "saxpy.py"),
                                          backend="cpu", tier="instant"),
                               as_it_is_unless_matmul=True)
    result = run(request)
    assert "--reference" in result.verdict.summary()  # (the engine's words)
    for html in (False, True):
        title = run_title(result, html=html)
        assert "--reference" not in title and "the Reference field" in title
