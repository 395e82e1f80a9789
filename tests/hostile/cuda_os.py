# hostile: numba.cuda imports os, and its name is reachable from the kernel
# expect: 'cuda.os.system' (numba.cuda.os.system, through the file's imports)
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i == 1000000:
        cuda.os.system("touch MARKER")
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
