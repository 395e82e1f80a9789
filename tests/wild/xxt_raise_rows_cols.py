# idiom: a raise left at the end of the kernel; a flat loop over rows*cols where rows**2 was needed
# label: bug, line 14: the loop covers rows * cols = 4,000 elements of the 100 x 100 output (rows**2 was needed): rows 40 to 99 are never written
# diagnosis: short-flat-loop 14
from numba import cuda

THREADMAP_ARGS = {"X": "float32[100, 40]", "out": "float32[100, 100]"}


@cuda.jit
def xxt(X, out):
    t = cuda.threadIdx.x
    rows = X.shape[0]
    cols = X.shape[1]
    for e in range(t, rows * cols, cuda.blockDim.x):
        i = e // rows
        j = e % rows
        s = 0.0
        for k in range(cols):
            s += X[i, k] * X[j, k]
        out[i, j] = s
    if t > 4096:
        raise NotImplementedError("a block this large is not supported")


def host(X, out):
    xxt[1, 1024](X, out)
