# idiom: a row taken as A[i], then indexed and sized through the row (row[k], row.shape[0])
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"A": "float32[40, 40]", "out": "float32[40]"}


@cuda.jit
def row_sums(A, out):
    i = cuda.grid(1)
    if i < A.shape[0]:
        row = A[i]
        s = 0.0
        for k in range(row.shape[0]):
            s += row[k]
        out[i] = s


def host(A, out):
    row_sums[2, 32](A, out)
