# idiom: a warp-shuffle sum with the shuffle moved under the test on the lane that only the adding lanes need
# label: bug, lines 21 and 22: the lanes with lane >= offset skip cuda.shfl_down_sync (line 22, inside the if of line 21), though its full mask names them: lane l reads lane l + offset, which never called it
# diagnosis: warp-call-in-branch 21 22
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
    lane = cuda.threadIdx.x % 32
    offset = 16
    while offset > 0:
        if lane < offset:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if lane == 0:
        cuda.atomic.add(total, 0, v)


def host(x, total):
    warp_sum[2, 128](x, total)
