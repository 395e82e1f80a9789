# idiom: nested while loops with manual increments (the grid stride spelled blockDim * gridDim), the sum too as a while
# label: correct
# diagnosis: none
# shape: 40x8x24
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while row < C.shape[0]:
        col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        while col < C.shape[1]:
            s = 0.0
            k = 0
            while k < A.shape[1]:
                s += A[row, k] * B[k, col]
                k += 1
            C[row, col] = s
            col += cuda.blockDim.y * cuda.gridDim.y
        row += cuda.blockDim.x * cuda.gridDim.x


def host(A, B, C):
    matmul[(2, 2), (8, 8)](A, B, C)
