# idiom: one thread per row of C, the column count kept in a name taken from the wrong array (ncols = A.shape[0])
# label: bug, line 13: the column loop runs to A.shape[0] = 30 (A's rows), but C has 20 columns: each of the 30 row threads writes columns 20..29 past C's right edge (300 writes)
# diagnosis: work-from-a 13
# shape: 30x12x20
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    row = cuda.grid(1)
    ncols = A.shape[0]
    if row < C.shape[0]:
        for col in range(ncols):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[row, k] * B[k, col]
            C[row, col] = acc


def host(A, B, C):
    matmul[1, 64](A, B, C)
