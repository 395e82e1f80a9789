"""Where the asker's approach leads: one block, each thread a contiguous chunk.

Each of the block's threads takes ceil(C.size / threads) consecutive elements
of C.  Nothing guards the end of C, so when C.size is not a multiple of the
thread count the last threads run past it; and because only the thread index
is used, every extra block repeats the same work (collisions).
"""
from numba import cuda


@cuda.jit
def matmul_one_block_chunks(A, B, C):
    tid = cuda.threadIdx.x
    num_threads = cuda.blockDim.x
    cols_num = C.shape[1]
    chunk = (C.shape[0] * cols_num + num_threads - 1) // num_threads
    start = tid * chunk
    for mid in range(start, start + chunk):
        row = mid // cols_num
        col = mid % cols_num
        my_sum = 0.0
        for idx in range(A.shape[1]):
            my_sum += A[row, idx] * B[idx, col]
        C[row, col] = my_sum
