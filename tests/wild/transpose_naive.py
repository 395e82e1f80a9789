# idiom: a naive transpose, one thread per element of a non-square input, cuda.grid(2) unpacked
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"a": "float32[40, 24]", "out": "float32[24, 40]"}


@cuda.jit
def transpose(a, out):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[j, i] = a[i, j]


def host(a, out):
    transpose[(3, 2), (16, 16)](a, out)
