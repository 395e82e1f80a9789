# hostile: 300 bytes that asked the CPU emulation for 2 MiB per thread (2.1 GB for a block of 32 x 32)
# expect: needs 2.0 MiB per thread; CUDA gives a thread at most 512.0 KiB of local memory
import numpy as np
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    scratch = cuda.local.array(262144, np.float64)
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        scratch[0] = A[i, 0] * B[0, j]
        C[i, j] = scratch[0]
