# idiom: split-K over a 2-D launch (x the flat element, y the slice of K), the first slice stored, the others added with cuda.atomic.add
# label: bug, lines 22 and 24: slice 0 stores C[row, col] (line 22) while slice 1 adds to it atomically (line 24): on a GPU an add that lands before the store is lost
# diagnosis: store-and-atomic 22 24
# shape: 20x32x18
from numba import cuda

KCHUNK = 16


@cuda.jit
def matmul(A, B, C):
    e, part = cuda.grid(2)
    if e < C.shape[0] * C.shape[1]:
        row = e // C.shape[1]
        col = e % C.shape[1]
        lo = part * KCHUNK
        hi = min(lo + KCHUNK, A.shape[1])
        acc = 0.0
        for k in range(lo, hi):
            acc += A[row, k] * B[k, col]
        if part == 0:
            C[row, col] = acc
        else:
            cuda.atomic.add(C, (row, col), acc)


def host(A, B, C):
    matmul[(3, 2), (128, 1)](A, B, C)
