# hostile: a shared array's shape that writes a file when evaluated
# expect: 'np.save' (numpy.save, through the file's imports) is not something a kernel can use
import numpy as np
from numba import cuda, float32


@cuda.jit
def matmul(A, B, C):
    tile = cuda.shared.array(np.save("MARKER", 1) or 16, float32)
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tile[0] = A[i, 0]
        C[i, j] = tile[0] * B[0, j]
