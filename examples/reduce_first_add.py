"""Reduction 4 after Harris: the first add during the load.  Reduction 3
leaves half its threads idle from the first step; here each thread adds two
elements as it loads them, so half the blocks do the same work."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[4]"}


@cuda.jit
def reduce_first_add(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * TPB) + t
    sdata[t] = x[i] + x[i + TPB]
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            sdata[t] += sdata[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = sdata[0]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1024).astype(np.float32)
    partial = np.zeros(4, np.float32)
    reduce_first_add[4, TPB](x, partial)
