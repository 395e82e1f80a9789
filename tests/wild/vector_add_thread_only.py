# idiom: a vector add indexed by threadIdx.x alone, launched on several blocks
# label: bug, line 13: every block adds the same 256 elements; elements past 256 are never written
# diagnosis: thread-index-only 13
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def vector_add(x, y, out):
    i = cuda.threadIdx.x
    if i < out.shape[0]:
        out[i] = x[i] + y[i]


def host(x, y, out):
    vector_add[4, 256](x, y, out)
