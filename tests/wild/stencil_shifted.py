# idiom: a stencil whose neighbour index is shifted, with no test at the edge
# label: bug, line 13: a[i + 1] reads past a's end for the last thread
# diagnosis: shifted-index 13
from numba import cuda

THREADMAP_ARGS = {"a": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def forward_difference(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i + 1] - a[i]


def host(a, out):
    forward_difference[4, 256](a, out)
