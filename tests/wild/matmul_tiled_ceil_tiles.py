# idiom: a shared-memory tiled matmul, module constant TPB, the number of tiles as int(math.ceil(K / TPB)), a 2-D grid as a tuple
# label: correct
# diagnosis: none
# shape: 40x37x24
import math

import numpy as np
from numba import cuda, float32

TPB = 8


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = 0.0
    for t in range(int(math.ceil(A.shape[1] / TPB))):
        sA[ty, tx] = 0.0
        sB[ty, tx] = 0.0
        if x < A.shape[0] and t * TPB + ty < A.shape[1]:
            sA[ty, tx] = A[x, t * TPB + ty]
        if y < B.shape[1] and t * TPB + tx < B.shape[0]:
            sB[ty, tx] = B[t * TPB + tx, y]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[j, tx] * sB[ty, j]
        cuda.syncthreads()
    if x < C.shape[0] and y < C.shape[1]:
        C[x, y] = tmp


def host(A, B, C):
    matmul[(5, 3), (TPB, TPB)](A, B, C)
