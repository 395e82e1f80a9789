# idiom: a histogram privatised per block in shared memory (module constant NBINS as its size), zeroed, filled with atomics, then added to the global one
# label: correct
# diagnosis: none
from numba import cuda, int32

NBINS = 16
THREADMAP_ARGS = {"x": "float32[2000]", "hist": "int32[16]"}


@cuda.jit
def histogram_shared(x, hist):
    local = cuda.shared.array(NBINS, int32)
    t = cuda.threadIdx.x
    if t < NBINS:
        local[t] = 0
    cuda.syncthreads()
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
