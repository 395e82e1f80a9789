"""The textbook one-thread-per-element kernel.

Each thread of a 2-D grid computes one element of C; the bounds check lets the
grid overhang C when its shape is not a multiple of the block.  The x
coordinate runs along a row of C so that neighbouring threads of a warp store
neighbouring elements (the mapping of the CUDA programming guide).
"""
from numba import cuda


@cuda.jit
def matmul_naive_2d(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[row, k] * B[k, col]
        C[row, col] = tmp
