# idiom: a 2-D five-point stencil, the shape unpacked into names (rows, cols = a.shape), chained comparisons, the edges copied
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"a": "float32[30, 50]", "out": "float32[30, 50]"}


@cuda.jit
def laplace(a, out):
    i, j = cuda.grid(2)
    rows, cols = a.shape
    if 0 < i < rows - 1 and 0 < j < cols - 1:
        out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    elif i < rows and j < cols:
        out[i, j] = a[i, j]


def host(a, out):
    laplace[(2, 4), (16, 16)](a, out)
