"""Reduction 1 after Harris ("Optimizing Parallel Reduction in CUDA"):
interleaved addressing, `t % (2 * s) == 0`.  Each block sums its 128 elements
in shared memory; the active threads are spread over every warp, so nearly
every warp splits at the branch."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[8]"}


@cuda.jit
def reduce_interleaved(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    sdata[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    s = 1
    while s < TPB:
        if t % (2 * s) == 0:
            sdata[t] += sdata[t + s]
        cuda.syncthreads()
        s *= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1024).astype(np.float32)
    partial = np.zeros(8, np.float32)
    reduce_interleaved[8, TPB](x, partial)
