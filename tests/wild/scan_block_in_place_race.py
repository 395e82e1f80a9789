# idiom: an in-place inclusive scan of one block in shared memory (Hillis-Steele) written as one +=, one barrier per step
# label: bug, line 19: temp[t] += temp[t - offset] reads an element that thread t - offset writes in the same step, with no barrier between the read and the write, so a thread can read it before or after it was added to (the run: thread 2 reads temp[1] after thread 1 added to it)
# diagnosis: missing-barrier 19
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
        if t >= offset:
            temp[t] += temp[t - offset]
        cuda.syncthreads()
        offset *= 2
    out[t] = temp[t]


def host(x, out):
    inclusive_scan[1, N](x, out)
