# hostile: numpy's name rebound to os inside a top-level block
# expect: 'np' is bound more than one way at the file's top level (lines 3, 7)
import numpy as np
from numba import cuda

if True:
    np = __import__("os")


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = np.float32(A[i, 0] * B[0, j])
