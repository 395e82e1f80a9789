# idiom: a grid-stride range kept in a variable (indices = range(cuda.grid(1), x.size, cuda.gridsize(1))), then for i in indices
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[2500]", "out": "float32[2500]"}


@cuda.jit
def relu(x, out):
    indices = range(cuda.grid(1), x.size, cuda.gridsize(1))
    for i in indices:
        out[i] = max(x[i], 0.0)


def host(x, out):
    relu[3, 128](x, out)
