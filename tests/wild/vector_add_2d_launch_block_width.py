# idiom: a 2-D launch over a 1-D array, the flat index made with the block's width where the grid's was needed
# label: bug, line 12: i = gy * blockDim.x + gx with gx 0..31 and gy 0..31 runs only to 31 * 16 + 31 = 527, and (gx, gy) meets (gx - 16, gy + 1): elements 528..999 (472) are never written and most below are written twice
# diagnosis: flat-index-width 12
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def vector_add(x, y, out):
    gx, gy = cuda.grid(2)
    i = gy * cuda.blockDim.x + gx
    if i < out.shape[0]:
        out[i] = x[i] + y[i]


def host(x, y, out):
    vector_add[(2, 4), (16, 8)](x, y, out)
