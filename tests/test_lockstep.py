"""The block-lockstep emulation: shared memory and barriers on the CPU, with the
checks only lockstep can make.  Every expectation is worked out by hand in the
comments; the kernels are files in tests/kernels/, written as people write them.
"""
from pathlib import Path

import numpy as np
import pytest

from kernels import RequestError, RunRequest, run
from kernels.errors import UnsupportedConstruct
from tests.conftest import request

KERNELS = Path(__file__).parent / "kernels"
MAP_FIELDS = ("count", "atomics", "min_writer", "max_writer", "iteration", "stores_per_thread",
              "oob_per_thread", "reads_a", "reads_b")


def file_request(name, shape, grid, block, **kw):
    m, k, n = shape
    return RunRequest(kernel=None, kernel_file=str(KERNELS / name), m=m, k=k, n=n,
                      grid=tuple(grid), block=tuple(block), **kw)


def by_line(figures, line):
    return [f for f in figures if f.site.line == line]


# -- the CPU emulation against numba's simulator, element by element ---------------

SHARED_CASES = [
    # (built-in kernel or file, shape, grid, block): ragged shapes and multiples
    # of the tile.  Small: the simulator takes ~3 ms per thread of these.
    ("tiled", (20, 17, 18), (2, 2), (16, 16)),
    ("tiled", (32, 16, 32), (2, 2), (16, 16)),
    ("doc_style_tiled.py", (33, 17, 19), (3, 5), (8, 8)),
    ("doc_style_tiled.py", (16, 24, 16), (2, 2), (8, 8)),
    ("local_and_count.py", (9, 12, 11), (2, 3), (8, 4)),
    ("shared_off_by_one.py", (5, 7, 16), (5,), (16,)),
]


def _case_request(kernel, shape, grid, block, backend):
    if kernel.endswith(".py"):
        return file_request(kernel, shape, grid, block, backend=backend)
    return request(kernel, shape, grid, block, backend=backend)


@pytest.mark.sim
@pytest.mark.parametrize("kernel,shape,grid,block", SHARED_CASES)
def test_shared_memory_kernels_give_the_simulator_s_maps(kernel, shape, grid, block):
    cpu = run(_case_request(kernel, shape, grid, block, "cpu"))
    sim = run(_case_request(kernel, shape, grid, block, "sim"))
    assert cpu.backend == "cpu" and sim.backend == "sim"
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(sim.maps, field),
                                      err_msg=field)
    assert cpu.maps.out_of_bounds == sim.maps.out_of_bounds
    assert cpu.verdict.word == sim.verdict.word
    if kernel == "doc_style_tiled.py":
        # It accumulates in float32 (tmp = float32(0.)) in both, in the same
        # order: C is the same bit for bit.
        np.testing.assert_array_equal(cpu.c, sim.c)
        return
    # Elsewhere the simulator sums in float32 where compiled code sums in
    # float64 (tmp = 0.0; numpy 2 promotion), so C agrees to the tolerance.
    finite = np.isfinite(cpu.c) & np.isfinite(sim.c)
    assert (finite == np.isfinite(cpu.c)).all()
    np.testing.assert_allclose(cpu.c[finite], sim.c[finite], rtol=0,
                               atol=4 * cpu.verdict.errors.abs_tolerance)


