# wrong accept: a signature with fewer types than parameters
# expect: its signature gives 2 argument types for 3 parameters (A, B, C): numba would refuse it
from numba import cuda


@cuda.jit("void(float32[:, :], float32[:, :])")
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
