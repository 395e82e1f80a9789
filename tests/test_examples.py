"""The course in examples/ (issue 22, point 5): each classic kernel runs as it is, PASSes
against its reference, and shows the lesson it is there for, in figures worked out by hand
(in the comments) from the kernel, its launch and the GPU's rules: 32-byte sectors, 32 banks
of 4 bytes, warps of 32 lanes."""
from pathlib import Path

import numpy as np
import pytest

from kernels import run
from kernels.inputs import make_described_inputs
from kernels.presets import default_launch
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = ("vector_add", "saxpy", "transpose_naive", "transpose_tiled", "transpose_padded",
         "reduce_interleaved", "reduce_sequential", "stencil_1d", "histogram", "softmax_rows")

_results: dict = {}


def example(name: str):
    """The example's result: its file's arguments and launch, its reference."""
    if name not in _results:
        request = describe_request(RunRequest(
            kernel=None, kernel_file=str(EXAMPLES / f"{name}.py"), backend="cpu", repeats=1,
            reference=f"{EXAMPLES / 'references.py'}:{name}"))
        request = default_launch(request)
        assert request.launch_source.startswith("from the file"), request.launch_source
        _results[name] = run(request)
    return _results[name]


def site(sites, text: str, kind: str):
    (found,) = [s for s in sites if s.site.text == text and s.site.kind == kind]
    return found


def branch(result, text: str):
    (found,) = [b for b in result.analysis.divergence if b.branch.text == text]
    return found


@pytest.mark.parametrize("name", NAMES)
def test_every_example_passes_against_its_reference_with_no_hazard(name):
    result = example(name)
    assert result.verdict.passed and not result.verdict.reference_note, result.verdict
    analysis = result.analysis
    assert (analysis.races.count, analysis.uninitialised.count,
            len(analysis.barrier_divergence)) == (0, 0, 0)


def test_vector_add_is_coalesced():
    result = example("vector_add")
    # 4,096 elements, 16 x 256 threads: one each, 128 warps, one request per
    # access; 32 lanes x 4 bytes = 128 bytes = 4 sectors, the fewest possible
    for text, kind in (("x[i]", "load"), ("y[i]", "load"), ("out[i]", "store")):
        s = site(result.analysis.coalescing, text, kind)
        assert (s.requests, s.mean_sectors, s.ideal_sectors) == (128, 4.0, 4.0)
    np.testing.assert_array_equal(result.maps.count, 1)


