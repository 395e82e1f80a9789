# hostile: an import inside the kernel's body
# expect: imports are not supported in a kernel
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    import os
    i, j = cuda.grid(2)
    if i == 1000000:
        os.system("touch MARKER")
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
