# idiom: a ceil-divided chunk per thread (math.ceil of a true division), its end guarded with min()
# label: correct
# diagnosis: none
# shape: 50x8x45
import math

from numba import cuda


@cuda.jit
def matmul(A, B, C):
    t = cuda.grid(1)
    per = int(math.ceil(C.shape[0] * C.shape[1] / cuda.gridsize(1)))
    start = t * per
    for e in range(start, min(start + per, C.shape[0] * C.shape[1])):
        row = e // C.shape[1]
        col = e % C.shape[1]
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s


def host(A, B, C):
    matmul[4, 256](A, B, C)
