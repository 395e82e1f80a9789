# idiom: a 1-D three-point stencil, len() for the size, the edges left as they are
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"a": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def stencil(a, out):
    i = cuda.grid(1)
    if i < len(a):
        if 0 < i < len(a) - 1:
            out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        else:
            out[i] = a[i]


def host(a, out):
    stencil[4, 256](a, out)
