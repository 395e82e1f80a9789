# idiom: a block per row, its threads striding over the columns with range(t, n, cuda.blockDim.x), then a shared-memory tree with a halving while loop
# label: correct
# diagnosis: none
from numba import cuda, float32

TPB = 64
THREADMAP_ARGS = {"A": "float32[32, 200]", "out": "float32[32]"}


@cuda.jit
def row_sums(A, out):
    partial = cuda.shared.array(TPB, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    acc = 0.0
    for c in range(t, A.shape[1], cuda.blockDim.x):
        acc += A[row, c]
    partial[t] = acc
    cuda.syncthreads()
    half = TPB // 2
    while half > 0:
        if t < half:
            partial[t] += partial[t + half]
        cuda.syncthreads()
        half //= 2
    if t == 0:
        out[row] = partial[0]


def host(A, out):
    row_sums[32, TPB](A, out)
