# unclear message: the simulator has no syncwarp ("'FakeCUDAModule' object has no attribute")
# expect: uses cuda.syncwarp (line 10), which neither the CPU emulation nor numba's CUDA simulator has
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        cuda.syncwarp()
        C[i, j] = A[i, 0] * B[0, j]
