# idiom: a 2-D grid-stride loop over a non-square grid, each axis stepping by its own grid size from cuda.gridsize(2)
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[40, 100]", "out": "float32[40, 100]"}


@cuda.jit
def scale2d(x, out):
    gx, gy = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for i in range(gx, x.shape[0], sx):
        for j in range(gy, x.shape[1], sy):
            out[i, j] = 2.0 * x[i, j]


def host(x, out):
    scale2d[(4, 1), (16, 16)](x, out)
