# idiom: a chunk per thread computed with int(a / b), which rounds down
# label: bug, line 12: int(1,050 / 512) = 2 elements per thread covers 1,024 of C's 1,050: the last 26 elements (row 29, columns 9..34) are never written
# diagnosis: rounded-down-chunk 12 13
# shape: 30x8x35
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    t = cuda.grid(1)
    n = C.shape[1]
    per = int(C.size / cuda.gridsize(1))
    for e in range(t * per, t * per + per):
        row = e // n
        col = e % n
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def host(A, B, C):
    matmul[2, 256](A, B, C)
