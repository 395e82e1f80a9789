"""Coalescing, occupancy, load balance and diff, on cases worked out by hand."""
import numpy as np
import pytest

from kernels import run
from kernels.analyses.coalescing import sectors_per_request
from kernels.analyses.diff import COUNT, SAME, WRITER, diff_runs
from kernels.analyses.occupancy import GPU_MODELS, GpuModel, occupancy, ptxas_resources
from kernels.result import load_balance
from tests.conftest import request


def figures(result):
    return {(c.site.kind, c.site.role): (c.mean_sectors, c.max_sectors, c.ideal_sectors,
                                         c.requests) for c in result.coalescing}


def test_row_major_and_column_major_grid_stride_coalesce_differently():
    # C 64 x 64 (float32), K = 32, one block of 1024 threads: 32 warps.  Each
    # thread stores 4096 / 1024 = 4 elements, each after 32 steps of k, so each
    # warp makes 4 x 32 = 128 requests to A and to B (4,096 in all) and 4 to C
    # (128 in all): every request, in the warp's lockstep order.
    # Row-major: a warp's 32 lanes take 32 consecutive elements of one row:
    #   store C[row, col]: 32 consecutive floats = 128 bytes = 4 sectors;
    #   load B[idx, col]: 32 consecutive floats of row idx = 4 sectors;
    #   load A[row, idx]: one address for all lanes = 1 sector, a broadcast
    #   whose ideal is 1 too (one element needs one sector).
    # Column-major: the lanes take 32 consecutive rows of one column:
    #   store C[row, col]: 32 rows apart (64 floats = 256 bytes) = 32 sectors,
    #   against an ideal of 4 (32 distinct floats); load A[row, idx]: 32 of 4;
    #   load B[idx, col]: a broadcast, 1 of 1.
    shape, grid, block = (64, 32, 64), (1,), (1024,)
    row_major = run(request("grid-stride", shape, grid, block, backend="cpu"))
    col_major = run(request("grid-stride-colmajor", shape, grid, block, backend="cpu"))
    assert figures(row_major) == {("load", "A"): (1.0, 1, 1.0, 4096),
                                  ("load", "B"): (4.0, 4, 4.0, 4096),
                                  ("store", "C"): (4.0, 4, 4.0, 128)}
    assert figures(col_major) == {("load", "A"): (32.0, 32, 4.0, 4096),
                                  ("load", "B"): (1.0, 1, 1.0, 4096),
                                  ("store", "C"): (32.0, 32, 4.0, 128)}
    assert {c.efficiency for c in row_major.coalescing} == {1.0}
    assert [c.efficiency for c in col_major.coalescing] == [0.125, 1.0, 0.125]
    # Listed in source order, named by line.
    assert [c.site.label() for c in row_major.coalescing] == [
        "line 22: load A[row, idx]", "line 22: load B[idx, col]", "line 23: store C[row, col]"]


def test_float64_ideal_is_eight_sectors_and_partial_warps_need_fewer():
    # 48 threads per block: warp 0 full (32 lanes), warp 1 has 16 lanes.
    # float64: a full warp's 32 consecutive doubles = 256 bytes = 8 sectors;
    # the 16-lane warp's = 128 bytes = 4 sectors.  4 rows of 48: each warp
    # stores 4 times.
    result = run(request("grid-stride", (4, 3, 48), (1,), (48,), backend="cpu",
                         dtype="float64"))
    store = next(c for c in result.coalescing if c.site.kind == "store")
    np.testing.assert_array_equal(store.per_warp, [[8, 4]])  # (blocks, warps)
    assert store.requests == 8
    assert store.mean_sectors == 6.0 and store.ideal_sectors == 6.0 and store.efficiency == 1.0


def test_sector_counting_by_hand():
    # Lanes' element offsets; float32: sector = offset * 4 // 32 = offset // 8,
    # so 0, 1, 7 -> sector 0; 8, 9 -> sector 1; 31 -> sector 3: 3 sectors, 6 lanes.
    offsets = np.array([[0, 1, 7, 8, 9, 31, -1, -1] + [-1] * 24])
    distinct, active = sectors_per_request(offsets, 4)
    assert (distinct.tolist(), active.tolist()) == ([3], [6])
    # float64: sector = offset // 4: 0, 1 -> 0; 7 -> 1; 8, 9 -> 2; 31 -> 7: 4 sectors.
    assert sectors_per_request(offsets, 8)[0].tolist() == [4]


@pytest.mark.parametrize("model,threads,registers,shared,per_sm,limit,occ", [
    ("H100 SXM", 256, 32, 0, 8, "warps", 1.0),  # 64 warps / 8; registers allow 8 too
    ("H100 SXM", 256, 64, 0, 4, "registers", 0.5),  # 2048 regs/warp: 32 warps -> 4 blocks
    ("H100 SXM", 32, 16, 0, 32, "blocks", 0.5),  # 1-warp blocks: 32-block cap, 32 of 64 warps
    ("H100 SXM", 1024, 40, 0, 1, "registers", 0.5),  # 1280 regs/warp: 12 warps x 4 partitions
    # cudaOccMaxBlocksPerSMRegsLimit: 48 x 32 = 1536 regs/warp; 16384 per sub-partition
    # holds 10 warps, x 4 = 40 warps = 6 blocks of 6 warps (not 65536 // 1536 = 42 -> 7).
    ("H100 SXM", 192, 48, 0, 6, "registers", 36 / 64),
    # 80 x 32 = 2560 regs/warp; 25 warps rounded up to 28 need 71680 > 65536: no launch.
    ("H100 SXM", 800, 80, 0, 0, "registers", 0.0),
    ("A100", 128, 32, 48 * 1024, 3, "shared memory", 0.1875),  # 167936 // (49152 + 1024)
    ("RTX 4090", 1024, 32, 0, 1, "warps", 32 / 48),
    ("T4", 1024, 32, 0, 1, "warps", 1.0),
])
def test_occupancy_by_hand(model, threads, registers, shared, per_sm, limit, occ):
    result = occupancy(GPU_MODELS[model], 1000, threads, registers, shared)
    assert (result.blocks_per_sm, result.limited_by) == (per_sm, limit)
    assert result.occupancy == pytest.approx(occ)


