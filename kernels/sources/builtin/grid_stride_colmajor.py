"""The grid-stride kernel walking C in column-major order.

Coverage is the same as the row-major grid-stride kernel (every element once),
but consecutive threads now take consecutive rows: a warp's 32 stores to C and
loads of B land on 32 different rows, far apart in memory, instead of one
contiguous stretch.  It shows why the canonical mapping is row-major.
"""
from numba import cuda


@cuda.jit
def matmul_grid_stride_colmajor(A, B, C):
    num_of_threads = cuda.gridsize(1)
    tid = cuda.grid(1)
    rows_num = C.shape[0]
    cols_num = C.shape[1]
    for mid in range(tid, rows_num * cols_num, num_of_threads):
        col = mid // rows_num
        row = mid - (col * rows_num)
        my_sum = 0.0
        for idx in range(A.shape[1]):
            my_sum += A[row, idx] * B[idx, col]
        C[row, col] = my_sum
