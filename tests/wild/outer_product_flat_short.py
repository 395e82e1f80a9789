# idiom: a grid-stride loop over the flat elements of a 2-D output, bounded by a product of the wrong lengths
# label: bug, line 12: the loop stops at x.shape[0] * x.shape[0] = 900 where out has 30 x 50 = 1,500 elements: rows 18..29 (600 elements) are never written
# diagnosis: short-flat-loop 12
from numba import cuda

THREADMAP_ARGS = {"x": "float32[30]", "y": "float32[50]", "out": "float32[30, 50]"}


@cuda.jit
def outer(x, y, out):
    first = cuda.grid(1)
    for e in range(first, x.shape[0] * x.shape[0], cuda.gridsize(1)):
        i = e // y.shape[0]
        j = e % y.shape[0]
        out[i, j] = x[i] * y[j]


def host(x, y, out):
    outer[4, 64](x, y, out)
