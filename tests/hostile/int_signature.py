# wrong accept: numba compiles int32 arrays; ThreadMap runs float matrices (it used to PASS)
# expect: its signature types 'A' as int32 arrays; ThreadMap's matrices are float32 or float64
from numba import cuda


@cuda.jit("void(int32[:, :], int32[:, :], int32[:, :])")
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
