# hostile: print into a file opened on the spot
# expect: 'open' is Python's, not something a CUDA kernel can call
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i == 0 and j == 0:
        print("x", file=open("MARKER", "w"))
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
