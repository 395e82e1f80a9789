# idiom: nested while loops with manual increments, the inner counter started once, outside the outer loop
# label: bug, line 11: col is set once, before the row loop, so after a thread's first row it stays past C's 24 columns: the 16 threads' rows 0..15 are written, rows 16..39 (576 of 960 elements) never
# diagnosis: counter-not-reset 11
# shape: 40x8x24
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    while row < C.shape[0]:
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
