"""The naive transpose (NVIDIA, "An Efficient Matrix Transpose in CUDA C/C++"):
tiles of 32 x 32 handled by blocks of 32 x 8 threads; the reads of a go
along its rows (coalesced), the writes of out down its columns (not)."""
from numba import cuda

TILE = 32
BLOCK_ROWS = 8
THREADMAP_ARGS = {"a": "float32[64, 64]", "out": "float32[64, 64]"}


@cuda.jit
def transpose_naive(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        out[x, y + j] = a[y + j, x]


if __name__ == "__main__":
    import numpy as np

    a = np.random.rand(64, 64).astype(np.float32)
    out = np.zeros_like(a)
    transpose_naive[(2, 2), (32, 8)](a, out)
