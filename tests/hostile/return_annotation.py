# hostile: a return annotation that opens a file
# expect: the annotation "open('MARKER', 'w')" is more than a type's name
from numba import cuda


@cuda.jit
def matmul(A, B, C) -> open("MARKER", "w"):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
