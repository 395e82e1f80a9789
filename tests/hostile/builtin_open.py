# hostile: Python's open in the body
# expect: 'open' is Python's, not something a CUDA kernel can call
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        open("MARKER", "w")
        C[i, j] = A[i, 0] * B[0, j]