def test_saxpys_grid_stride_loop_covers_1000_elements_with_256_threads():
    result = example("saxpy")
    # thread t stores t, t + 256, t + 512 and, for t < 232, t + 768
    # (1,000 = 3 x 256 + 232): its grid-stride iteration is e // 256
    np.testing.assert_array_equal(result.maps.min_writer.reshape(-1), np.arange(1000) % 256)
    np.testing.assert_array_equal(result.maps.iteration.reshape(-1), np.arange(1000) // 256)
    stores = result.maps.stores_per_thread
    assert (np.count_nonzero(stores == 4), np.count_nonzero(stores == 3)) == (232, 24)
    # 4 rounds of 8 warps: 32 requests; the last round's warp 7 has 8 lanes
    # (elements 992-999: one sector), so (31 x 4 + 1) / 32 sectors a request
    s = site(result.analysis.coalescing, "x[i]", "load")
    assert (s.requests, s.mean_sectors, s.mean_lanes) == (32, 125 / 32, 1000 / 32)
    # the loop's test, 5 times per warp (4 rounds and the exit), splits once:
    # warp 7 in the last round, 8 lanes on and 24 out
    loop = branch(result, "for i in range(start, n, cuda.gridsize(1))")
    assert (loop.evaluations, loop.divergent, loop.min_active_lanes) == (40, 1, 8)


def test_the_naive_transpose_writes_32_sectors_a_request():
    analysis = example("transpose_naive").analysis
    # 4 blocks x 8 warps x 4 rows of the tile each = 128 requests per access;
    # a warp reads 32 consecutive floats of a row of a (4 sectors) and writes
    # them down a column of out: 32 rows, 32 sectors, 8x the fewest
    load = site(analysis.coalescing, "a[y + j, x]", "load")
    store = site(analysis.coalescing, "out[x, y + j]", "store")
    assert (load.requests, load.mean_sectors) == (128, 4.0)
    assert (store.requests, store.mean_sectors, store.ideal_sectors) == (128, 32.0, 4.0)


def test_the_tiled_transpose_is_coalesced_but_reads_its_tile_32_ways():
    analysis = example("transpose_tiled").analysis
    for text, kind in (("a[y + j, x]", "load"), ("out[y + j, x]", "store")):
        assert site(analysis.coalescing, text, kind).mean_sectors == 4.0
    # tile[tx, ty + j]: lane tx at word 32 tx + ty + j, bank (ty + j) mod 32,
    # the same for all 32 lanes: 32 passes; the row-wise store takes one
    column = site(analysis.bank_conflicts, "tile[tx, ty + j]", "load")
    row = site(analysis.bank_conflicts, "tile[ty + j, tx]", "store")
    assert (column.requests, column.mean_ways, column.max_ways) == (128, 32.0, 32)
    assert (row.mean_ways, row.max_ways) == (1.0, 1)


def test_the_padded_transpose_has_no_conflict():
    analysis = example("transpose_padded").analysis
    # a tile of 32 x 33: lane tx at word 33 tx + ty + j, bank (tx + ty + j) mod
    # 32, a different bank for each lane: one pass
    column = site(analysis.bank_conflicts, "tile[tx, ty + j]", "load")
    assert (column.requests, column.mean_ways, column.max_ways) == (128, 1.0, 1)


def test_interleaved_addressing_splits_nearly_every_warp():
    branch_ = branch(example("reduce_interleaved"), "if t % (2 * s) == 0")
    # per block of 4 warps, s = 1, 2, ..., 64: 7 x 4 = 28 evaluations.  For
    # s <= 16 every warp has some lanes in and some out (20 splits); s = 32:
    # t = 0 and t = 64, warps 0 and 2 split; s = 64: t = 0, warp 0: 23 per
    # block, each a warp that took the branch.  8 blocks.
    assert (branch_.evaluations, branch_.requests, branch_.divergent) == (224, 184, 184)
    assert branch_.min_active_lanes == 1


def test_sequential_addressing_keeps_whole_warps_together_until_s_is_under_32():
    branch_ = branch(example("reduce_sequential"), "if t < s")
    # s = 64: warps 0 and 1 wholly in, 2 and 3 out; s = 32: warp 0 in; then
    # s = 16, 8, 4, 2, 1 split warp 0: 2 + 1 + 5 = 8 warps that took the
    # branch per block, 5 of them split (Harris's point: 40 of 224, not 184)
    assert (branch_.evaluations, branch_.requests, branch_.divergent) == (224, 64, 40)


def test_the_stencil_reads_its_halo_once_per_block_side():
    result = example("stencil_1d")
    analysis = result.analysis
    # 8 blocks; the first has no left neighbour and the last no right one:
    # 7 single-lane requests each side
    left = site(analysis.coalescing, "x[i - 1]", "load")
    right = site(analysis.coalescing, "x[i + 1]", "load")
    assert (left.requests, left.mean_lanes, right.requests, right.mean_lanes) == (7, 1, 7, 1)
    # x read once by its own thread, and once more as a halo where a block
    # edge is next to it: elements 32 k - 1 and 32 k for k = 1..7
    reads = result.read_maps()["reads_x"]
    twice = sorted([32 * k - 1 for k in range(1, 8)] + [32 * k for k in range(1, 8)])
    assert np.flatnonzero(reads == 2).tolist() == twice
    assert np.count_nonzero(reads == 1) == 256 - 14


def test_the_histogram_counts_every_element_atomically():
    result = example("histogram")
    request = result.request
    (x,) = make_described_inputs(request.arguments, ("x",), request.pattern, request.seed)
    bins = np.minimum(((x + np.float32(1.0)) * np.float32(8.0)).astype(np.int64), 15)
    # no plain store: every bin written only by atomic adds, one per element
    np.testing.assert_array_equal(result.maps.count, 0)
    np.testing.assert_array_equal(result.maps.atomics.reshape(-1),
                                  np.bincount(bins, minlength=16))
    assert int(result.maps.atomics.sum()) == 4096 and result.maps.collided == 0


def test_one_thread_per_row_reads_32_sectors_a_request():
    analysis = example("softmax_rows").analysis
    # the 32 lanes of a warp read 32 rows, 100 floats (400 bytes) apart: a
    # sector each, 8x the 4 that 32 consecutive floats fill
    for s in analysis.coalescing:
        assert (s.mean_sectors, s.ideal_sectors) == (32.0, 4.0), s.site.text
    # the max loop runs 99 times in each of 2 warps
    assert site(analysis.coalescing, "x[r, 0]", "load").requests == 2
    assert [s.requests for s in analysis.coalescing if s.site.line == 16] == [198]
