"""Reduction 5 after Harris: the last warp unrolled.  Once s is 32 or less
only warp 0 works, and a barrier for the whole block is wasted.  Harris
relied on the warp's lanes running in lockstep (with a `volatile` pointer);
since Volta they need not, so each step reads, waits for the warp
(`syncwarp`), writes, and waits again.  Without those waits the steps race."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[4]"}


@cuda.jit
def reduce_last_warp(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * TPB) + t
    sdata[t] = x[i] + x[i + TPB]
    cuda.syncthreads()
    s = TPB // 2
    while s > 32:
        if t < s:
            sdata[t] += sdata[t + s]
        cuda.syncthreads()
        s //= 2
    if t < 32:
        v = sdata[t]
        s = 32
        while s > 0:
            v += sdata[t + s]
            cuda.syncwarp()
            sdata[t] = v
            cuda.syncwarp()
            s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1024).astype(np.float32)
    partial = np.zeros(4, np.float32)
    reduce_last_warp[4, TPB](x, partial)
