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
    return argb[..., :3] * alpha + 255 * (1 - alpha)


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
