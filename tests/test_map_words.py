"""Map legends and axes say what a beginner should read: the writer map and
the replay name warps alike; a vector's legend speaks of its own array; a
map of one row has whole-number ticks."""
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from kernels import RunRequest, run  # noqa: E402

ROOT = Path(__file__).parent.parent


def test_the_replay_colours_warps_as_the_writer_map_does(qapp):
    from app.models.map_images import WARP_HUES, make_map, replay_map
    from app.views.colors import image_rgba

    # 1,024 threads in 2 blocks of 512 over 64 x 64: 4 grid-stride iterations
    result = run(RunRequest(kernel="grid-stride", m=64, k=4, n=64, grid=(2,), block=(512,),
                            backend="cpu"))
    writer = make_map(result, "writer", "thread")
    replay = replay_map(result, 1)
    assert f"mod {WARP_HUES}" in writer.legend and f"mod {WARP_HUES}" in replay.legend
    # the element written at iteration 1 by thread t: the writer map's hue
    # for t's warp (lane 16 of its ramp) is the replay's colour there
    now = result.maps.iteration == 1
    row, col = np.argwhere(now)[0]
    warp = int(result.maps.min_writer[row, col]) // 32
    assert replay.data[row, col] == (warp % WARP_HUES) * 32 + 16
    assert writer.colouring == replay.colouring
    assert image_rgba(replay)[row, col, 3] == 255


def test_a_vector_adds_legend_names_its_own_array(qapp):
    from app.models.map_images import make_map

    from kernels import describe_request

    result = run(describe_request(RunRequest(
        kernel=None, kernel_file=str(ROOT / "examples" / "vector_add.py"), grid=(16,),
        block=(256,), backend="cpu"), as_it_is_unless_matmul=True))
    assert result.output == "out"
    legend = make_map(result, "count", "thread").legend
    assert "out[i] +=" in legend and "C[i, j]" not in legend


def test_a_map_of_one_row_has_whole_row_ticks(qtbot):
    from app.models.map_images import Colouring, MapImage
    from app.views.heatmap import HeatmapWidget

    widget = HeatmapWidget()
    qtbot.addWidget(widget)
    image = MapImage("blocks", "One block", np.ones((1, 4)), Colouring("zero", 1), "",
                     "block x", "block y", "grid")
    widget.heatmap.show(image)
    (ticks,) = widget.heatmap.plot.getAxis("left")._tickLevels
    assert ticks == [(0, "0")]


def test_a_map_the_run_cannot_have_leaves_no_earlier_picture(window):
    """Bank conflicts of a kernel without shared memory, and Diff with one run:
    the reason where the map goes, not the picture of the map chosen before."""
    controls = window.controls
    controls.select_kernel("builtin", "grid-stride")
    controls.m_spin.setValue(16)
    controls.k_spin.setValue(8)
    controls.n_spin.setValue(16)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    view = window.maps_view
    plot = view.heatmap.heatmap
    assert plot.current is not None and plot.image.image is not None  # the write count
    for name, why in (("ways", "this kernel has no shared array"),
                      ("diff", "select two runs")):
        view.map_combo.setCurrentIndex(view.map_combo.findData(name))
        assert plot.current is None and plot.image.image is None, name
        assert view.legend_label.text().startswith(why)
        assert why in plot.title
    view.map_combo.setCurrentIndex(view.map_combo.findData("count"))
    assert plot.current is not None and plot.image.image is not None
