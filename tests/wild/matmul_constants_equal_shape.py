# idiom: module constants for every size (SIZE = ROWS * COLS made from the others), a grid-stride loop over SIZE with every range part a name; the constants equal this shape
# label: correct
# diagnosis: none
# shape: 48x16x40
from numba import cuda

ROWS = 48
COLS = 40
INNER = 16
SIZE = ROWS * COLS


@cuda.jit
def matmul(A, B, C):
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for e in range(start, SIZE, step):
        r = e // COLS
        c = e % COLS
        acc = 0.0
        for k in range(INNER):
            acc += A[r, k] * B[k, c]
        C[r, c] = acc


def host(A, B, C):
    matmul[4, 128](A, B, C)
