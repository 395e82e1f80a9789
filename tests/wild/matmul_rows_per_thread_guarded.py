# idiom: a chunk of rows per thread, math.ceil(rows / cuda.gridsize(1)), its end held at C's rows by min()
# label: correct
# diagnosis: none
# shape: 50x8x12
import math

from numba import cuda


@cuda.jit
def matmul(A, B, C):
    t = cuda.grid(1)
    rows_per = math.ceil(C.shape[0] / cuda.gridsize(1))
    first = t * rows_per
    for r in range(first, min(first + rows_per, C.shape[0])):
        for c in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[r, k] * B[k, c]
            C[r, c] = s


def host(A, B, C):
    matmul[1, 16](A, B, C)
