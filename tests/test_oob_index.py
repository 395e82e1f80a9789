"""Every out-of-bounds summary gives the index of its lowest thread's first
such access of that array, even when that thread's first out-of-bounds access
was of another array (issue 20, point 4): on both tiers of the CPU emulation,
with its workers' records merged, and in numba's CUDA simulator.
"""
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run
from kernels.records import (
    OOB,
    OOB_INDEX,
    OOB_MIN_THREAD,
    OutOfBounds,
    allocate_records,
    merge_oob_index,
    read_back,
)

KERNEL_FILE = str(Path(__file__).parent / "kernels" / "first_oob_elsewhere.py")
MAP_FIELDS = ("count", "atomics", "min_writer", "max_writer", "iteration", "stores_per_thread",
              "oob_per_thread", "reads_a", "reads_b")
TIERS = ("instant", "compiled")


def tid_rows(**kw) -> RunRequest:
    return RunRequest(kernel="tid-rows", m=16, k=4, n=16, grid=(1,), block=(64,), **kw)


def elsewhere(grid=(1,), block=(64,), **kw) -> RunRequest:
    return RunRequest(kernel="first_oob_elsewhere", kernel_file=KERNEL_FILE, m=16, k=4, n=16,
                      grid=grid, block=block, **kw)


# tid-rows at 16 x 4 x 16 on 64 threads: B has 4 rows, so threads 4 .. 63 read
# B[tid, col] out of bounds at every one of their 16 x 16 x 4 = 1,024 reads;
# the lowest, thread 4, first at row 0, col 0, idx 0: B[4, 0].
TID_ROWS = (OutOfBounds("B", "B", "read", 60 * 1024, 4, (4, 0)),)
TID_ROWS_TEXT = ("61,440 out-of-bounds reads of B (first: thread 4 at [4, 0])",)
TID_ROWS_PER_THREAD = [0] * 4 + [1024] * 60

# tests/kernels/first_oob_elsewhere.py (its docstring works them out): B's and
# C's lowest offenders (threads 0 and 32) made their first out-of-bounds read
# or write on another array (A, s), so these two had no index before.
ELSEWHERE = (
    OutOfBounds("A", "A", "read", 64, 0, (16, 0)),
    OutOfBounds("B", "B", "read", 253, 0, (4, 2)),
    OutOfBounds("C", "C", "write", 32, 32, (16, 0)),
    OutOfBounds("s", "shared", "write", 48, 16, (16,)),
)
ELSEWHERE_TEXT = (
    "64 out-of-bounds reads of A (first: thread 0 at [16, 0])",
    "253 out-of-bounds reads of B (first: thread 0 at [4, 2])",
    "32 out-of-bounds writes of C (first: thread 32 at [16, 0])",
    "48 out-of-bounds writes of s (first: thread 16 at [16])",
)
# Thread 0: A and 2 of B; thread 1: A and 3 of B; 2 .. 15: A and 4 of B;
# 16 .. 31: also s; 32 .. 63: also C.
ELSEWHERE_PER_THREAD = [3, 4] + [5] * 14 + [6] * 16 + [7] * 32


def _check(result, expected, text, per_thread):
    maps = result.maps
    assert all(o.first_index is not None for o in maps.out_of_bounds)
    assert maps.out_of_bounds == expected
    assert tuple(o.describe() for o in maps.out_of_bounds) == text
    np.testing.assert_array_equal(maps.oob_per_thread, per_thread)


@pytest.mark.parametrize("tier", TIERS)
def test_tid_rows_names_its_first_out_of_bounds_read_of_b(tier):
    result = run(tid_rows(backend="cpu", tier=tier))
    _check(result, TID_ROWS, TID_ROWS_TEXT, TID_ROWS_PER_THREAD)


@pytest.mark.parametrize("tier", TIERS)
def test_an_index_is_given_where_the_thread_first_strayed_elsewhere(tier):
    result = run(elsewhere(backend="cpu", tier=tier))
    _check(result, ELSEWHERE, ELSEWHERE_TEXT, ELSEWHERE_PER_THREAD)


