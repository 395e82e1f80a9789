# hostile: a module constant from eval
# expect: 'TPB' (line 5) is not a constant a kernel can use: it calls eval()
from numba import cuda

TPB = eval("open('MARKER', 'w') and 16")


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j] * TPB
