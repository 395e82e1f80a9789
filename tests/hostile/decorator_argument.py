# hostile: the decorator's argument opens a file (decorators run when a def runs)
# expect: the signature "open('MARKER', 'w')" is not a numba signature
from numba import cuda


@cuda.jit(open("MARKER", "w"))
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
