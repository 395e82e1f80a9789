"""For any shape and 1-D launch, grid-stride writes every element exactly once:
element (r, c) by thread (r * N + c) mod T, in iteration (r * N + c) div T."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import run
from tests.conftest import request


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), k=st.integers(1, 9), n=st.integers(1, 40),
       blocks=st.integers(1, 9), threads=st.integers(1, 300))
def test_grid_stride_covers_c_once_in_the_predicted_order(m, k, n, blocks, threads):
    result = run(request("grid-stride", (m, k, n), (blocks,), (threads,), backend="cpu",
                         repeats=1))
    total = blocks * threads
    linear = np.arange(m * n).reshape(m, n)
    maps = result.maps
    np.testing.assert_array_equal(maps.count, 1)
    np.testing.assert_array_equal(maps.min_writer, linear % total)
    np.testing.assert_array_equal(maps.max_writer, linear % total)
    np.testing.assert_array_equal(maps.iteration, linear // total)
    # Threads past the last element store nothing; the others ceil/floor of m*n/T.
    expected_stores = np.array([len(range(t, m * n, total)) for t in range(total)])
    np.testing.assert_array_equal(maps.stores_per_thread, expected_stores)
    assert result.verdict.passed, result.verdict.reasons
    # Each element of A is read once per column of C, each of B once per row.
    np.testing.assert_array_equal(maps.reads_a, n)
    np.testing.assert_array_equal(maps.reads_b, m)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 30), n=st.integers(1, 30), bx=st.integers(1, 4), by=st.integers(1, 4),
       tx=st.integers(1, 16), ty=st.integers(1, 16))
def test_grid_stride_on_2d_launches_uses_only_the_x_dimension(m, n, bx, by, tx, ty):
    # cuda.grid(1) and gridsize(1) only see x: with a 2-D launch, every y-row of
    # threads repeats the same elements, which the maps must show as collisions.
    result = run(request("grid-stride", (m, 3, n), (bx, by), (tx, ty), backend="cpu", repeats=1))
    np.testing.assert_array_equal(result.maps.count, by * ty)
