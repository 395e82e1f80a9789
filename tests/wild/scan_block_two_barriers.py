# idiom: an in-place inclusive scan of one block in shared memory (Hillis-Steele), the neighbour read into a register and a barrier before the add, the size a module constant
# label: correct
# diagnosis: none
from numba import cuda, float32

N = 256
THREADMAP_ARGS = {"x": "float32[256]", "out": "float32[256]"}


@cuda.jit
def inclusive_scan(x, out):
    temp = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    temp[t] = x[t]
    cuda.syncthreads()
    offset = 1
    while offset < N:
        v = 0.0
        if t >= offset:
            v = temp[t - offset]
        cuda.syncthreads()
        temp[t] += v
        cuda.syncthreads()
        offset *= 2
    out[t] = temp[t]


def host(x, out):
    inclusive_scan[1, N](x, out)
