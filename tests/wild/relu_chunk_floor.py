# idiom: a described 1-D kernel, a chunk of elements per thread by floor division, the remainder left to no thread
# label: bug, line 12: 1000 // 192 = 5 elements a thread cover 960, and the last 40 elements of out are never written
# diagnosis: rounded-down-chunk 12 14
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def relu(x, out):
    t = cuda.grid(1)
    per = x.shape[0] // cuda.gridsize(1)
    first = t * per
    for i in range(first, first + per):
        out[i] = max(x[i], 0.0)


def host(x, out):
    relu[3, 64](x, out)
