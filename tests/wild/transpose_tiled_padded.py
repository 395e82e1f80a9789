# idiom: a tiled transpose through a shared tile padded by a column (PADDED = TILE + 1, a constant made from another), x and y bound again for the output
# label: correct
# diagnosis: none
from numba import cuda, float32

TILE = 16
PADDED = TILE + 1
THREADMAP_ARGS = {"a": "float32[48, 40]", "out": "float32[40, 48]"}


@cuda.jit
def transpose_tiled(a, out):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    if y < a.shape[0] and x < a.shape[1]:
        tile[ty, tx] = a[y, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = tile[tx, ty]


def host(a, out):
    transpose_tiled[(3, 3), (16, 16)](a, out)
