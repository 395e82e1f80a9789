# idiom: a row-wise softmax, one thread per row, the row from cuda.threadIdx.x on a launch of two blocks
# label: bug, line 24: r is threadIdx.x alone, so both blocks of 32 compute rows 0..31 and rows 32..63 (1,600 elements) are never written
# diagnosis: thread-index-only 24
import math

from numba import cuda

THREADMAP_ARGS = {"x": "float32[64, 50]", "out": "float32[64, 50]"}


@cuda.jit
def softmax(x, out):
    r = cuda.threadIdx.x
    if r >= x.shape[0]:
        return
    top = x[r, 0]
    for j in range(1, x.shape[1]):
        if x[r, j] > top:
            top = x[r, j]
    total = 0.0
    for j in range(x.shape[1]):
        total += math.exp(x[r, j] - top)
    for j in range(x.shape[1]):
        out[r, j] = math.exp(x[r, j] - top) / total


def host(x, out):
    softmax[2, 32](x, out)
