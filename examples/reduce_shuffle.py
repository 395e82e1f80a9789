"""Reduction 7 after Harris, as it is written today: many elements per
thread (a grid-stride loop), then warp shuffles instead of shared memory
for the sums within a warp, and shared memory only for the 4 warps' sums."""
from numba import cuda, float32

TPB = 128
BLOCKS = 2
THREADMAP_ARGS = {"x": "float32[4096]", "partial": "float32[2]"}


@cuda.jit
def reduce_shuffle(x, partial):
    warp_sums = cuda.shared.array(4, float32)
    t = cuda.threadIdx.x
    v = float32(0.0)
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        v += x[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if t % 32 == 0:
        warp_sums[t // 32] = v
    cuda.syncthreads()
    if t == 0:
        partial[cuda.blockIdx.x] = warp_sums[0] + warp_sums[1] + warp_sums[2] + warp_sums[3]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(4096).astype(np.float32)
    partial = np.zeros(BLOCKS, np.float32)
    reduce_shuffle[BLOCKS, TPB](x, partial)
