# hostile: cuda rebound at module level (numba would fail on @cuda.jit; it used to PASS)
# expect: 'cuda' is bound more than one way at the file's top level (lines 4, 6)
import os
from numba import cuda

cuda = os


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
