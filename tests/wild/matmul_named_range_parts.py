# idiom: for over range(start, stop, step) with every part a name, one thread per row of C
# label: correct
# diagnosis: none
# shape: 45x13x31
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    first = cuda.grid(1)
    last = C.shape[0]
    step = cuda.gridsize(1)
    for r in range(first, last, step):
        for c in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[r][k] * B[k][c]
            C[r][c] = s


def host(A, B, C):
    matmul[2, 16](A, B, C)
