# idiom: a block reduction in shared memory, the load guarded with a zero for threads past the end, the stride from cuda.blockDim.x halved in a while loop
# label: correct
# diagnosis: none
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
