# idiom: cuda.grid(2) kept whole, an early return guard written with and where or was needed
# label: bug, line 11: the return needs both coordinates out of range, so the 7 x 27 threads below C (pos[0] 41..47) and the 41 x 5 to its right (pos[1] 27..31) go on: 394 writes outside C
# diagnosis: and-guard 11
# shape: 41x10x27
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    pos = cuda.grid(2)
    if pos[0] >= C.shape[0] and pos[1] >= C.shape[1]:
        return
    s = 0.0
    for k in range(A.shape[1]):
        s += A[pos[0], k] * B[k, pos[1]]
    C[pos[0], pos[1]] = s


def host(A, B, C):
    matmul[(3, 2), (16, 16)](A, B, C)
