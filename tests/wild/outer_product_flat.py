# idiom: a grid-stride loop over the flat elements of a 2-D output, the row and column taken by // and % with names for every part of the range
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[30]", "y": "float32[50]", "out": "float32[30, 50]"}


@cuda.jit
def outer(x, y, out):
    first = cuda.grid(1)
    total = x.shape[0] * y.shape[0]
    step = cuda.gridsize(1)
    for e in range(first, total, step):
        i = e // y.shape[0]
        j = e % y.shape[0]
        out[i, j] = x[i] * y[j]


def host(x, y, out):
    outer[4, 64](x, y, out)
