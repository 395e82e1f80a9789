"""Write maps for every array a kernel stores into (issue 22, point 2): an array written
besides the output keeps the output's maps (count, atomic updates, lowest and highest
writer, iteration, stores per thread, the margin of its out-of-bounds writes).  Each figure
is worked out by hand; both CPU tiers and the simulator agree element by element; the maps
reach maps.npz, result.json, a stowed result and the app's map menu."""
import json

import numpy as np
import pytest

from kernels import run
from kernels.request import RunRequest
from kernels.result import WRITTEN_MAP_FIELDS
from kernels.sources.arguments import describe_request

# Each block's thread 0 stores into sums[0] (all four blocks: a race) and into
# sums[block + 3] (in bounds for block 0 only).
SPLIT = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[256]", "sums": "float32[4]", "out": "float32[256]"}


@cuda.jit
def split(x, sums, out):
    i = cuda.grid(1)
    out[i] = x[i] * 2.0
    if cuda.threadIdx.x == 0:
        sums[0] = x[i]
        sums[cuda.blockIdx.x + 3] = x[i]
'''

# Threads 2e and 2e + 1 both store flags[e]; a 1-D array of 12 drawn 3 rows of 4.
PAIRS = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[24]", "flags": "int32[12]", "out": "float32[24]"}


@cuda.jit
def pairs(x, flags, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]
        flags[i // 2] = i
'''

# Counts by i % 8, atomically, beside a plain copy into the output.
TALLY = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[100]", "bins": "int32[8]", "out": "float32[100]"}


@cuda.jit
def tally(x, bins, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]
        cuda.atomic.add(bins, i % 8, 1)
