# idiom: a block reduction in shared memory with its barrier indented into the if of the active threads
# label: bug, line 24: cuda.syncthreads() inside `if t < s:` is reached only by the threads with t < s, a barrier the rest of the block never reaches (undefined on a GPU: a hang or a barrier that does not wait)
# diagnosis: barrier-in-branch 24
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1000]", "partial": "float32[8]"}


@cuda.jit
def block_sums(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.shape[0]:
        sdata[t] = x[i]
    else:
        sdata[t] = 0.0
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sdata[t] += sdata[t + s]
            cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


def host(x, partial):
    block_sums[8, TPB](x, partial)
