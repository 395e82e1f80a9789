"""Colour that tells the truth (issue 10, point 6): never / once / many stay
apart at any maximum, colour bars label their range, writer maps stay
readable at 1,024 threads."""
import numpy as np
import pytest

from kernels import RunRequest, run


@pytest.fixture
def maps_module(qapp):
    from app.models import map_images as maps
    from app.views import colors, heatmap
    return maps, colors, heatmap


def test_never_once_and_many_keep_their_bands_at_a_maximum_of_1024(maps_module):
    maps, colors, heatmap = maps_module
    counts = np.array([0, 1, 2, 30, 1024])
    image = maps.MapImage("count", "", maps.count_scale(counts, 1024.0),
                          maps.Colouring("count", 1024.0), "", "", "", "C")
    rgba = colors.image_rgba(type(image)(image.name, "", image.data[None, :], image.colouring,
                                         "", "", "", "C"))[0]
    assert tuple(rgba[0, :3]) == (0, 0, 0)  # never written: black
    once = tuple(int(c) for c in bytes.fromhex(maps.ONCE_COLOUR[1:]))
    assert tuple(rgba[1, :3]) == once  # once: green, not a sliver of orange
    many = [tuple(c) for c in rgba[2:, :3]]
    assert len(set(many)) == 3 and once not in many and (0, 0, 0) not in many
    # On the bar, 0 and 1 each hold 1/3.5 of its height (they held 1/1025 each).
    low, high = image.levels
    assert (0.5 - low) / (high - low) == pytest.approx(1 / 3.5)


def test_count_bar_ticks_are_whole_numbers_up_to_the_maximum(maps_module):
    _, _, heatmap = maps_module
    labels = [label for _, label in heatmap.count_ticks(1024)]
    assert labels[:3] == ["0", "1", "2"] and labels[-1] == "1,024"
    assert all(label.replace(",", "").isdigit() for label in labels)
    positions = [p for p, _ in heatmap.count_ticks(1024)]
    assert positions == sorted(positions)


def test_a_bar_up_to_four_million_has_readable_ticks(maps_module):
    _, _, heatmap = maps_module
    labels = [label for _, label in heatmap.linear_ticks(4_194_304)]
    assert len(labels) >= 3 and labels[0] == "0" and labels[-1] == "4,194,304"


def test_writers_at_1024_threads_are_coloured_by_warp_and_shaded_by_lane(maps_module):
    from PySide6 import QtGui

    maps, colors, _ = maps_module
    result = run(RunRequest(kernel="grid-stride", m=32, k=4, n=64, grid=(1,), block=(1024,),
                            backend="cpu"))
    image = maps.make_map(result, "writer")
    rgba = colors.image_rgba(image)
    # Row 0 of C: columns 0-31 are warp 0's lanes 0-31, 32-63 warp 1's.
    hue = [QtGui.QColor(*map(int, rgba[0, c, :3])).hsvHueF() for c in range(64)]
    value = [QtGui.QColor(*map(int, rgba[0, c, :3])).lightnessF() for c in range(64)]
    assert max(hue[:32]) - min(hue[:32]) < 0.05  # one warp, one hue
    assert abs(hue[0] - hue[32]) > 0.1  # the next warp, another hue
    assert value[0] > value[31] + 0.2  # lane 0 light, lane 31 dark
    assert "warp" in image.legend and "lane" in image.legend


def test_maps_made_off_the_gui_thread_look_as_pyqtgraph_draws_them(maps_module):
    """Large maps are coloured by colors.image_rgba on a worker thread; small
    ones by pyqtgraph through the same lookup table.  Pixel for pixel the same
    (and the warp-lane writer map's 322 values keep their own colours)."""
    from PySide6 import QtGui

    maps, colors, heatmap = maps_module
    from app.qt import pg
    wide = run(RunRequest(kernel="grid-stride", m=32, k=4, n=64, grid=(1,), block=(1024,),
                          backend="cpu", repeats=1))
    broken = run(RunRequest(kernel="tid-rows", m=40, k=8, n=30, grid=(1,), block=(32,),
                            backend="cpu", repeats=1))
    layout = pg.GraphicsLayout()
    plot = heatmap.HeatmapPlot(layout)
    for result, name in ((wide, "writer"), (broken, "count"), (broken, "iteration"),
                         (broken, "error"), (broken, "oob"), (wide, "stores")):
        image = maps.make_map(result, name)
        plot.show(image)
        plot.image.render()
        drawn = plot.image.qimage.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
        pixels = np.array(drawn.constBits()).reshape(drawn.height(), drawn.width(), 4)
        ours = colors.image_rgba(image)
        shown = ours[..., 3] > 0
        assert shown.any()
        np.testing.assert_array_equal(pixels[shown][:, :3], ours[shown][:, :3], err_msg=name)
