"""The canonical grid-stride matmul kernel of the forum answer.

The work is derived from C (not from A), and a grid-stride loop lets any grid
arrangement cover every element of C exactly once: thread ``t`` of ``T``
computes elements ``t, t + T, t + 2T, ...`` in row-major order.
"""
from numba import cuda


@cuda.jit
def matmul_grid_stride(A, B, C):
    num_of_threads = cuda.gridsize(1)
    tid = cuda.grid(1)
    rows_num = C.shape[0]
    cols_num = C.shape[1]
    idx_range = A.shape[1]
    for mid in range(tid, rows_num * cols_num, num_of_threads):
        row = mid // cols_num
        col = mid - (row * cols_num)
        my_sum = 0.0
        for idx in range(0, idx_range):
            my_sum += A[row, idx] * B[idx, col]
        C[row, col] = my_sum
