# idiom: a naive transpose guarded by the output's shape where the input's was needed
# label: bug, line 12: the guard tests out's shape (24 x 40) where a's (40 x 24) was needed: threads with i < 24 and j = 24..31 read a[i, j] past a's 24 columns and write out[j, i] past out's 24 rows (192 each), and the threads with i = 24..39 store nothing, so out's columns 24..39 (384 elements) are never written
# diagnosis: guard-of-other-array 12
from numba import cuda

THREADMAP_ARGS = {"a": "float32[40, 24]", "out": "float32[24, 40]"}


@cuda.jit
def transpose(a, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[j, i] = a[i, j]


def host(a, out):
    transpose[(3, 2), (16, 16)](a, out)
