"""Reduction 3 after Harris: sequential addressing, `t < s`.  The active
threads are the first s: whole warps take the branch or none of their lanes
does, until s is under 32."""
from numba import cuda, float32

TPB = 128
THREADMAP_ARGS = {"x": "float32[1024]", "partial": "float32[8]"}


@cuda.jit
def reduce_sequential(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    sdata[t] = x[cuda.grid(1)]
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
    partial = np.zeros(8, np.float32)
    reduce_sequential[8, TPB](x, partial)
