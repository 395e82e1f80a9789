# hostile: str.format walking into a value's class
# expect: "'{0.__class__}'.format": a kernel reads only
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    name = "{0.__class__}".format(A)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
