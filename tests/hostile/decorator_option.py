# hostile: a decorator option computed by a call
# expect: the option debug= must be a literal
from numba import cuda


@cuda.jit(debug=open("MARKER", "w") is None)
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
