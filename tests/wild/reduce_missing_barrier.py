# idiom: a block reduction in shared memory, written as the course's sequential reduction
# label: bug, lines 16 and 20: no cuda.syncthreads() between filling sdata (line 16) and the first step that reads it (line 20)
# diagnosis: missing-barrier 16 20
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[8]"}


@cuda.jit
def block_sums(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    if i < x.shape[0]:
        sdata[t] = x[i]
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
