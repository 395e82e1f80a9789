# idiom: a 2-D grid-stride loop over a non-square grid, the column loop stepping by the row axis's grid size
# label: bug, line 14: the columns step by sx = 64 where the grid is sy = 16 wide along y: thread gy writes columns gy and gy + 64 only, so columns 16..63 and 80..99 are no thread's, 40 rows x 68 columns = 2,720 of 4,000 elements never written
# diagnosis: other-axis-stride 14
from numba import cuda

THREADMAP_ARGS = {"x": "float32[40, 100]", "out": "float32[40, 100]"}


@cuda.jit
def scale2d(x, out):
    gx, gy = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for i in range(gx, x.shape[0], sx):
        for j in range(gy, x.shape[1], sx):
            out[i, j] = 2.0 * x[i, j]


def host(x, out):
    scale2d[(4, 1), (16, 16)](x, out)
