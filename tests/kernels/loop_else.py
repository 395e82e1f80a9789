"""Loops with an else (tests/test_loop_else.py): each value worked out by hand there."""
from numba import cuda


@cuda.jit
def first_negative(A, B, C):
    # Row i: the column of its first negative element, or -1 (the else) when
    # it has none.  The search breaks early; only rows without one reach the else.
    i = cuda.grid(1)
    if i < C.shape[0]:
        C[i, 0] = -1.0 + B[0, 0] * 0.0
        for k in range(A.shape[1]):
            if A[i, k] < 0.0:
                C[i, 0] = k
                break
        else:
            C[i, 1] = 1.0


@cuda.jit
def nested(A, B, C):
    # The inner loop's else breaks the outer loop: row i stops at the first
    # column j whose first three entries of A[i, j:] are all positive.
    i = cuda.grid(1)
    if i < C.shape[0]:
        found = -1
        j = 0
        while j < A.shape[1] - 2:
            for d in range(3):
                if A[i, j + d] <= 0.0:
                    break
            else:
                found = j
                break
            j += 1
        else:
            C[i, 1] = 2.0 + B[0, 0] * 0.0
        C[i, 0] = found
