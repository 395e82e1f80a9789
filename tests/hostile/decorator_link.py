# hostile: link= adds compiled code ThreadMap never sees
# expect: link= adds compiled code that ThreadMap cannot see or check
from numba import cuda


@cuda.jit(link=["MARKER.cu"])
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
