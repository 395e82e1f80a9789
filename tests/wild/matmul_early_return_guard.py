# idiom: an early return guard with or, a 2-D grid unpacked as a tuple, no barrier after it
# label: correct
# diagnosis: none
# shape: 50x20x70
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    x, y = cuda.grid(2)
    if x >= C.shape[0] or y >= C.shape[1]:
        return
    tmp = 0.0
    for k in range(A.shape[1]):
        tmp += A[x, k] * B[k, y]
    C[x, y] = tmp


def host(A, B, C):
    matmul[(4, 5), (16, 16)](A, B, C)
