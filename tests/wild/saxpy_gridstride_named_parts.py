# idiom: a grid-stride loop over range(start, stop, step) with every part a name, a scalar argument
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"a": "float32(2.5)", "x": "float32[3000]", "y": "float32[3000]",
                  "out": "float32[3000]"}


@cuda.jit
def saxpy(a, x, y, out):
    start = cuda.grid(1)
    stop = out.shape[0]
    step = cuda.gridsize(1)
    for i in range(start, stop, step):
        out[i] = a * x[i] + y[i]


def host(a, x, y, out):
    saxpy[4, 128](a, x, y, out)
