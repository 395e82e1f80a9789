"""A grid-stride loop whose stride is the literal 1024 (issue 21): right on
launches of exactly 1,024 threads, and only there."""
from numba import cuda


@cuda.jit
def literal_stride(A, B, C):
    start = cuda.grid(1)
    for i in range(start, C.size, 1024):
        row = i // C.shape[1]
        col = i % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
