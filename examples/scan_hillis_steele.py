"""An inclusive scan after Hillis and Steele (GPU Gems 3, chapter 39): in
step d every element adds the one 2^d before it.  log2(n) steps, but n log2 n
additions where a loop makes n - 1.  Two buffers in shared memory: a step
reads one and writes the other, since an element read in a step is also
written in it."""
from numba import cuda, float32

N = 256
BOTH_BUFFERS = 2 * N  # (a shape numba can read when it compiles)
THREADMAP_ARGS = {"x": "float32[256]", "out": "float32[256]"}


@cuda.jit
def scan_hillis_steele(x, out):
    temp = cuda.shared.array(BOTH_BUFFERS, float32)
    t = cuda.threadIdx.x
    pout = 0
    temp[t] = x[t]
    cuda.syncthreads()
    offset = 1
    while offset < N:
        pout = 1 - pout
        pin = 1 - pout
        if t >= offset:
            temp[pout * N + t] = temp[pin * N + t] + temp[pin * N + t - offset]
        else:
            temp[pout * N + t] = temp[pin * N + t]
        cuda.syncthreads()
        offset *= 2
    out[t] = temp[pout * N + t]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    scan_hillis_steele[1, N](x, out)
