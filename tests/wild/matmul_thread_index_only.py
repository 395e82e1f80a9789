# idiom: threadIdx only, a range kept in a variable with a literal stride, int(a / b) for division, C[row][col] +=
# label: bug, line 16: C is indexed from threadIdx.x alone (the range of line 11), so every block computes the same elements
# diagnosis: thread-index-only 16
# shape: 48x8x48
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    tx = cuda.threadIdx.x
    to_calculate = range(tx, C.size, 1024)
    for i in to_calculate:
        row = int(i / C.shape[1])
        col = i % C.shape[1]
        for k in range(A.shape[1]):
            C[row][col] += A[row][k] * B[k][col]


def host(A, B, C):
    matmul[4, 256](A, B, C)
