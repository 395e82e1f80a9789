# idiom: a chunk of rows per thread, math.ceil(rows / cuda.gridsize(1)), no guard at the chunk's end
# label: bug, line 15: 16 threads x ceil(50 / 16) = 4 rows cover 64 rows, and nothing stops at C's 50: thread 12 writes rows 50..51, threads 13..15 rows 52..63, 14 rows x 12 = 168 writes past C
# diagnosis: unguarded-chunk-end 15
# shape: 50x8x12
import math

from numba import cuda


@cuda.jit
def matmul(A, B, C):
    t = cuda.grid(1)
    rows_per = math.ceil(C.shape[0] / cuda.gridsize(1))
    first = t * rows_per
    for r in range(first, first + rows_per):
        for c in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[r, k] * B[k, c]
            C[r, c] = s


def host(A, B, C):
    matmul[1, 16](A, B, C)
