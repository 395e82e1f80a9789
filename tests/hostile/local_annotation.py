# hostile: an annotated assignment to a parenthesised name (Python evaluates its annotation)
# expect: the annotation "open('MARKER', 'w')" is more than a type's name
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    (x): open("MARKER", "w") = 1.0
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j] * x
