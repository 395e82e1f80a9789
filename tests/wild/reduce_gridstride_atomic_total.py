# idiom: a grid-stride accumulation per thread, a shared-memory tree in each block, one cuda.atomic.add per block into a one-element total
# label: correct
# diagnosis: none
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[2000]", "total": "float32[1]"}


@cuda.jit
def array_sum(x, total):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    acc = 0.0
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[i]
    sdata[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            sdata[t] += sdata[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(total, 0, sdata[0])


def host(x, total):
    array_sum[4, TPB](x, total)