def test_waves_and_the_idle_last_wave():
    h100 = GPU_MODELS["H100 SXM"]
    # 8 blocks/SM x 132 SMs = 1056 slots.
    one = occupancy(h100, 1000, 256, 32)
    assert (one.waves, one.last_wave_idle) == (1, pytest.approx(1 - 1000 / 1056))
    exact = occupancy(h100, 2112, 256, 32)
    assert (exact.waves, exact.last_wave_idle) == (2, 0.0)
    spill = occupancy(h100, 1057, 256, 32)
    assert (spill.waves, spill.last_wave_idle) == (2, pytest.approx(1 - 1 / 1056))
    seed = occupancy(h100, 1, 1024, 32)  # the asker's launch: one block on 132 SMs
    assert seed.waves == 1 and seed.last_wave_idle > 0.99


def test_too_many_registers_or_shared_memory_do_not_fit():
    t4 = GPU_MODELS["T4"]
    assert occupancy(t4, 10, 128, 300).blocks_per_sm == 0
    assert occupancy(t4, 10, 128, 32, shared_per_block=100 * 1024).limited_by == "shared memory"


def test_every_model_names_its_sources():
    assert set(GPU_MODELS) >= {"H100 SXM", "H200", "A100", "RTX 4090", "T4"}
    for model in GPU_MODELS.values():
        assert isinstance(model, GpuModel) and "Compute Capabilities" in model.source


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None,
                    reason="needs the CUDA toolkit's ptxas to measure registers")
def test_ptxas_measures_registers_and_shared_memory():
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.loader import _builtin_plan
    plan = _builtin_plan("tiled")
    ptx = compile_ptx_for(plan, load_module(plan, "cuda", "float32").function(plan.name),
                          "float32", False, cc=(9, 0))
    measured = ptxas_resources(ptx, (9, 0))
    assert measured is not None and 8 <= measured.registers <= 255
    assert measured.shared_bytes == 2 * 16 * 16 * 4  # two 16 x 16 float32 tiles
    assert "ptxas" in measured.source


def test_load_balance_counts_threads_that_stored_no_output():
    # 100 elements over 2 x 64 threads: threads 0..99 store one each, 28 none.
    result = run(request("grid-stride", (10, 4, 10), (2,), (64,), backend="cpu"))
    balance = load_balance(result.maps.stores_per_thread)
    assert balance["threads_without_output"] == 28 and balance["max"] == 1
    assert balance["histogram"]["counts"] == [28, 100]
    assert result.maps.threads_without_output == 28
    summary = result.summary()
    assert summary["load_balance"]["threads_without_output"] == 28
    assert summary["counts"]["threads_without_output"] == 28
    # the name earlier files gave it, kept: the same number
    assert summary["load_balance"]["idle_threads"] == summary["counts"]["idle_threads"] == 28
    assert result.maps.idle_threads == 28


def test_diff_by_hand():
    a = run(request("grid-stride", (8, 4, 8), (1,), (32,), backend="cpu"))
    b = run(request("grid-stride", (8, 4, 8), (1,), (16,), backend="cpu"))
    c = run(request("one-block-chunks", (8, 4, 8), (2,), (32,), backend="cpu"))
    same = diff_runs(a, a)
    assert (same.category == SAME).all() and same.count_changed == same.writer_changed == 0
    # 32 vs 16 threads: element e written by e % 32 vs e % 16: differ where e % 32 >= 16.
    ab = diff_runs(a, b)
    linear = np.arange(64).reshape(8, 8)
    np.testing.assert_array_equal(ab.category == WRITER, linear % 32 >= 16)
    assert ab.writer_changed == 32 and ab.value_changed == 0
    # Two blocks of one-block-chunks store every element twice.
    ac = diff_runs(a, c)
    assert (ac.category == COUNT).all() and ac.count_changed == 64


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None,
                    reason="needs the CUDA toolkit's ptxas")
def test_a_kernel_ptxas_refuses_says_so_in_its_register_figure():
    # 128 x 128 float32 = 64 KiB of static shared memory: ptxas 13 refuses it
    # ("uses too much shared data (0x10000 bytes, 0xc000 max)").
    from pathlib import Path

    from kernels.analyses.occupancy import kernel_resources
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module
    module = read_module(Path(__file__).parent / "kernels" / "huge_tile.py")
    plan = make_plan(module, module.kernel(None))
    found = kernel_resources(plan, "float32", GPU_MODELS["H100 SXM"])
    assert "ptxas refused the kernel" in found.source and "too much shared data" in found.source
    assert "no ptxas" not in found.source
    assert found.registers == 32 and found.shared_bytes == 64 * 1024
