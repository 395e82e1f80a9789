"""A reduction through shared memory that reads one element past its tile."""
from numba import cuda, float32

TPB = 16


@cuda.jit
def off_by_one(A, B, C):
    row = cuda.blockIdx.x
    col = cuda.threadIdx.x
    partial = cuda.shared.array(TPB, float32)
    if row < C.shape[0] and col < C.shape[1]:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        partial[col] = s
    cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = partial[col] + 0 * partial[col + 1]
