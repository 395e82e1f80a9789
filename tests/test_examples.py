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
         "reduce_interleaved", "reduce_strided", "reduce_sequential", "reduce_first_add",
         "reduce_last_warp", "reduce_unrolled", "reduce_shuffle", "stencil_1d", "histogram",
         "scan_hillis_steele", "scan_blelloch", "softmax_rows", "count_warp_aggregated")

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
    # int32 bins, held to the reference exactly (a count off by one fails)
    assert result.c.dtype == np.int32 and result.verdict.errors.exact
    np.testing.assert_array_equal(result.c.reshape(-1), np.bincount(bins, minlength=16))
    assert result.verdict.word == "PASS"


def test_a_warp_counts_its_votes_with_one_atomic():
    result = example("count_warp_aggregated")
    request = result.request
    (x,) = make_described_inputs(request.arguments, ("x",), request.pattern, request.seed)
    positive = x > 0
    # 16 blocks of 256: 128 warps, each with a positive element (so a leader)
    assert positive.reshape(128, 32).any(axis=1).all()
    # one atomic add per warp, where one per positive element would be 2,072
    assert int(result.maps.atomics.sum()) == 128 and result.maps.collided == 0
    assert int(positive.sum()) == 2072
    np.testing.assert_array_equal(result.maps.count, 0)  # no plain store
    assert result.c.reshape(-1).tolist() == [2072]
    assert result.verdict.word == "PASS" and result.verdict.errors.exact
    # the leader's test lets 1 lane of each warp in: every warp splits, 1 / 31;
    # the guard splits none (4,096 is 128 whole warps)
    guard, leader = result.analysis.divergence
    assert (guard.evaluations, guard.requests, guard.divergent) == (128, 128, 0)
    assert (leader.evaluations, leader.requests, leader.divergent,
            leader.min_active_lanes) == (128, 128, 128, 1)
    assert result.analysis.warp == ()  # the ballot's full mask: every lane takes part


def test_one_thread_per_row_reads_32_sectors_a_request():
    analysis = example("softmax_rows").analysis
    # the 32 lanes of a warp read 32 rows, 100 floats (400 bytes) apart: a
    # sector each, 8x the 4 that 32 consecutive floats fill
    for s in analysis.coalescing:
        assert (s.mean_sectors, s.ideal_sectors) == (32.0, 4.0), s.site.text
    # the max loop runs 99 times in each of 2 warps
    assert site(analysis.coalescing, "x[r, 0]", "load").requests == 2
    assert [s.requests for s in analysis.coalescing if s.site.line == 16] == [198]


def variant(tmp_path, name: str, edit) -> object:
    """The example with ``edit`` made to its text (the lesson's mistake),
    run as the example is."""
    path = tmp_path / f"{name}.py"
    path.write_text(edit((EXAMPLES / f"{name}.py").read_text()))
    request = default_launch(describe_request(RunRequest(
        kernel=None, kernel_file=str(path), backend="cpu", repeats=1,
        reference=f"{EXAMPLES / 'references.py'}:{name}")))
    return run(request)


def test_the_strided_index_trades_divergence_for_bank_conflicts():
    analysis = example("reduce_strided").analysis
    # the working threads are the first 128 / 2s, as in reduction 3: the same
    # 224 evaluations, 64 warps in, 40 split
    branch_ = branch(example("reduce_strided"), "if index < TPB")
    assert (branch_.evaluations, branch_.requests, branch_.divergent) == (224, 64, 40)
    # lane t at word 2 s t.  s = 1: warps 0 and 1, even banks, 2 words each:
    # 2 ways; s = 2: 32 lanes on 8 banks, 4 ways; s = 4, 8, 16: 16, 8, 4 lanes
    # on 4, 2, 1 banks, 4 ways; s = 32: 2 lanes on bank 0, 2 ways; s = 64: 1.
    # Per block 8 requests, 2 + 2 + 4 + 4 + 4 + 4 + 2 + 1 = 23 ways; 8 blocks
    for text in ("sdata[index]", "sdata[index + s]"):
        s = site(analysis.bank_conflicts, text, "load")
        assert (s.requests, s.mean_ways, s.max_ways) == (64, 23 / 8, 4)


def test_the_first_add_halves_the_blocks_and_reads_each_element_once():
    result = example("reduce_first_add")
    assert result.request.grid == (4,)  # 1,024 elements, 128 threads a block, 2 each
    np.testing.assert_array_equal(result.read_maps()["reads_x"], 1)
    # 4 blocks x 4 warps, one request a warp for each of the two loads
    for text in ("x[i]", "x[i + TPB]"):
        s = site(result.analysis.coalescing, text, "load")
        assert (s.requests, s.mean_sectors) == (16, 4.0)
    # reduction 3's branch on 4 blocks: 7 steps x 4 warps x 4 = 112; 8 warps
    # in and 5 split per block
    branch_ = branch(result, "if t < s")
    assert (branch_.evaluations, branch_.requests, branch_.divergent) == (112, 32, 20)


