# idiom: a grid-stride for over rows with an inner while over columns, its counter started again for each row
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"A": "float32[50, 37]", "out": "float32[50]"}


@cuda.jit
def row_sums(A, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for row in range(start, A.shape[0], stride):
        total = 0.0
        col = 0
        while col < A.shape[1]:
            total += A[row, col]
            col += 1
        out[row] = total


def host(A, out):
    row_sums[2, 8](A, out)
