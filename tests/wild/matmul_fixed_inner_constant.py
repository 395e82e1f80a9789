# idiom: a module constant used as the length of the sum (for k in range(K)), a 2-D grid unpacked
# label: bug, line 15: the sum runs over K = 32 terms but A has 40 columns: columns 32..39 of A (rows 32..39 of B) are never read, every element of C is short of 8 terms
# diagnosis: fixed-size 15
# shape: 24x40x20
from numba import cuda

K = 32


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(K):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def host(A, B, C):
    matmul[(2, 2), (16, 16)](A, B, C)
