"""Reduction 6 after Harris: completely unrolled.  The block size is a
constant (Harris's template parameter), so every step is written out and
the loop's counter and test are gone; each step's test is on whole warps."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[4]"}


@cuda.jit
def reduce_unrolled(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * TPB) + t
    sdata[t] = x[i] + x[i + TPB]
    cuda.syncthreads()
    if t < 64:
        sdata[t] += sdata[t + 64]
    cuda.syncthreads()
    if t < 32:
        v = sdata[t] + sdata[t + 32]
        cuda.syncwarp()
        sdata[t] = v
        cuda.syncwarp()
        v += sdata[t + 16]
        cuda.syncwarp()
        sdata[t] = v
        cuda.syncwarp()
        v += sdata[t + 8]
        cuda.syncwarp()
        sdata[t] = v
        cuda.syncwarp()
        v += sdata[t + 4]
        cuda.syncwarp()
        sdata[t] = v
        cuda.syncwarp()
        v += sdata[t + 2]
        cuda.syncwarp()
        sdata[t] = v
        cuda.syncwarp()
        v += sdata[t + 1]
        if t == 0:
            partial[cuda.blockIdx.x] = v


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1024).astype(np.float32)
    partial = np.zeros(4, np.float32)
    reduce_unrolled[4, TPB](x, partial)
