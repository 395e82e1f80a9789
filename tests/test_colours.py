"""Colour that tells the truth (issue 10, point 6): never / once / many stay
apart at any maximum, colour bars label their range, writer maps stay
readable at 1,024 threads."""
from pathlib import Path

import numpy as np
import pytest

from kernels import ATOMIC_COLOUR, REPEAT_COLOUR, RunRequest, describe_request, run


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
    # On the bar, atomic updates by several threads, writes outside C, one
    # thread's repeated stores, 0 and 1 each hold 1/6.5 of its height (0 and
    # 1 held 1/1025 each on a linear scale).
    low, high = image.levels
    assert (0.5 - low) / (high - low) == pytest.approx(4 / 6.5)


def test_one_thread_storing_an_element_again_is_not_drawn_as_a_collision(maps_module):
    maps, colors, heatmap = maps_module
    kernel = str(Path(__file__).parent / "kernels" / "accumulate_in_c.py")
    correct = run(RunRequest(kernel=None, kernel_file=kernel, m=20, k=6, n=12, grid=(3, 2),
                             block=(8, 8), backend="cpu"))
    assert correct.verdict.passed and correct.maps.writes.max() == 7  # K + 1 stores
    broken = run(RunRequest(kernel="tid-rows", m=16, k=4, n=16, grid=(1,), block=(64,),
                            backend="cpu"))
    blue = tuple(int(c) for c in bytes.fromhex(REPEAT_COLOUR[1:]))
    for result, expected in ((correct, True), (broken, False)):
        image = maps.make_map(result, "count")
        rgba = colors.image_rgba(image)
        stored_again = result.maps.writes >= 2
        is_blue = (rgba[..., :3] == blue).all(axis=2)
        assert (is_blue[stored_again] == expected).all()
        assert not is_blue[~stored_again].any()
    assert "blue = stored more than once by one thread" in image.legend
    assert heatmap.count_ticks(7)[2] == (-1.0, "1 thread, 2+")


HISTOGRAM = Path(__file__).parent.parent / "examples" / "histogram.py"


def test_atomic_updates_by_several_threads_are_not_drawn_as_collisions(maps_module):
    # The course's histogram: 4,096 elements into 16 bins, every write an
    # atomic add, so each bin is updated by many threads and none collides.
    maps, colors, heatmap = maps_module
    request = describe_request(RunRequest(kernel=None, kernel_file=str(HISTOGRAM), grid=(16,),
                                          block=(256,), backend="cpu", repeats=1),
                               as_it_is_unless_matmul=True)
    result = run(request)
    bins = result.maps
    assert bins.collided == 0 and int(bins.atomics.sum()) == 4096
    assert bins.atomic_mask.all()  # every bin: several threads, atomics only
    image = maps.make_map(result, "count")
    rgba = colors.image_rgba(image)[..., :3]
    lavender = tuple(int(c) for c in bytes.fromhex(ATOMIC_COLOUR[1:]))
    assert (rgba == lavender).all(axis=-1).all()
    reds = {tuple(int(x) for x in bytes.fromhex(c[1:])) for c in maps.MANY_COLOURS}
    assert not any((rgba == red).all(axis=-1).any() for red in reds)
    assert "lavender = updated atomically by several threads" in image.legend
    # the bar names the band outside the output by the output's name
    labels = [label for _, label in heatmap.colour_bar_ticks(image)[0]]
    assert "outside bins" in labels and "outside C" not in labels
    hover = maps.hover_text(result, image, 0, 0)
    assert "(+" in hover and "atomic updates: no collision" in hover
    assert "(collision)" not in hover
    # A plain store by several threads is still a collision, drawn in the
    # reds, and a run with no atomic update says nothing of the band.
    broken = run(RunRequest(kernel="tid-rows", m=16, k=4, n=16, grid=(1,), block=(64,),
                            backend="cpu", repeats=1))
    assert broken.verdict.collided and not broken.maps.atomic_mask.any()
    image = maps.make_map(broken, "count")
    drawn = colors.image_rgba(image)[..., :3]
    assert not (drawn == lavender).all(axis=-1).any()
    assert "lavender" not in image.legend
    # the check's thumbnail draws the bins as the app does, never as unwritten
    from kernels.thumbnail import count_rgb
    thumb = count_rgb(bins.writes, bins.min_writer == bins.max_writer, bins.atomic_mask)
    assert (thumb == lavender).all(axis=-1).all()