def test_the_last_warp_needs_its_syncwarps(tmp_path):
    result = example("reduce_last_warp")
    # no step splits a warp: s = 64 takes warps 0 and 1, then warp 0 alone
    # runs 6 steps (s = 32 .. 1) and the test that ends them: 7 x 4 blocks
    assert (branch(result, "if t < s").divergent, branch(result, "if t < 32").divergent) == (0, 0)
    inner = branch(result, "while s > 0")
    assert (inner.evaluations, inner.requests, inner.divergent) == (28, 24, 0)
    # Harris's own form, without the syncwarps.  Step s reads sdata[t + s],
    # which lane t + s wrote in the step before (one barrier interval from
    # s = 32 on): step 16 races on sdata[16..31] (read by lanes 0-15, then
    # written by lanes 16-31 again), step 8 on sdata[8..31], of which 8..15
    # are new, then 4..7, 2..3 and 1.  Counted in elements, each once:
    # 16 + 8 + 4 + 2 + 1 = 31 a block (sdata[0] is only ever lane 0's), 4 blocks.
    # The first: lane 0 reads sdata[16], which lane 16 wrote at step 32.
    racy = variant(tmp_path, "reduce_last_warp",
                   lambda text: text.replace("            cuda.syncwarp()\n", ""))
    races = racy.analysis.races
    assert races.count == 124
    (a, b) = races.first
    assert (a.thread, a.access.kind, b.thread, b.access.kind, races.index) == (
        16, "store", 0, "load", (16,))
    assert not racy.verdict.passed


def test_the_unrolled_reduction_never_splits_a_warp_but_to_store_its_sum():
    result = example("reduce_unrolled")
    # every test is on whole warps (t < 64: warps 0 and 1; t < 32: warp 0),
    # and no loop is left to test
    assert {b.branch.text: b.divergent for b in result.analysis.divergence} == {
        "if t < 64": 0, "if t < 32": 0, "if t == 0": 4}


def test_the_shuffle_reduction_reads_16_elements_a_thread_coalesced():
    result = example("reduce_shuffle")
    analysis = result.analysis
    # 4,096 elements, 2 x 128 threads: 16 each, strided by 256, so each of the
    # 8 warps' 16 requests reads 32 consecutive floats: 128 requests of 4 sectors
    np.testing.assert_array_equal(result.read_maps()["reads_x"], 1)
    s = site(analysis.coalescing, "x[i]", "load")
    assert (s.requests, s.mean_sectors) == (128, 4.0)
    # the loop is tested 17 times per warp (16 and the exit); the shuffles'
    # 5 steps (offset 16 .. 1) and the exit: 6 per warp; no warp splits
    loop = branch(result, "for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1))")
    steps = branch(result, "while offset > 0")
    assert (loop.evaluations, loop.divergent, steps.evaluations, steps.divergent) == (
        136, 0, 48, 0)
    # shared memory holds one sum per warp: 8 single-lane stores
    store = site(analysis.bank_conflicts, "warp_sums[t // 32]", "store")
    assert store.requests == 8
    assert result.verdict.warp_hazards == 0


def test_hillis_steele_needs_its_second_buffer(tmp_path):
    result = example("scan_hillis_steele")
    # 8 steps (offset 1 .. 128) x 8 warps = 64 evaluations.  Warps in: all 8
    # for offset <= 16 (40), then 7, 6 and 4: 57; offset 1 .. 16 split warp 0,
    # the last of them with 16 lanes in
    branch_ = branch(result, "if t >= offset")
    assert (branch_.evaluations, branch_.requests, branch_.divergent,
            branch_.min_active_lanes) == (64, 57, 5, 16)
    # One buffer: temp[t] += temp[t - offset].  Thread t reads the element
    # thread t - offset writes in the same step: the read comes after that
    # write for t >= 2 offset, so 256 - 2 offset racing reads a step (1,538 in
    # all).  Counted in elements: step 1 races on temp[1..254] (read by
    # threads 2..255); every later step's racing elements lie within those,
    # and temp[0] and temp[255] have no other thread's write, resp. read, in
    # any step: 254.  The first: thread 1 writes temp[1], thread 2 reads it.
    # The sums come out wrong too.
    racy = variant(tmp_path, "scan_hillis_steele", lambda text: text.replace(
        text[text.index("    temp = cuda.shared"):text.index("\n\n\nif __name__")],
        "    temp = cuda.shared.array(N, float32)\n"
        "    t = cuda.threadIdx.x\n"
        "    temp[t] = x[t]\n"
        "    cuda.syncthreads()\n"
        "    offset = 1\n"
        "    while offset < N:\n"
        "        if t >= offset:\n"
        "            temp[t] += temp[t - offset]\n"
        "        cuda.syncthreads()\n"
        "        offset *= 2\n"
        "    out[t] = temp[t]"))
    races = racy.analysis.races
    assert races.count == 254
    (a, b) = races.first
    assert (a.thread, a.access.kind, b.thread, b.access.kind, races.index) == (
        1, "store", 2, "load", (1,))
    assert racy.verdict.errors.wrong > 0


def test_blelloch_s_tree_steps_conflict_up_to_8_ways():
    analysis = example("scan_blelloch").analysis
    # up-sweep, temp[ai] with ai = offset (2 t + 1) - 1: lanes 2 offset words
    # apart.  d = 128: 4 warps, 2 ways; d = 64: 2 warps, 4 ways; d = 32, 16, 8:
    # 32, 16, 8 lanes on 4, 2, 1 banks, 8 ways; d = 4, 2, 1: 4, 2, 1 ways.
    # 12 requests, 4 x 2 + 2 x 4 + 8 + 8 + 8 + 4 + 2 + 1 = 47 ways
    up = [s for s in analysis.bank_conflicts if s.site.text == "temp[ai]"]
    assert {(s.requests, s.mean_ways, s.max_ways) for s in up} == {(12, 47 / 12, 8)}
    # each thread loads x[2 t] and x[2 t + 1]: a warp's request spans 64
    # floats, 8 sectors, twice the fewest
    s = site(analysis.coalescing, "x[2 * t]", "load")
    assert (s.requests, s.mean_sectors) == (4, 8.0)
    # the tree's test splits warp 0 once d < 32: 5 of 32 evaluations a sweep
    for sweep in [b for b in analysis.divergence if b.branch.text == "if t < d"]:
        assert (sweep.evaluations, sweep.requests, sweep.divergent) == (32, 12, 5)
