"""The padded transpose: the tiled one with a tile of 32 x 33.  The extra
column shifts each row of the tile by one bank, so a column of the tile
lies on 32 different banks: the conflicts are gone."""
from numba import cuda, float32

TILE = 32
#: a row of the tile, one word longer (numba needs a shape it can read when it
#: compiles: a number or a name bound to one, never `TILE + 1` in the kernel)
PADDED_ROW = TILE + 1
BLOCK_ROWS = 8
THREADMAP_ARGS = {"a": "float32[64, 64]", "out": "float32[64, 64]"}


@cuda.jit
def transpose_padded(a, out):
    tile = cuda.shared.array((TILE, PADDED_ROW), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        out[y + j, x] = tile[tx, ty + j]


if __name__ == "__main__":
    import numpy as np

    a = np.random.rand(64, 64).astype(np.float32)
    out = np.zeros_like(a)
    transpose_padded[(2, 2), (32, 8)](a, out)
