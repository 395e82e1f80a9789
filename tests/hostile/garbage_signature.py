# wrong accept: a signature numba refuses (it used to PASS)
# expect: the signature 'open MARKER' is not a numba signature
from numba import cuda


@cuda.jit("open MARKER")
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
