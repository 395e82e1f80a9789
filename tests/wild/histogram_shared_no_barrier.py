# idiom: a histogram privatised per block in shared memory, the barrier between zeroing it and filling it left out
# label: bug, lines 15 and 20: no cuda.syncthreads() between zeroing local (line 15, threads 0..15) and the atomic adds into it (line 20): a thread of another warp can add to a bin before it is zeroed, and the zero wipes its count; each block's 16 bins are added to by its other threads, so all 4 x 16 = 64 bins race
# diagnosis: missing-barrier 15 20
from numba import cuda, int32

NBINS = 16
THREADMAP_ARGS = {"x": "float32[2000]", "hist": "int32[16]"}


@cuda.jit
def histogram_shared(x, hist):
    local = cuda.shared.array(NBINS, int32)
    t = cuda.threadIdx.x
    if t < NBINS:
        local[t] = 0
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        b = int((x[i] + 1.0) * 8.0)
        if b > NBINS - 1:
            b = NBINS - 1
        cuda.atomic.add(local, b, 1)
    cuda.syncthreads()
    if t < NBINS:
        cuda.atomic.add(hist, t, local[t])


def host(x, hist):
    histogram_shared[4, 128](x, hist)
