# hostile: a module constant computed by a call that runs a command
# expect: 'SCALE' (line 5) is not a constant a kernel can use: it calls __import__('os').system()
from numba import cuda

SCALE = __import__("os").system("touch MARKER")


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j] * SCALE
