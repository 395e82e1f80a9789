# idiom: a 2-D five-point stencil whose interior test forgets the - 1 at the far edges
# label: bug, line 14: the last row (i = 29) and the last column (j = 49) count as interior, so a[i + 1, j] and a[i, j + 1] read one past a's end: 49 + 29 = 78 reads
# diagnosis: shifted-index 14
from numba import cuda

THREADMAP_ARGS = {"a": "float32[30, 50]", "out": "float32[30, 50]"}


@cuda.jit
def laplace(a, out):
    i, j = cuda.grid(2)
    rows, cols = a.shape
    if 0 < i < rows and 0 < j < cols:
        out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    elif i < rows and j < cols:
        out[i, j] = a[i, j]


def host(a, out):
    laplace[(2, 4), (16, 16)](a, out)
