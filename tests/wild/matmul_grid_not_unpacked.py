# idiom: cuda.grid(2) kept whole (pos = cuda.grid(2), then pos[0], pos[1]), an early return guard with or
# label: correct
# diagnosis: none
# shape: 41x10x27
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    pos = cuda.grid(2)
    if pos[0] >= C.shape[0] or pos[1] >= C.shape[1]:
        return
    s = 0.0
    for k in range(A.shape[1]):
        s += A[pos[0], k] * B[k, pos[1]]
    C[pos[0], pos[1]] = s


def host(A, B, C):
    matmul[(3, 2), (16, 16)](A, B, C)
