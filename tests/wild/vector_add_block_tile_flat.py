# idiom: a 2-D block over a 1-D array, the flat index within the block made with the block's width and each block placed by its own size
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def vector_add(x, y, out):
    within = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y) + within
    if i < out.shape[0]:
        out[i] = x[i] + y[i]


def host(x, y, out):
    vector_add[8, (16, 8)](x, y, out)
