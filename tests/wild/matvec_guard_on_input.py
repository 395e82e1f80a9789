# idiom: a matrix-vector product, one thread a row, the row guarded by the length of the vector it multiplies (a column count) where the output's length (a row count) was needed
# label: bug, line 12: i is tested against x.shape[0] = 40, A's column count, where y has A's 30 rows: threads 30..39 read A[30..39, :] past its 30 rows (10 x 40 = 400 reads) and write y[30..39] past its end (10 writes)
# diagnosis: guard-of-other-array 12
from numba import cuda

THREADMAP_ARGS = {"A": "float32[30, 40]", "x": "float32[40]", "y": "float32[30]"}


@cuda.jit
def matvec(A, x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


def host(A, x, y):
    matvec[2, 32](A, x, y)
