# idiom: an early `return` guard at the top of a kernel that then waits at a barrier
# label: bug, line 16: threads past the end return before the cuda.syncthreads() of line 18, which the rest of their block waits at
# diagnosis: early-return-before-barrier 16 18
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1000]", "partial": "float32[8]"}


@cuda.jit
def block_sums(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    sdata[t] = x[i]
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            sdata[t] += sdata[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


def host(x, partial):
    block_sums[8, TPB](x, partial)
