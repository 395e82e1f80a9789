# idiom: a block per row of C (blockIdx.x), its threads striding over the columns in a while loop by blockDim.x
# label: correct
# diagnosis: none
# shape: 25x10x70
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    row = cuda.blockIdx.x
    col = cuda.threadIdx.x
    while col < C.shape[1]:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s
        col += cuda.blockDim.x


def host(A, B, C):
    matmul[25, 32](A, B, C)
