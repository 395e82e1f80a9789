# idiom: a 1-D stencil through shared memory with a halo, the barrier between the loads and the sums left out
# label: bug, lines 19 and 33: no cuda.syncthreads() between the loads (line 19) and the sums (line 33): thread 31 (t = 32) reads s[33], which thread 32, in the next warp, need not have loaded yet (the run's first race: thread 0 reads s[2], stored by thread 1)
# diagnosis: missing-barrier 19 33
from numba import cuda, float32

TPB = 128
RADIUS = 1
SHARED = TPB + 2 * RADIUS
THREADMAP_ARGS = {"a": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def sum3(a, out):
    s = cuda.shared.array(SHARED, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x + RADIUS
    n = a.shape[0]
    if i < n:
        s[t] = a[i]
    else:
        s[t] = 0.0
    if cuda.threadIdx.x == 0:
        if i > 0:
            s[0] = a[i - 1]
        else:
            s[0] = 0.0
    if cuda.threadIdx.x == TPB - 1:
        if i + 1 < n:
            s[TPB + RADIUS] = a[i + 1]
        else:
            s[TPB + RADIUS] = 0.0
    if i < n:
        out[i] = s[t - 1] + s[t] + s[t + 1]


def host(a, out):
    sum3[8, 128](a, out)
