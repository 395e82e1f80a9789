# hostile: numba's object mode (Python inside a compiled function)
# expect: 'numba.objmode' is not something a kernel can use
import numba
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    numba.objmode()
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