def test_count_bar_ticks_are_whole_numbers_up_to_the_maximum(maps_module):
    _, _, heatmap = maps_module
    labels = [label for _, label in heatmap.count_ticks(1024)]
    # (below 0: the band of one thread's repeated stores)
    # (from 2 up: the collisions, named where they start)
    assert labels[:6] == ["atomic, 2+", "outside C", "1 thread, 2+", "0", "1", "2 collide"]
    assert labels[-1] == "1,024"
    assert all(label.replace(",", "").isdigit() for label in labels[3:5] + labels[6:])
    positions = [p for p, _ in heatmap.count_ticks(1024)]
    assert positions == sorted(positions)
    # never two labels closer than about a label's height on a 200 px bar
    for top in (7, 100, 1024, 4096, 100_000, 4_194_304):
        places = [p for p, _ in heatmap.count_ticks(top)]
        assert min(b - a for a, b in zip(places, places[1:])) >= heatmap.GAP - 1e-9, top


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


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB bytes to CIE Lab (D65)."""
    c = np.asarray(rgb, float) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                             [0.0193, 0.1192, 0.9505]]).T / np.array([0.95047, 1, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], -1)


def test_the_32_warps_of_a_block_have_32_colours_and_a_legend(maps_module):
    maps, colors, heatmap = maps_module
    result = run(RunRequest(kernel="grid-stride", m=32, k=4, n=64, grid=(1,), block=(1024,),
                            backend="cpu"))
    image = maps.make_map(result, "writer")
    rgba = colors.image_rgba(image)
    # element e is thread e's (1,024 threads, 64 columns): lane 16 of warp w
    # at element 32 w + 16
    middles = np.array([rgba[(32 * w + 16) // 64, (32 * w + 16) % 64, :3] for w in range(32)])
    lab = _lab(middles)
    distance = np.linalg.norm(lab[:, None] - lab[None], axis=2) + np.eye(32) * 1e3
    assert distance.min() > 12  # CIE76: clearly apart, warps 0, 10, 20 and 30 too
    assert "mod 32" in image.legend
    ticks = heatmap.colour_bar_ticks(image)
    named = [label for level in ticks for _, label in level]
    assert {f"w{w}" for w in range(32)} <= set(named) and "none" in named
    # w0's label lay on "none"'s (a band one value of 1,026 tall): it is on the
    # level pyqtgraph shows only where it fits
    assert "w0" not in [label for _, label in ticks[0]]


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


def test_writes_outside_c_show_in_a_margin_around_the_count_and_writer_maps(maps_module):
    maps, colors, heatmap = maps_module
    # 70 elements over 16 threads: chunks of 5; threads 14 and 15 store flat
    # elements 70-79: row 10 (= M), columns 0-6, and row 11, columns 0-2
    result = run(RunRequest(kernel="one-block-chunks", m=10, k=3, n=7, grid=(1,), block=(16,),
                            backend="cpu"))
    magenta = tuple(int(c) for c in bytes.fromhex(colors.OUTSIDE_COLOUR[1:]))
    for name in ("count", "writer"):
        image = maps.make_map(result, name)
        assert image.margin == 4 and image.data.shape == (18, 15)
        rgba = colors.image_rgba(image)
        outside = (rgba[..., :3] == magenta).all(axis=2) & (rgba[..., 3] > 0)
        landed = np.zeros((18, 15), bool)
        landed[4 + 10, 4:4 + 7] = True
        landed[4 + 11, 4:4 + 3] = True
        np.testing.assert_array_equal(outside, landed)
        assert (rgba[4:14, 4:11, 3] > 0).all()  # C itself drawn whole
        assert "magenta, around C" in image.legend
        labels = [label for _, label in heatmap.colour_bar_ticks(image)[0]]
        assert "outside C" in labels or "none / outside C" in labels
    assert maps.hover_text(result, image, 10, 2) == (
        "outside C, at [10, 2]: 1 out-of-bounds write landed here")
    assert maps.hover_text(result, image, 12, 2).endswith("no write landed here")
    assert maps.hover_text(result, image, 3, 2).startswith("C[3, 2]: stored 1 time")
    assert maps.hover_text(result, image, 14, 2) is None  # past the margin
    # a run that writes only inside C has no margin
    assert maps.make_map(run(RunRequest(kernel="grid-stride", m=10, k=3, n=7, grid=(1,),
                                        block=(16,), backend="cpu")), "count").margin == 0
