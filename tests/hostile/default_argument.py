# hostile: a default argument, evaluated when the def runs
# expect: only plain positional parameters are supported
from numba import cuda


@cuda.jit
def matmul(A, B, C, n=open("MARKER", "w")):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
