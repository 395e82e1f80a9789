"""The buggy kernels show their defects on cases worked out by hand."""
import numpy as np
import pytest

from kernels import run
from tests.conftest import request


def test_one_block_chunks_runs_past_the_end_of_c():
    # C is 5 x 7 = 35 elements; 8 threads take ceil(35 / 8) = 5 each: threads
    # 0..6 cover elements 0..34, thread 7 elements 35..39, i.e. row 5 (past
    # C's 5 rows): 5 skipped stores to C and 5 x K = 15 skipped reads of A.
    result = run(request("one-block-chunks", (5, 3, 7), (1,), (8,), backend="cpu"))
    maps = result.maps
    np.testing.assert_array_equal(maps.count, 1)
    np.testing.assert_array_equal(maps.stores_per_thread, [5, 5, 5, 5, 5, 5, 5, 0])
    np.testing.assert_array_equal(maps.oob_per_thread, [0] * 7 + [5 + 15])
    by_kind = {(o.array, o.direction): o for o in maps.out_of_bounds}
    assert set(by_kind) == {("A", "read"), ("C", "write")}
    assert by_kind["A", "read"].count == 15
    assert by_kind["C", "write"].count == 5
    assert by_kind["C", "write"].first_thread == 7
    assert by_kind["C", "write"].first_index == (5, 0)
    assert by_kind["A", "read"].first_index == (5, 0)
    assert result.verdict.word == "FAIL"
    assert result.c_source == "instrumented kernel"  # the plain one was not launched
    # In bounds, the numbers themselves are right.
    assert result.verdict.errors.wrong == 0


def test_one_block_chunks_with_two_blocks_collides_everywhere():
    result = run(request("one-block-chunks", (4, 3, 8), (2,), (32,), backend="cpu"))
    np.testing.assert_array_equal(result.maps.count, 2)
    assert result.maps.collided == 32
    # Thread t of block 0 (id t) and of block 1 (id 32 + t) wrote element t.
    linear = np.arange(32).reshape(4, 8)
    np.testing.assert_array_equal(result.maps.min_writer, linear)
    np.testing.assert_array_equal(result.maps.max_writer, linear + 32)


def test_tid_rows_collides_reads_b_out_of_bounds_and_misses_columns():
    # M=4, K=3, N=5, 6 threads: n = A.shape[0] = 4, so columns 0..3 of C are
    # written by all 6 threads and column 4 never; threads 3, 4, 5 index
    # B[tid, col] past B's 3 rows, each 4 * 4 * 3 = 48 times.
    result = run(request("tid-rows", (4, 3, 5), (1,), (6,), backend="cpu"))
    maps = result.maps
    expected = np.zeros((4, 5), int)
    expected[:, :4] = 6
    np.testing.assert_array_equal(maps.count, expected)
    assert maps.unwritten == 4 and maps.collided == 16
    np.testing.assert_array_equal(maps.oob_per_thread, [0, 0, 0, 48, 48, 48])
    (oob,) = maps.out_of_bounds
    assert (oob.array, oob.direction, oob.count) == ("B", "read", 144)
    assert (oob.first_thread, oob.first_index) == (3, (3, 0))
    np.testing.assert_array_equal(maps.min_writer[:, :4], 0)
    np.testing.assert_array_equal(maps.max_writer[:, :4], 5)
    assert result.verdict.word == "FAIL"


@pytest.mark.parametrize("pattern,looks_right", [("ones", True), ("random", False)])
def test_tid_rows_looks_right_on_ones_and_is_wrong_on_random(pattern, looks_right):
    # Square 8 x 8 x 8 launched with 8 threads keeps B[tid, col] in bounds.  On
    # ones every thread computes K = 8, the right value; on random inputs the
    # value is A[row, :].sum() * B[tid, col], wrong.  The collisions are there
    # either way, so the verdict fails on both: the all-ones test hides the bug
    # only if you look at the numbers alone.
    result = run(request("tid-rows", (8, 8, 8), (1,), (8,), backend="cpu", pattern=pattern))
    errors = result.verdict.errors
    assert result.maps.oob_total == 0
    assert (errors.wrong == 0) is looks_right
    assert errors.within_tolerance is looks_right
    if not looks_right:
        assert errors.rel_error > 0.1
    assert result.verdict.word == "FAIL"
    assert result.maps.collided == 64


def test_colmajor_walks_c_down_the_columns():
    m, n, threads = 6, 5, 7
    result = run(request("grid-stride-colmajor", (m, 3, n), (1,), (threads,), backend="cpu"))
    rows, cols = np.indices((m, n))
    np.testing.assert_array_equal(result.maps.min_writer, (cols * m + rows) % threads)
    np.testing.assert_array_equal(result.maps.iteration, (cols * m + rows) // threads)
    assert result.verdict.passed


def test_naive_2d_with_too_small_a_grid_leaves_elements_unwritten():
    result = run(request("naive-2d", (20, 5, 20), (1, 1), (16, 16), backend="cpu"))
    maps = result.maps
    assert maps.unwritten == 400 - 256
    assert (maps.count[:16, :16] == 1).all() and (maps.count[16:, :] == 0).all()
    assert np.isnan(result.c[16:, :]).all()  # the poison shows through
    assert result.verdict.errors.non_finite == 144
    assert result.verdict.word == "FAIL"


def test_naive_2d_maps_x_to_columns():
    result = run(request("naive-2d", (3, 2, 40), (2, 1), (32, 4), backend="cpu"))
    # thread id within block = ty * 32 + tx; block = bx; col = bx*32 + tx, row = ty
    rows, cols = np.indices((3, 40))
    expected = (cols // 32) * 128 + rows * 32 + cols % 32
    np.testing.assert_array_equal(result.maps.min_writer, expected)
    assert result.maps.idle_threads == 256 - 3 * 40
    assert result.verdict.passed
