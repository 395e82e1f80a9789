"""The tolerance lets every correct result pass and catches one wrong element."""
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run
from kernels.analyses.correctness import UNIT_ROUNDOFF, compare, gamma, reference
from kernels.inputs import make_inputs, poisoned_output


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [1, 7, 256, 4096])
def test_float_sums_in_any_order_are_within_the_bound(dtype, k):
    a, b = make_inputs("random", 16, k, 12, dtype, seed=k)
    ref = reference(a, b)
    # Accumulate in the dtype itself, forwards and backwards: worst cases of
    # order that a kernel may pick; also numpy's own (blocked, FMA) product.
    forwards = np.zeros((16, 12), dtype)
    backwards = np.zeros((16, 12), dtype)
    for i in range(k):
        forwards += np.outer(a[:, i], b[i, :]).astype(dtype)
        backwards += np.outer(a[:, k - 1 - i], b[k - 1 - i, :]).astype(dtype)
    for c in (forwards, backwards, a @ b):
        figures = compare(c, ref)
        assert figures.within_tolerance, figures
        assert figures.worst_ratio <= 1


def test_one_wrong_element_fails():
    a, b = make_inputs("random", 30, 64, 20, "float32", seed=1)
    ref = reference(a, b)
    c = (a @ b).copy()
    c[7, 3] += 1e-3  # far below anything a norm over 600 elements would notice
    figures = compare(c, ref)
    assert figures.wrong == 1
    assert not figures.within_tolerance


def test_swapped_index_is_caught_even_when_all_ones_would_hide_it():
    a, b = make_inputs("random", 8, 8, 8, "float32", seed=2)
    wrong = a.T @ b  # an index bug: A[idx, row] for A[row, idx]
    assert not compare(wrong, reference(a, b)).within_tolerance
    ones_a, ones_b = make_inputs("ones", 8, 8, 8, "float32")
    assert compare(ones_a.T @ ones_b, reference(ones_a, ones_b)).within_tolerance


def test_unwritten_elements_are_counted_not_averaged_away():
    a, b = make_inputs("random", 10, 5, 10, "float64", seed=3)
    c = poisoned_output(10, 10, "float64")
    c[:9] = (a @ b)[:9]
    figures = compare(c, reference(a, b))
    assert figures.non_finite == 10 and figures.wrong == 0
    assert not figures.within_tolerance


def test_gamma_is_higham_s():
    u = UNIT_ROUNDOFF["float32"]
    assert gamma(100, u) == pytest.approx(100 * u / (1 - 100 * u))
    assert gamma(2**25, u) == float("inf")


def test_patterns():
    a, b = make_inputs("identity", 4, 6, 5, "float32", seed=0)
    np.testing.assert_array_equal(a, np.eye(4, 6))
    np.testing.assert_array_equal(a @ b, b[:4])
    a, b = make_inputs("arange", 3, 4, 2, "float64")
    assert len(np.unique(a)) == a.size and a.max() < 1
    a1, _ = make_inputs("random", 3, 4, 2, "float32", seed=5)
    a2, _ = make_inputs("random", 3, 4, 2, "float32", seed=5)
    a3, _ = make_inputs("random", 3, 4, 2, "float32", seed=6)
    np.testing.assert_array_equal(a1, a2)
    assert not np.array_equal(a1, a3)
    assert (a1 >= -1).all() and (a1 < 1).all()


