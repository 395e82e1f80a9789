"""Reduction 2 after Harris: interleaved addressing with a strided index,
`index = 2 * s * t`.  The working threads are the first ones, so whole warps
go in or stay out (reduction 1's divergence is gone), but a warp's lanes now
touch shared memory 2 s words apart: bank conflicts instead."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[8]"}


@cuda.jit
def reduce_strided(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    sdata[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    s = 1
    while s < TPB:
        index = 2 * s * t
        if index < TPB:
            sdata[index] += sdata[index + s]
        cuda.syncthreads()
        s *= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1024).astype(np.float32)
    partial = np.zeros(8, np.float32)
    reduce_strided[8, TPB](x, partial)