def test_tiled_runs_in_the_emulation_and_says_so():
    # 20 x 18 is not a multiple of the 16 x 16 tile.  Each element is stored
    # by the thread at its position in its tile.
    result = run(request("tiled", (20, 17, 18), (2, 2), (16, 16), backend="cpu"))
    assert result.backend == "cpu" and "block lockstep" in result.backend_note
    assert result.verdict.passed, result.verdict.reasons
    rows, cols = np.indices((20, 18))
    block = (rows // 16) * 2 + cols // 16
    thread = (rows % 16) * 16 + cols % 16
    np.testing.assert_array_equal(result.maps.min_writer, block * 256 + thread)
    assert "block lockstep" in run(request("tiled", (20, 17, 18), (2, 2), (16, 16),
                                           backend="auto")).backend_note


def test_tiled_is_conflict_free_race_free_and_reaches_every_barrier():
    # 33 x 17 x 65: 5 x 3 blocks of 16 x 16, 2 tiles along K (17 = 16 + 1).
    result = run(request("tiled", (33, 17, 65), (5, 3), (16, 16), backend="cpu"))
    analysis = result.analysis
    assert result.verdict.passed, result.verdict.reasons
    assert analysis.barrier_divergence == () and analysis.races.count == 0
    assert analysis.uninitialised.count == 0
    # sA[ty, tx], sB[ty, tx], sA[ty, j] (two words of one row: a broadcast
    # within each half-warp) and sB[j, tx] (16 consecutive words): 1 pass each.
    assert analysis.bank_conflicts and all(
        c.mean_ways == 1.0 and c.max_ways == 1 for c in analysis.bank_conflicts)
    # The inner loop runs 16 times per tile for every warp: 15 blocks x 8
    # warps x 2 tiles x 16 = 3,840 executions of the sA[ty, j] load.
    load = next(c for c in analysis.bank_conflicts if c.site.text == "sA[ty, j]")
    assert load.requests == 3840


def test_a_barrier_after_an_early_return_is_reported():
    # C 20 x 20 on 2 x 2 blocks of 16 x 16; threads past the edge return before
    # the two barriers.  Block 0 is whole.  Block 1 (columns 16..31) keeps
    # tx < 4: 64 of 256 threads arrive, the first missing is its thread 4 =
    # global 256 + 4 = 260.  Blocks 2 and 3 lose threads too: 3 blocks.
    result = run(file_request("early_return.py", (20, 16, 20), (2, 2), (16, 16),
                              backend="cpu"))
    divergent = result.analysis.barrier_divergence
    assert [b.line for b in divergent] == [19, 22]
    for barrier in divergent:
        assert (barrier.blocks, barrier.first_block, barrier.arrived, barrier.missing,
                barrier.first_missing_thread) == (3, 1, 64, 192, 260)
    summary = result.summary()["barrier_divergence"][0]
    assert summary == {"line": 19, "barrier": "cuda.syncthreads()", "blocks": 3,
                       "executions": 3, "first_block": 1, "arrived": 64, "missing": 192,
                       "first_missing_thread": 260}
    assert not result.verdict.passed
    assert any("barrier at line 19" in reason for reason in result.verdict.reasons)
    # And the threads that stayed read tile elements the others never loaded:
    # block 1 reads sA[ty, j] for j >= 4 (64 threads x 12), block 2 sB[j, tx]
    # for j >= 4 (64 x 12), block 3 both (16 x 12 x 2): 1,920 reads.
    uninit = result.analysis.uninitialised
    assert uninit.count == 768 + 768 + 384
    assert (uninit.first.thread, uninit.array, uninit.index) == (256, "sA", (0, 4))


def test_a_missing_barrier_is_a_race_with_its_pair_named():
    # One 16 x 16 block, one tile, no barrier between loading the tiles and
    # reading them.  At step j, thread (ty, tx) reads sA[ty, j], loaded by
    # thread (ty, j), and sB[j, tx], loaded by (j, tx): each read races unless
    # that is itself (j == tx, resp. j == ty), 2 x 16 steps x 240 = 7,680
    # racing reads.  Counted in elements: every element of sA (row ty, column
    # j, read by the 15 threads tx != j) and of sB: 256 + 256 = 512.  The
    # first in lockstep order: thread 1 reads sA[0, 0], stored by thread 0.
    result = run(file_request("missing_barrier.py", (16, 16, 16), (1, 1), (16, 16),
                              backend="cpu"))
    races = result.analysis.races
    assert races.count == 512
    first_write, first_read = races.first
    assert (first_write.thread, first_read.thread) == (0, 1)
    assert (races.array, races.index) == ("sA", (0, 0))
    assert (first_write.access.line, first_read.access.line) == (15, 19)
    assert result.summary()["shared_races"] == {
        "elements": 512, "count": 512,
        "first": {"threads": [0, 1], "array": "sA", "index": [0, 0],
                                 "lines": [15, 19],
                                 "accesses": ["store sA[ty, tx]", "load sA[ty, j]"]}}
    assert "shared races" in result.verdict.short_reasons
    assert result.verdict.reasons[0].startswith("512 elements of shared memory raced on (first: ")


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_shared_races_are_counted_in_elements_each_blocks_own_once(tier):
    # C 32 x 32 on 2 x 2 blocks of 16 x 16, K = 32: two tiles a block.  Each
    # tile's reads race on every element of sA and sB (the test above): 512
    # elements a block.  The second tile races on the same elements again
    # (the barrier at the loop's end orders its stores after the first
    # tile's reads): nothing new.  Each block has its own sA and sB: 4 x 512
    # = 2,048 elements (counted in accesses, 2 x 7,680 a block: 61,440).
    result = run(file_request("missing_barrier.py", (32, 32, 32), (2, 2), (16, 16),
                              backend="cpu", tier=tier))
    assert result.tier == tier
    assert result.analysis.races.count == result.verdict.shared_races == 2048
    assert result.summary()["shared_races"]["elements"] == 2048


def test_a_transposed_tile_store_is_an_8_way_conflict():
    # sA[tx, ty] on a 16 x 16 block of float32: warp 0 holds ty = 0, 1 and
    # tx = 0..15; the word tx * 16 + ty sits in bank 16 * (tx % 2) + ty, so 4
    # banks serve 8 distinct words each: 8 passes, in every warp.  Reading it
    # back as sA[j, ty] touches two words 1 apart: 1 pass.
    result = run(file_request("transposed_tile.py", (32, 32, 32), (2, 2), (16, 16),
                              backend="cpu"))
    assert result.verdict.passed, result.verdict.reasons
    store, = by_line(result.analysis.bank_conflicts, 16)
    assert (store.requests, store.mean_ways, store.max_ways, store.ideal_ways) == (64, 8.0, 8, 1.0)
    np.testing.assert_array_equal(store.per_warp, np.full((4, 8), 8.0))
    assert [c.max_ways for c in result.analysis.bank_conflicts] == [8, 1, 1, 1]
    row = result.summary()["bank_conflicts"][0]
    assert {k: row[k] for k in ("line", "access", "array", "kind", "requests", "mean_ways",
                                "max_ways")} == {
        "line": 16, "access": "sA[tx, ty]", "array": "sA", "kind": "store", "requests": 64,
        "mean_ways": 8.0, "max_ways": 8}


def test_float64_tiles_take_two_half_warp_passes():
    # The built-in tiled kernel declares its tiles with A.dtype: in float64 an
    # element spans two 4-byte words and a request is served per half-warp, so
    # a conflict-free request takes 2 passes, its ideal.
    result = run(request("tiled", (32, 16, 32), (2, 2), (16, 16), backend="cpu",
                         dtype="float64"))
    stores = [c for c in result.analysis.bank_conflicts if c.site.kind == "store"]
    assert all((c.mean_ways, c.ideal_ways, c.element_bytes) == (2.0, 2.0, 8) for c in stores)


def test_divergent_branch_requests_follow_the_warp():
    # col, row = cuda.grid(2) on 32 x 8 x 64 with grid 2 x 32, block 32 x 1:
    # 64 warps of 32 consecutive columns.  At each k of 8, the lanes with
    # (k + col) even (16 of them) load B[k, col]: 8 requests per warp, 512 in
    # all, of 16 floats spread over 32 consecutive ones: 128 bytes = 4
    # sectors, against the 2 that 16 floats could fill.
    result = run(file_request("divergent_branch.py", (32, 8, 64), (2, 32), (32, 1),
                              backend="cpu"))
    loads = {c.site.text: c for c in result.coalescing}
    b = loads["B[k, col]"]
    assert (b.requests, b.mean_sectors, b.max_sectors, b.ideal_sectors) == (512, 4.0, 4, 2.0)
    assert b.efficiency == 0.5
    a = loads["A[row, k]"]  # one element for all 16 lanes: a broadcast
    assert (a.requests, a.mean_sectors, a.ideal_sectors, a.efficiency) == (512, 1.0, 1.0, 1.0)
    branch = next(d for d in result.analysis.divergence if d.branch.line == 10)
    assert (branch.branch.kind, branch.requests, branch.mean_active_lanes,
            branch.min_active_lanes, branch.divergent) == ("if", 512, 16.0, 16, 512)
    np.testing.assert_array_equal(branch.per_warp, np.full((64, 1), 16.0))
    guard = next(d for d in result.analysis.divergence if d.branch.line == 7)
    assert (guard.requests, guard.mean_active_lanes, guard.divergent) == (64, 32.0, 0)


def test_local_arrays_and_a_counting_barrier():
    # 9 x 11 C on 2 x 3 blocks of 8 x 4: every thread reaches the barrier; the
    # ones inside C keep their products in a local array.
    result = run(file_request("local_and_count.py", (9, 12, 11), (2, 3), (8, 4),
                              backend="cpu"))
    assert result.verdict.passed, result.verdict.reasons
    assert result.analysis.barrier_divergence == ()


def test_an_out_of_bounds_shared_read_is_counted_like_any_other():
    # Thread 15 of each of 5 blocks reads partial[16] of a 16-element tile.
    for tier in ("compiled", "instant"):
        result = run(file_request("shared_off_by_one.py", (5, 7, 16), (5,), (16,),
                                  backend="cpu", tier=tier))
        oob, = result.maps.out_of_bounds
        assert (oob.array, oob.role, oob.direction, oob.count, oob.first_thread,
                oob.first_index) == ("partial", "shared", "read", 5, 15, (16,))
        notes = " ".join(result.notes)
        assert "with those reads as 0 and those writes skipped" in notes
    assert "the plain kernel was not launched" in " ".join(
        run(file_request("shared_off_by_one.py", (5, 7, 16), (5,), (16,), backend="cpu",
                         tier="compiled")).notes)


def test_a_barrier_inside_an_expression_goes_to_the_simulator_with_its_line():
    from kernels.engine import resolve_backend
    from kernels.sources.loader import load_plan
    req = file_request("barrier_in_expression.py", (8, 8, 8), (1, 1), (8, 8), backend="auto")
    backend, note = resolve_backend(req, load_plan(req))
    assert backend == "sim"
    assert "cuda.syncthreads_or(...) inside an expression" in note and "line 9" in note
    assert "simulator" in note
    # Asked for by name, the CPU emulation is never swapped for the simulator:
    # the run is refused, with the reason and the line.
    with pytest.raises(UnsupportedConstruct) as refused:
        resolve_backend(req.with_(backend="cpu"), load_plan(req))
    assert "the CPU emulation cannot run vote" in str(refused.value)
    assert "line 9" in str(refused.value) and "--backend sim" in str(refused.value)


def test_static_shared_memory_past_48_kib_is_refused():
    req = file_request("huge_tile.py", (8, 8, 8), (1, 1), (8, 8), backend="cpu")
    with pytest.raises(RequestError, match=r"64\.0 KiB of static shared memory.*line 9"):
        run(req)


@pytest.mark.sim
def test_the_simulator_estimate_holds_for_a_kernel_with_barriers():
    # An independent figure: the simulator's own times for a tiled kernel
    # (8 x 8 tiles, 2 x 2 blocks, 16^3: 4 barriers per block).  The estimate
    # used to leave barriers out and was up to 8x low on such kernels.
    from kernels.estimate import simulator_seconds
    from kernels.sources.loader import load_plan
    req = file_request("doc_style_tiled.py", (16, 16, 16), (2, 2), (8, 8), backend="sim")
    result = run(req)
    measured = result.timing("instrumented kernel").seconds + result.timing("kernel").seconds
    estimate = simulator_seconds(req, load_plan(req))
    assert 0.5 <= estimate / measured <= 2.0, (estimate, measured)


# -- load-only loops recorded lane by lane -----------------------------------------


@pytest.mark.parametrize("grid,block", [((2, 3), (8, 3)), ((1, 2), (16, 4))])
def test_load_only_loops_recorded_lane_by_lane_give_the_lockstep_s_figures(monkeypatch, grid,
                                                                           block):
    """Lanes with different trip counts, loads outside A, a step that is not a
    literal, a division by zero in some lanes, a partial warp (8 x 3 = 24
    threads) and two warps a block: every map, per-warp figure and verdict of
    the recording run is the lockstep's, element by element."""
    from kernels.derived import codegen, lockstep

    req = file_request("ragged_loops.py", (13, 9, 11), grid, block, backend="cpu",
                       tier="compiled")  # (the compiled tier's two ways of recording)
    monkeypatch.setattr(codegen, "_LOADED", {})
    by_lane = run(req)
    texts = [m.path.read_text() for m in codegen._LOADED.values()]
    # lane by lane
    assert any("_tm_flush_input_request_rounds(_tm_rb0, _tm_most" in t for t in texts)
    monkeypatch.setattr(lockstep, "LANE_BY_LANE", False)
    monkeypatch.setattr(codegen, "_LOADED", {})
    lockstepped = run(req)
    texts = [m.path.read_text() for m in codegen._LOADED.values()]
    assert not any("_tm_rb0, _tm_most" in t for t in texts)
    ours, theirs = by_lane.maps_arrays(), lockstepped.maps_arrays()
    assert ours.keys() == theirs.keys()
    assert any(name.startswith("sectors_site") for name in ours)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name], equal_nan=True), name
    assert by_lane.verdict.reasons == lockstepped.verdict.reasons
    assert by_lane.verdict.out_of_bounds > 0  # the loads past A were seen, and counted alike
    for mine, other in zip(by_lane.analysis.coalescing, lockstepped.analysis.coalescing):
        assert (mine.requests, mine.mean_sectors, mine.max_sectors, mine.ideal_sectors,
                mine.mean_lanes) == (other.requests, other.mean_sectors, other.max_sectors,
                                     other.ideal_sectors, other.mean_lanes)
    assert [d.summary() for d in by_lane.analysis.divergence] == \
        [d.summary() for d in lockstepped.analysis.divergence]
    for mine, other in zip(by_lane.analysis.divergence, lockstepped.analysis.divergence):
        assert np.array_equal(mine.per_warp, other.per_warp, equal_nan=True)
    assert sum(d.divergent for d in by_lane.analysis.divergence) > 0  # the lanes did part


