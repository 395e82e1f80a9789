# hostile: chained constants that would take hours to evaluate (A2 has 2**70 digits)
# expect: 'A2' (line 7) is not a constant a kernel can use: 'A1' is not a constant (line 6: 2 ** 64 is past 2**64)
from numba import cuda

A0 = 2
A1 = A0 ** 64
A2 = A1 ** 64
A3 = A2 ** 64


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j] * A2
