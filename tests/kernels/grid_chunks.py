"""Chunks dealt to the whole grid (issue 21): each thread takes
ceil(C.size / threads) consecutive elements from cuda.grid(1) * chunk, and
nothing stops the last threads at the end of C."""
from numba import cuda


@cuda.jit
def grid_chunks(A, B, C):
    chunk = (C.size + cuda.gridsize(1) - 1) // cuda.gridsize(1)
    start = cuda.grid(1) * chunk
    for e in range(start, start + chunk):
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
