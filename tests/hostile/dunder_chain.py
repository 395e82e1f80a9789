# hostile: an attribute chain into Python's internals
# expect: a kernel cannot reach Python's internals
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    classes = A.__class__.__mro__
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
