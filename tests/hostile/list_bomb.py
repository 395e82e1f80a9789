# hostile: a list of 2e9 floats, which the simulator would build as Python (16 GB)
# expect: lists (numba's CUDA kernels have none) are not supported in a kernel
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    big = [0.0] * 2000000000
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j] + big[0]
