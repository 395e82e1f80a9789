# idiom: a 2-D launch over a 1-D array, the flat index made from cuda.grid(2) and the grid's width from cuda.gridsize(2), both unpacked
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def vector_add(x, y, out):
    gx, gy = cuda.grid(2)
    width, height = cuda.gridsize(2)
    i = gy * width + gx
    if i < out.shape[0]:
        out[i] = x[i] + y[i]


def host(x, y, out):
    vector_add[(2, 4), (16, 8)](x, y, out)
