# idiom: a 1-D grid over a 2-D C, the flat index split with // and % by a column count kept in a name, C[row][col] = (chained indexing)
# label: correct
# diagnosis: none
# shape: 30x11x23
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i = cuda.grid(1)
    n_cols = C.shape[1]
    if i < C.shape[0] * n_cols:
        row = i // n_cols
        col = i % n_cols
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row][k] * B[k][col]
        C[row][col] = acc


def host(A, B, C):
    matmul[3, 256](A, B, C)