@pytest.mark.parametrize("kernel,shape,grid,block", [
    ("grid-stride", (37, 19, 53), (7,), (64,)),
    ("tid-rows", (9, 4, 11), (6,), (32,)),  # threads of different workers store one element
    ("one-block-chunks", (13, 5, 11), (1,), (96,)),  # the warps of one block
])
def test_workers_split_a_run_as_one_worker_would_run_it(monkeypatch, kernel, shape, grid, block):
    """Each worker past the first records into private maps (zeroed, writer maps
    encoded) and a private C; merged, they equal one worker's run, C included
    (sequential semantics: the later thread's store stays)."""
    m, k, n = shape
    req = RunRequest(kernel=kernel, m=m, k=k, n=n, grid=grid, block=block, backend="cpu",
                     tier="compiled")  # (the compiled tier's workers)
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "1")
    alone = run(req)
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "3")
    split = run(req)
    assert "3 cores" in split.timings[1].method and "1 core" in alone.timings[1].method
    assert alone.maps.collided == split.maps.collided
    ours, theirs = split.maps_arrays(), alone.maps_arrays()
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert np.array_equal(ours[name], theirs[name], equal_nan=True), name
    assert np.array_equal(split.c, alone.c, equal_nan=True)


def test_hazards_name_threads_by_block_and_thread_with_the_global_id():
    """(issue 20: "threads of block 1 (first missing: thread 264)" mixed a
    thread of the grid into a sentence about one block)"""
    from kernels.analyses.hazards import thread_name

    assert thread_name(264, (2, 2), (16, 16)) == "block (1, 0), thread (8, 0) (global 264)"
    assert thread_name(600, (2, 2), (16, 16)) == "block (0, 1), thread (8, 5) (global 600)"
    result = run(file_request("early_return.py", (20, 16, 20), (2, 2), (16, 16),
                              backend="cpu"))
    text = result.analysis.barrier_divergence[0].describe()
    assert "threads of block (1, 0)" in text
    assert "first missing: block (1, 0), thread (4, 0) (global 260)" in text
    race = run(file_request("missing_barrier.py", (16, 16, 16), (1, 1), (16, 16),
                            backend="cpu")).analysis.races.describe()
    assert "block (0, 0), thread (0, 0) (global 0) writes sA[ty, tx]" in race


