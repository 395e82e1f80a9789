# idiom: module constants made from others (n = bpg * tpb) used as the size in guards and a tile loop of range(bpg)
# label: bug, line 15: the guard tests against n = 1,600, not C's shape, so threads past C's edge read and write out of bounds
# diagnosis: fixed-size 15
# shape: 100x37x90
from numba import cuda

tpb = 16
bpg = 100
n = bpg * tpb


@cuda.jit
def matmul(A, B, C):
    x, y = cuda.grid(2)
    if x < n and y < n:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[x, k] * B[k, y]
        C[x, y] = s


def host(A, B, C):
    matmul[(7, 6), (16, 16)](A, B, C)
