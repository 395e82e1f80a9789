# idiom: a grid-stride loop written as a while with a manual increment, cuda.gridsize(1) kept in a name
# label: correct
# diagnosis: none
# shape: 37x19x29
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    e = cuda.grid(1)
    stride = cuda.gridsize(1)
    while e < C.shape[0] * C.shape[1]:
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
        e += stride


def host(A, B, C):
    matmul[3, 128](A, B, C)
