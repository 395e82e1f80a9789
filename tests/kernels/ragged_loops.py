"""Loops whose lanes part ways: each lane's trip count differs, some loads fall
outside A, one step is not a literal, one division is by zero in some lanes.
The emulation records such load-only loop bodies lane by lane; its figures
must be the lockstep's, element by element (tests/test_lockstep.py)."""
from numba import cuda


@cuda.jit
def ragged_loops(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        total = 0.0
        for k in range(j % 5, A.shape[1] + i % 3):  # past A's last column in some lanes
            total += A[i, k] * B[k % B.shape[0], j]
        step = 1 + (i + j) % 3
        for k in range(0, B.shape[0], step):
            part = B[k, j] * 2.0
            total += part / (1 + k // (j % 4 + 1))
        for outer in range(i % 2 + 1):
            for k in range(outer, A.shape[1]):
                total += A[i, k] * (k // (j % 3))  # j % 3 == 0: a division by zero
        C[i, j] = total
