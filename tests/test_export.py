"""Exported images: the SVG and the PNG of one map show the same picture
(issue 10, point 7), checked with a real SVG renderer (librsvg)."""
import shutil
import subprocess

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
    assert (width, height) == (2 * 200 + 150, 2 * 200 + 110)
    # The shared colour bar, right of the cells: black (never), green (once)
    # and red (more than once) bands of the write count.
    bar = image[:, width - 65:width - 40].reshape(-1, 3).astype(int)
    colours = {tuple(c) for c in bar}
    assert (0, 0, 0) in colours and (0x1a, 0x98, 0x50) in colours
    assert any(r > 150 and g < 120 and b < 120 for r, g, b in colours)


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
