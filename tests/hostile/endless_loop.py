# hang: a loop that never ends (numba said "liveness info missing for vars")
# expect: the loop 'while True:' never ends (no break or return inside it)
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    while True:
        if i < C.shape[0] and j < C.shape[1]:
            C[i, j] = A[i, 0] * B[0, j]
