"""The derived kernels handle what real kernels contain.

Each kernel here is written the way people write them; each must run in the
CPU emulation and the simulator with the same maps, and compute C right.
"""
import textwrap

import numpy as np
import pytest

from kernels import RunRequest, run

CHAINED_ACCUMULATE = '''
from numba import cuda
TPB = 8
SCALE = 1.0

@cuda.jit
def chained(A, B, C):
    i = cuda.blockIdx.y * TPB + cuda.threadIdx.y
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i >= C.shape[0] or j >= C.shape[1]:
        return
    C[i][j] = 0.0
    for k in range(A.shape[1]):
        C[i][j] += A[i][k] * B[k][j] * SCALE
'''

FLAT_INT_DIVISION = '''
from numba import cuda

@cuda.jit
def flat(A, B, C, n):
    idx = cuda.grid(1)
    row = int(idx / n)
    col = idx % n
    if row < n and col < n:
        s = 0.
        for k in range(n):
            s += A[row * n + k] * B[k * n + col]
        C[row * n + col] = s
'''

MATH_AND_BREAK = '''
import math
import numba
from numba import cuda

@cuda.jit
def with_break(A, B, C):
    tid = cuda.grid(1)
    total = C.shape[0] * C.shape[1]
    steps = int(math.ceil(total / cuda.gridsize(1)))
    for s in range(steps):
        mid = tid + s * cuda.gridsize(1)
        if mid >= total:
            break
        r = mid // C.shape[1]
        c = mid % C.shape[1]
        acc = numba.float64(0)
        for k in range(A.shape[1]):
            acc += A[r, k] * B[k, c]
        C[r, c] = acc + math.sin(0.0)
'''

CASES = [
    # (source, shape, grid, block, expected stores per element)
    (CHAINED_ACCUMULATE, (11, 6, 13), (2, 2), (8, 8), 7),
    (FLAT_INT_DIVISION, (9, 9, 9), (3,), (32,), 1),
    (MATH_AND_BREAK, (7, 5, 10), (2,), (16,), 1),
]


@pytest.mark.sim
@pytest.mark.parametrize("source,shape,grid,block,stores", CASES)
def test_construct_runs_and_backends_agree(tmp_path, source, shape, grid, block, stores):
    path = tmp_path / "kernel.py"
    path.write_text(textwrap.dedent(source))
    m, k, n = shape
    base = RunRequest(kernel=None, kernel_file=str(path), m=m, k=k, n=n, grid=grid, block=block)
    cpu = run(base.with_(backend="cpu"))
    sim = run(base.with_(backend="sim"))
    for result in (cpu, sim):
        assert result.verdict.passed, result.verdict.reasons
        np.testing.assert_array_equal(result.maps.count, stores)
    for field in ("count", "min_writer", "max_writer", "iteration", "stores_per_thread",
                  "reads_a", "reads_b"):
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(sim.maps, field),
                                      err_msg=field)


def test_accumulating_kernel_starts_from_zero_and_is_not_a_collision(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(textwrap.dedent(CHAINED_ACCUMULATE))
    result = run(RunRequest(kernel=None, kernel_file=str(path), m=11, k=6, n=13, grid=(2, 2),
                            block=(8, 8), backend="cpu"))
    assert result.output_init == "zeros"
    assert any("zeroed" in note for note in result.notes)
    assert result.maps.collided == 0  # one thread storing its element 7 times
    np.testing.assert_array_equal(result.maps.min_writer, result.maps.max_writer)