'''

BACKENDS = [("compiled", "cpu"), ("instant", "cpu"), ("compiled", "sim")]


@pytest.fixture
def files(tmp_path):
    for name, text in (("split.py", SPLIT), ("pairs.py", PAIRS), ("tally.py", TALLY)):
        (tmp_path / name).write_text(text)
    return tmp_path


def run_file(path, tier="compiled", backend="cpu", grid=(4,), block=(64,)):
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), grid=grid,
                                          block=block, backend=backend, tier=tier, repeats=1),
                               as_it_is_unless_matmul=True)
    return run(request)


def only_written(result):
    assert len(result.maps.written) == 1
    return result.maps.written[0]


@pytest.mark.parametrize("tier,backend", BACKENDS)
def test_a_second_stored_array_has_the_outputs_maps(files, tier, backend):
    result = run_file(files / "split.py", tier, backend)
    sums = only_written(result)
    assert sums.name == "sums" and result.output == "out"
    # drawn as a 1-D array of 4 is: 2 rows of 2
    assert sums.count.shape == (2, 2)
    assert sums.count.ravel().tolist() == [4, 0, 0, 1]
    assert sums.min_writer.ravel().tolist() == [0, -1, -1, 0]
    assert sums.max_writer.ravel().tolist() == [192, -1, -1, 0]
    # sums[3] is thread 0's second store to sums; sums[0] each writer's first
    assert sums.iteration.ravel().tolist() == [0, -1, -1, 1]
    assert sums.stores_per_thread[[0, 64, 128, 192]].tolist() == [2, 1, 1, 1]
    assert int(sums.stores_per_thread.sum()) == 5
    # blocks 1-3 stored past the end (sums[4], [5], [6]): counted in its margin
    assert sums.oob_margin_total == 3
    assert (sums.unwritten, sums.collided, sums.iterations) == (2, 1, 2)
    # the output's maps are its own: every element once, by its own thread
    assert result.maps.count.min() == result.maps.count.max() == 1
    assert result.maps.stores_per_thread.tolist() == [1] * 256
    assert result.analysis.global_races.count == 1


@pytest.mark.parametrize("tier,backend", BACKENDS)
def test_one_element_stored_by_two_threads_shows_both(files, tier, backend):
    result = run_file(files / "pairs.py", tier, backend, grid=(1,), block=(32,))
    flags = only_written(result)
    assert flags.count.shape == (3, 4)
    element = np.arange(12).reshape(3, 4)
    assert (flags.count == 2).all()
    assert (flags.min_writer == 2 * element).all()
    assert (flags.max_writer == 2 * element + 1).all()
    assert (flags.iteration == 0).all()
    assert flags.collided == 12
    assert flags.stores_per_thread.tolist() == [1] * 24 + [0] * 8


@pytest.mark.parametrize("tier,backend", BACKENDS)
def test_atomic_updates_of_a_second_array_are_counted_apart(files, tier, backend):
    result = run_file(files / "tally.py", tier, backend, grid=(1,), block=(128,))
    bins = only_written(result)
    k = np.arange(8)
    assert bins.atomics.ravel().tolist() == [13] * 4 + [12] * 4
    assert bins.count.sum() == 0 and bins.unwritten == 0
    assert bins.min_writer.ravel().tolist() == k.tolist()
    # the last writer of bin k: 96 + k for the bins i = 96..99 reach, 88 + k else
    assert bins.max_writer.ravel().tolist() == [96, 97, 98, 99, 92, 93, 94, 95]
    assert bins.collided == 0  # atomic updates: no collision


def test_the_backends_agree_element_by_element(files):
    for name, grid, block in (("split.py", (4,), (64,)), ("tally.py", (2,), (64,))):
        runs = [only_written(run_file(files / name, tier, backend, grid, block))
                for tier, backend in BACKENDS]
        for other in runs[1:]:
            for field in WRITTEN_MAP_FIELDS:
                assert np.array_equal(getattr(runs[0], field), getattr(other, field)), \
                    (name, field)
            for a, b in zip(runs[0].oob_margin, other.oob_margin):
                assert np.array_equal(a, b)


def test_a_matmul_keeps_only_cs_maps():
    from kernels.derived.transform import written_arrays
    from kernels.sources.loader import load_plan

    request = RunRequest(kernel="grid-stride", m=8, k=8, n=8, grid=(1,), block=(32,),
                         backend="cpu", repeats=1)
    assert written_arrays(load_plan(request)) == ()
    assert run(request).maps.written == ()


def test_maps_npz_and_result_json_hold_them(files, tmp_path):
    from kernels.run_files import write_outputs

    out = tmp_path / "out"
    write_outputs(run_file(files / "split.py"), out)
    with np.load(out / "maps.npz") as maps:  # numpy alone reads them
        assert maps["count_sums"].ravel().tolist() == [4, 0, 0, 1]
        assert maps["max_writer_sums"].ravel().tolist() == [192, -1, -1, 0]
        assert maps["iteration_sums"].ravel().tolist() == [0, -1, -1, 1]
        assert int(maps["stores_per_thread_sums"].sum()) == 5
        margin = sum(int(maps[f"oob_margin_{side}_sums"].sum())
                     for side in ("top", "bottom", "left", "right"))
        assert margin == 3
        assert maps["count"].shape == (16, 16)  # the output's, as before
    summary = json.loads((out / "result.json").read_text())
    assert summary["written_arrays"]["sums"] == {
        "elements": 4, "unwritten": 2, "collided": 1, "stores": 5, "atomic_updates": 0,
        "out_of_bounds_writes": 3, "iterations": 2}


def test_a_stowed_result_brings_them_back(files, tmp_path):
    from kernels.stow import Stowage

    result = run_file(files / "split.py")
    stowage = Stowage(tmp_path)
    try:
        stowed = stowage.stow(result)
        assert not stowed.maps.written[0].count.any()  # (a placeholder)
        back = stowage.unstow(stowed)
    finally:
        stowage.close()
    for field in WRITTEN_MAP_FIELDS:
        assert np.array_equal(getattr(back.maps.written[0], field),
                              getattr(result.maps.written[0], field)), field


def test_the_app_draws_and_names_them(files):
    from app.models.map_images import hover_text, make_map, map_label, written_map_names

    result = run_file(files / "split.py")
    assert written_map_names(result) == ["count:sums", "writer:sums", "iteration:sums"]
    assert map_label("writer:sums") == "Writer of sums"
    count = make_map(result, "count:sums")
    # framed by its margin: out-of-bounds writes landed past its end
    assert count.margin > 0 and count.domain == "written"
    inner = count.data[count.margin:-count.margin, count.margin:-count.margin]
    assert inner.shape == (2, 2)
    first = hover_text(result, count, 0, 0)
    assert first.startswith("sums[0]: stored 4 times")
    assert "lowest thread 0 = block 0" in first and "highest thread 192 = block 3" in first
    assert hover_text(result, count, 0, 1).endswith("never written")
    assert hover_text(result, count, 1, 1).endswith("iteration: 1")  # sums[3]
    # sums[5], past the end: row 2, column 1 of its rows of 2
    assert hover_text(result, count, 2, 1) == "outside sums: 1 out-of-bounds write landed here"
    # its colour bar names the array written outside too
    from app.views.heatmap import colour_bar_ticks
    assert colour_bar_ticks(count)[0][1] == (-2.0, "outside sums")
    assert "around sums = writes outside sums landed" in count.legend
    iteration = make_map(result, "iteration:sums")
    assert np.isnan(iteration.data[0, 1]) and iteration.data[1, 1] == 1
    writer = make_map(result, "writer:sums", "block")
    assert writer.data[writer.margin, writer.margin] == 0  # block 0, the lowest


def test_the_command_line_refuses_an_array_it_does_not_write(files, tmp_path):
    from kernels.cli.options import check_described_map
    from kernels.errors import ThreadMapError

    request = describe_request(RunRequest(kernel=None, kernel_file=str(files / "split.py"),
                                          grid=(4,), block=(64,), backend="cpu"),
                               as_it_is_unless_matmul=True)
    check_described_map(request, "count:sums")
    with pytest.raises(ThreadMapError, match="stores into no array 'x' besides its output "
                                             r"\(it also stores into sums\)"):
        check_described_map(request, "count:x")


def test_a_sweeps_images_of_a_written_array_share_one_scale(files, tmp_path):
    from app.export import export_contact_sheet, shared_top
    from kernels.sweep import SweepCell

    cells = []
    for grid in ((2,), (4,)):
        result = run_file(files / "split.py", grid=grid)
        cells.append(SweepCell(grid, (64,), result.request, result))
    # sums[0]: stored by each block's thread 0, 2 and then 4 times
    assert shared_top(cells, "count:sums") == 4.0
    assert shared_top(cells, "iteration:sums") == 1.0
    path = export_contact_sheet(cells, tmp_path / "sheet.png", "count:sums", cell_size=120)
    assert path.read_bytes().startswith(b"\x89PNG")
