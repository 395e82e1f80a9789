# idiom: a described 1-D kernel guarded by a module constant where the array's own length was needed
# label: bug, line 13: N = 1024 where x and out have 1,000 elements: threads 1,000..1,023 pass the guard, reading x and writing out past their ends (24 each)
# diagnosis: fixed-size 13
from numba import cuda

N = 1024
THREADMAP_ARGS = {"x": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < N:
        out[i] = 2.0 * x[i]


def host(x, out):
    scale[4, 256](x, out)
