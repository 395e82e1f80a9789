# unclear message: the simulator has no warp match ("'FakeCUDAModule' object has no attribute");
# syncwarp, shuffles, votes and match_any_sync now run in the CPU emulation, match_all_sync does not
# expect: uses cuda.match_all_sync (line 11): neither the CPU emulation nor numba's CUDA simulator has it
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        same = cuda.match_all_sync(0xFFFFFFFF, j)[0]
        C[i, j] = A[i, 0] * B[0, j] + same * 0
