# idiom: a row-wise softmax, one thread per row, an early return guard, the row taken as x[r] then indexed, out[r][j] = (chained indexing)
# label: correct
# diagnosis: none
import math

from numba import cuda

THREADMAP_ARGS = {"x": "float32[64, 50]", "out": "float32[64, 50]"}


@cuda.jit
def softmax(x, out):
    r = cuda.grid(1)
    if r >= x.shape[0]:
        return
    row = x[r]
    top = row[0]
    for j in range(1, row.shape[0]):
        if row[j] > top:
            top = row[j]
    total = 0.0
    for j in range(row.shape[0]):
        total += math.exp(row[j] - top)
    for j in range(row.shape[0]):
        out[r][j] = math.exp(row[j] - top) / total


def host(x, out):
    softmax[2, 32](x, out)
