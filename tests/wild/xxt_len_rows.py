# idiom: len() for sizes, a row taken as A[i] then indexed, A.T[k][j], out[i][j] = (chained indexing)
# label: correct (X @ X.T for a square X)
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"A": "float32[40, 40]", "out": "float32[40, 40]"}


@cuda.jit
def xxt(A, out):
    i, j = cuda.grid(2)
    if i < len(A) and j < len(A):
        s = 0.0
        for k in range(len(A[0])):
            s += A[i][k] * A.T[k][j]
        out[i][j] = s


def host(A, out):
    xxt[(5, 5), (8, 8)](A, out)