def test_the_emulation_of_a_builtin_kernel_never_imports_numba_cuda():
    """numba.cuda takes ~0.2 s to import: the generated CPU module imports it
    only where the kernel's code still names it (codegen.py), so no text of
    ThreadMap's own may name it (a comment in the helpers once did: every
    4096^2 run took 0.2 s more)."""
    from kernels.derived.codegen import module_text
    from kernels.derived.local_types import kernel_types
    from kernels.sources.loader import _builtin_plan

    for name in ("grid-stride", "tiled"):
        plan = _builtin_plan(name)
        text, _ = module_text(plan, "cpu", "float32", kernel_types(plan, "float32", ()))
        assert "from numba import cuda" not in text.text, name


BINS_KERNEL = '''from numba import cuda, int32

THREADMAP_ARGS = {{"out": "int32[4]"}}


@cuda.jit
def bins(out):
    buf = cuda.shared.array(4, int32)
    t = cuda.threadIdx.x
    if t < 4:
        buf[t] = 0
{barrier}    cuda.atomic.add(buf, t % 4, 1)
    cuda.syncthreads()
    if t < 4:
        out[t] = buf[t]
'''


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_a_plain_store_then_another_threads_atomic_in_one_interval_is_a_race(tmp_path, tier):
    # One block of 64: thread b < 4 zeroes bin b (line 11), then every thread
    # adds 1 to bin t % 4 (line 12), with no barrier between.  Lane after lane
    # in lockstep order, lanes 0-3 add to their own bins (no race with
    # themselves), and lane 4 is the first to add to a bin another thread
    # stored in the interval: bin 0, zeroed by thread 0.  Atomics never race
    # with each other, so lanes 8, 12, ... add to bin 0 without a race: one
    # element each of the 4 bins, 4 elements.  (Before: no race at all, and a
    # PASS for a kernel whose counts a GPU can lose.)
    from kernels.sources.arguments import describe_request

    path = tmp_path / "bins.py"
    path.write_text(BINS_KERNEL.format(barrier=""))
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), backend="cpu",
                                          grid=(1,), block=(64,), tier=tier),
                               as_it_is_unless_matmul=True)
    result = run(request)
    races = result.analysis.races
    assert races.count == result.verdict.shared_races == 4
    first_write, first_update = races.first
    assert (first_write.thread, first_update.thread) == (0, 4)
    assert (races.array, races.index) == ("buf", (0,))
    assert (first_write.access.line, first_update.access.line) == (11, 12)
    assert [(d.rule, d.lines) for d in result.diagnoses] == [("missing-barrier", (11, 12))]
    # With the barrier between them: no race, and the 16 adds of each bin counted.
    path.write_text(BINS_KERNEL.format(barrier="    cuda.syncthreads()\n"))
    result = run(request)
    assert result.verdict.passed and result.verdict.shared_races == 0
    np.testing.assert_array_equal(result.c.reshape(-1), [16, 16, 16, 16])
