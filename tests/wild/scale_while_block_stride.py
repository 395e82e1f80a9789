# idiom: a grid-stride loop written as a while with a manual increment, stepping by the block instead of the grid
# label: bug, line 14: i steps by blockDim.x = 128 from cuda.grid(1), so every element past 127 is written again by the same thread of each earlier block: 872 of 1,000 elements written by more than one thread
# diagnosis: block-stride 12 14
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    while i < x.shape[0]:
        out[i] = 2.0 * x[i]
        i += cuda.blockDim.x


def host(x, out):
    scale[4, 128](x, out)
