# idiom: a grid-stride range kept in a variable with a literal stride (work = range(cuda.grid(1), rows * cols, 1024)), int(a / b) for the row, C[row][col] = (chained indexing)
# label: bug, line 10: the stride is the literal 1,024 but the launch has 2 x 256 = 512 threads: each thread takes e and e + 1,024, and elements 512..1,023 of C's 1,200 (512) are never written
# diagnosis: fixed-size 10 11
# shape: 40x8x30
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    work = range(cuda.grid(1), C.shape[0] * C.shape[1], 1024)
    for e in work:
        row = int(e / C.shape[1])
        col = e % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row][k] * B[k][col]
        C[row][col] = acc


def host(A, B, C):
    matmul[2, 256](A, B, C)
