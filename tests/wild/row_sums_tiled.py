# idiom: a row sum through a shared tile, one block a row, the loop over tiles bounded by the row's length, ceil-divided
# label: correct
# diagnosis: none
from numba import cuda, float32

TPB = 16
THREADMAP_ARGS = {"A": "float32[4, 300]", "out": "float32[4]"}


@cuda.jit
def row_sums(A, out):
    tile = cuda.shared.array(TPB, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    acc = 0.0
    for m in range((A.shape[1] + TPB - 1) // TPB):
        col = m * TPB + t
        if col < A.shape[1]:
            tile[t] = A[row, col]
        else:
            tile[t] = 0.0
        cuda.syncthreads()
        if t == 0:
            for q in range(TPB):
                acc += tile[q]
        cuda.syncthreads()
    if t == 0:
        out[row] = acc


def host(A, out):
    row_sums[4, TPB](A, out)
