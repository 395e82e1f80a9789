# idiom: a tiled transpose through a padded shared tile, the barrier between writing the tile and reading it across left out
# label: bug, lines 19 and 23: no cuda.syncthreads() between the tile's store (line 19) and its read down the columns (line 23): thread (0, 0) reads tile[0, 0] but thread (1, 0) reads tile[1, 0], stored by thread (0, 1) of the same warp, and threads of warp 0 read tile[2..15, 0], stored by later warps
# diagnosis: missing-barrier 19 23
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
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = tile[tx, ty]


def host(a, out):
    transpose_tiled[(3, 3), (16, 16)](a, out)
