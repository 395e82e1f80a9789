# idiom: a 2-D element-wise kernel guarded by the output's shape, one input a row vector broadcast down the rows
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[33, 50]", "bias": "float32[50]", "out": "float32[33, 50]"}


@cuda.jit
def add_bias(x, bias, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] + bias[j]


def host(x, bias, out):
    add_bias[(3, 4), (16, 16)](x, bias, out)
