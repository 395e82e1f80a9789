# idiom: a ceil-divided chunk per thread, written with math.ceil and int(a / b), no guard at its end
# label: bug, line 15: the last chunks run past C's end (chunks x threads > C.size), with no test against C.size
# diagnosis: unguarded-chunk-end 15
# shape: 50x8x45
import math

from numba import cuda


@cuda.jit
def matmul(A, B, C):
    t = cuda.grid(1)
    per = int(math.ceil(C.shape[0] * C.shape[1] / cuda.gridsize(1)))
    start = t * per
    for e in range(start, start + per):
        row = e // C.shape[1]
        col = e % C.shape[1]
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s


def host(A, B, C):
    matmul[4, 256](A, B, C)
