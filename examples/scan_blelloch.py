"""An exclusive scan after Blelloch (GPU Gems 3, chapter 39): an up-sweep
builds partial sums in a tree, a down-sweep hands them back down.  2 (n - 1)
additions, the work of a loop, by n / 2 threads.  Its tree steps put a
warp's lanes 2, 4, 8 ... words apart in shared memory: bank conflicts up to
8-way, which the chapter's padding removes."""
from numba import cuda, float32

N = 256
THREADS = 128
THREADMAP_ARGS = {"x": "float32[256]", "out": "float32[256]"}


@cuda.jit
def scan_blelloch(x, out):
    temp = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    temp[2 * t] = x[2 * t]
    temp[2 * t + 1] = x[2 * t + 1]
    offset = 1
    d = N // 2
    while d > 0:
        cuda.syncthreads()
        if t < d:
            ai = offset * (2 * t + 1) - 1
            bi = offset * (2 * t + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d //= 2
    if t == 0:
        temp[N - 1] = 0
    d = 1
    while d < N:
        offset //= 2
        cuda.syncthreads()
        if t < d:
            ai = offset * (2 * t + 1) - 1
            bi = offset * (2 * t + 2) - 1
            v = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += v
        d *= 2
    cuda.syncthreads()
    out[2 * t] = temp[2 * t]
    out[2 * t + 1] = temp[2 * t + 1]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    scan_blelloch[1, THREADS](x, out)