def test_the_reference_runs_blas_on_one_thread_and_gives_the_pool_back():
    """OpenBLAS's worker threads spin ~0.1 s after each call, taking a core from
    the emulation that follows (a sweep's next recording ran at half speed):
    the reference and its bound use the calling thread alone."""
    from threadpoolctl import threadpool_info

    from kernels.blas import one_blas_thread

    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    if not before:
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    with one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before
    a, b = make_inputs("random", 64, 32, 48, "float32", 3)
    ref = reference(a, b)
    assert blas_threads() == before
    assert np.allclose(ref.c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_a_user_reference_s_compiled_comparison_gives_numpy_s_figures(dtype):
    """Against a user's reference (issue 22) the compiled comparison makes
    each element's bound ``rtol * |ref| + floor`` inside its loop, not as an
    array: its figures are those of numpy's whole-array comparison against
    the bound made as an array, for blocks large enough to be compiled and
    with a NaN, a wrong element and a cancelled one among them."""
    from kernels.analyses import correctness
    from kernels.analyses.correctness import _compare_block_numpy, elementwise_reference

    rng = np.random.default_rng(3)
    shape = (1100, 700)  # (blocks of 512 rows x 700 > NUMPY_COMPARE_ELEMENTS: compiled)
    assert correctness._BLOCK_ROWS * shape[1] > correctness.NUMPY_COMPARE_ELEMENTS
    expected = rng.standard_normal(shape) * 100
    if dtype == "int32":
        expected = np.round(expected)
    expected[5, 6] = 0.0
    ref = elementwise_reference(expected, dtype)
    c = expected.astype(dtype)
    c[0, 1] += 3  # one element far off
    if dtype != "int32":
        c[2, 3] = np.nan
    figures = compare(c, ref)
    numpy_sums = np.zeros(8)
    for start in range(0, shape[0], correctness._BLOCK_ROWS):
        rows = slice(start, start + correctness._BLOCK_ROWS)
        part = _compare_block_numpy(c[rows], ref.c[rows], ref.bound(rows))
        numpy_sums[[0, 2, 4, 5, 7]] += part[[0, 2, 4, 5, 7]]
        numpy_sums[[1, 3, 6]] = np.maximum(numpy_sums[[1, 3, 6]], part[[1, 3, 6]])
    assert figures.wrong == numpy_sums[4] >= 1
    assert figures.non_finite == numpy_sums[5] == (0 if dtype == "int32" else 1)
    assert figures.abs_tolerance == numpy_sums[3]
    assert figures.worst_ratio == pytest.approx(numpy_sums[6], rel=1e-12)
    assert figures.rel_tolerance == pytest.approx(
        np.sqrt(numpy_sums[2]) / np.sqrt(numpy_sums[7]), rel=1e-12)


# -- a FAIL with every value right says why (issue 43, point 6) -----------------------

KERNELS = Path(__file__).parent / "kernels"

#: Tiles over K = 20 in steps of 16, no guard on the loads: the second tile
#: reads columns (A) and rows (B) 20..31, which the emulation reads as 0, and
#: 0 x 0 adds nothing: C is right.
_UNGUARDED_TILES = '''
from numba import cuda, float32

TPB = 16


@cuda.jit
def tiles(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = 0.0
    for i in range((A.shape[1] + TPB - 1) // TPB):
        sA[ty, tx] = A[y, i * TPB + tx]
        sB[ty, tx] = B[i * TPB + ty, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    C[y, x] = tmp
'''

#: Threads past C return before a barrier, the others compute their element
#: whole: barrier divergence, every value right.
_EARLY_RETURN = '''
from numba import cuda


@cuda.jit
def early(A, B, C):
    row, col = cuda.grid(2)
    if row >= C.shape[0] or col >= C.shape[1]:
        return
    cuda.syncthreads()
    acc = 0.0
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    C[row, col] = acc
'''


def _file_run(path, shape, grid, block):
    m, k, n = shape
    return run(RunRequest(kernel=None, kernel_file=str(path), m=m, k=k, n=n, grid=grid,
                          block=block, backend="cpu"))


@pytest.mark.parametrize("case,shape,grid,block,check,why", [
    # C 33 x 19 under an `and` guard: 298 stores outside C, skipped
    ("and_guard.py", (33, 17, 19), (5, 3), (8, 8), "the out-of-bounds write check",
     "out-of-bounds writes are skipped in the emulation"),
    ("unguarded_tiles", (32, 20, 32), (2, 2), (16, 16), "the out-of-bounds read check",
     "out-of-bounds reads read 0 in the emulation"),
    # no barrier between storing the tiles and reading them: lockstep stores
    # every thread's element before any thread reads
    ("missing_barrier.py", (16, 16, 16), (1, 1), (16, 16), "the shared-memory race check",
     "the emulation's one fixed order of the threads (lockstep: warp after warp, block "
     "after block) decided every race"),
    ("early_return", (20, 8, 20), (2, 2), (16, 16), "the barrier divergence check",
     "the emulation lets the threads that reach a barrier go on without those that "
     "returned or went another way"),
])
def test_a_fail_with_every_value_right_says_which_check_failed_and_why(
        tmp_path, case, shape, grid, block, check, why):
    if case.endswith(".py"):
        path = KERNELS / case
    else:
        path = tmp_path / f"{case}.py"
        path.write_text({"unguarded_tiles": _UNGUARDED_TILES, "early_return": _EARLY_RETURN}[case])
    result = _file_run(path, shape, grid, block)
    verdict = result.verdict
    assert not verdict.passed and verdict.errors.within_tolerance
    *failures, last = verdict.reasons
    assert failures and not any("all the same" in reason for reason in failures)
    assert last.startswith("every element of C is within its bound of the reference all the "
                           f"same: the FAIL comes from {check}, not from its values, which "
                           f"come out right here because {why}; on a GPU they need not")


def test_a_fail_with_wrong_values_or_a_pass_adds_no_such_sentence():
    # tid-rows on 1 x 12 threads over 9 rows: rows stored by several threads
    # and left unwritten; values wrong
    wrong = run(RunRequest(kernel="tid-rows", m=9, k=4, n=11, grid=(1,), block=(12,),
                           backend="cpu"))
    assert not wrong.verdict.errors.within_tolerance
    assert not any("all the same" in reason for reason in wrong.verdict.reasons)
    right = run(RunRequest(kernel="naive-2d", m=9, k=4, n=11, grid=(1, 1), block=(16, 16),
                           backend="cpu"))
    assert right.verdict.passed and right.verdict.reasons == ()
