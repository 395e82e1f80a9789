# idiom: a 2-D grid-stride written as nested while loops with manual increments, the column counter started once, outside the row loop
# label: bug, line 12: j is set once, before the row loop, so after each thread's first row it stays past x's 30 columns: only rows 0..15 are written, rows 16..44 (870 of 1,350 elements) never
# diagnosis: counter-not-reset 12
from numba import cuda

THREADMAP_ARGS = {"x": "float32[45, 30]", "out": "float32[45, 30]"}


@cuda.jit
def scale2d(x, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    while i < x.shape[0]:
        while j < x.shape[1]:
            out[i, j] = 2.0 * x[i, j]
            j += cuda.gridDim.y * cuda.blockDim.y
        i += cuda.gridDim.x * cuda.blockDim.x


def host(x, out):
    scale2d[(2, 2), (8, 8)](x, out)