def test_the_index_follows_the_lowest_thread_across_the_emulations_workers(monkeypatch):
    # Two workers, one block each: C's only offenders (threads 32 .. 63) are
    # the second worker's, so its index comes from that worker's records.
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "2")
    result = run(elsewhere(grid=(2,), block=(32,), backend="cpu", tier="compiled"))
    assert any("2 cores" in t.method for t in result.timings)
    _check(result, ELSEWHERE, ELSEWHERE_TEXT, ELSEWHERE_PER_THREAD)


@pytest.mark.parametrize("make", [tid_rows, elsewhere], ids=["tid-rows", "elsewhere"])
def test_the_two_tiers_agree_element_by_element(make):
    instant = run(make(backend="cpu", tier="instant"))
    compiled = run(make(backend="cpu", tier="compiled"))
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(instant.maps, field), getattr(compiled.maps, field),
                                      err_msg=field)
    assert instant.maps.out_of_bounds == compiled.maps.out_of_bounds


@pytest.mark.sim
@pytest.mark.parametrize("make,expected,text,per_thread", [
    (tid_rows, TID_ROWS, TID_ROWS_TEXT, TID_ROWS_PER_THREAD),
    (elsewhere, ELSEWHERE, ELSEWHERE_TEXT, ELSEWHERE_PER_THREAD),
], ids=["tid-rows", "elsewhere"])
def test_the_simulator_gives_the_same_indices_and_maps(make, expected, text, per_thread):
    sim = run(make(backend="sim"))
    assert sim.backend == "sim"
    _check(sim, expected, text, per_thread)
    cpu = run(make(backend="cpu", tier="compiled"))
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(sim.maps, field),
                                      err_msg=field)


def test_merging_takes_the_index_of_the_lower_thread():
    def records(thread, index):
        raw = allocate_records((4, 4), ((4, 4), (4, 4)), 3, 64)
        raw[OOB][2, 1] = 1
        raw[OOB_MIN_THREAD][2, 1] = thread
        raw[OOB_INDEX][2, 1] = index
        return raw

    low, high = records(5, (7, 1, 0)), records(40, (9, 3, 0))
    into = records(40, (9, 3, 0))
    merge_oob_index(into, low)
    assert tuple(into[OOB_INDEX][2, 1]) == (7, 1, 0)
    merge_oob_index(low, high)
    assert tuple(low[OOB_INDEX][2, 1]) == (7, 1, 0)
    # No offender of slot 0 anywhere: nothing taken from a fresh record.
    assert tuple(into[OOB_INDEX][0, 0]) == (0, 0, 0)


def test_read_back_gives_each_arrays_own_index():
    # Thread 3 strayed on A first, then on C: each summary has its own index.
    raw = allocate_records((4, 4), ((4, 4), (4, 4)), 3, 8)
    raw[OOB][0, 0] = raw[OOB][2, 1] = 1
    raw[OOB_MIN_THREAD][0, 0] = raw[OOB_MIN_THREAD][2, 1] = 3
    raw[OOB_INDEX][0, 0] = (4, 1, 0)
    raw[OOB_INDEX][2, 1] = (-1, 2, 0)
    slots = (("A", "A", 2), ("B", "B", 2), ("C", "C", 2))
    maps = read_back(raw, ((4, 4), (4, 4), (4, 4)), slots)
    assert maps.out_of_bounds == (OutOfBounds("A", "A", "read", 1, 3, (4, 1)),
                                  OutOfBounds("C", "C", "write", 1, 3, (-1, 2)))


def test_the_recording_kernel_still_compiles_for_a_gpu():
    # The GPU's helper reads the lowest thread back with a second atomic min.
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    module = read_module(Path(KERNEL_FILE))
    plan = make_plan(module, module.kernel(None))
    gen = load_module(plan, "cuda", "float32")
    ptx = compile_ptx_for(plan, gen.function(f"{plan.name}__tm_record"), "float32", True,
                          cc=(9, 0))
    assert ".entry" in ptx and "atom.global.min.s64" in ptx
