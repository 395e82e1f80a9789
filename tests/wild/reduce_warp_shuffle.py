# idiom: a warp-shuffle sum (cuda.shfl_down_sync with a module constant full mask), a while grid-stride loop, lane 0 adding its warp's sum atomically
# label: correct
# diagnosis: none
from numba import cuda

FULL_MASK = 0xFFFFFFFF
THREADMAP_ARGS = {"x": "float32[3000]", "total": "float32[1]"}


@cuda.jit
def warp_sum(x, total):
    v = 0.0
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.shape[0]:
        v += x[i]
        i += stride
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(total, 0, v)


def host(x, total):
    warp_sum[2, 128](x, total)
