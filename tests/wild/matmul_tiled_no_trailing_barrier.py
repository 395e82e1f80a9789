# idiom: a shared-memory tiled matmul with one cuda.syncthreads() per tile, after the loads, none after the products
# label: bug, lines 22 and 30: no barrier after the product loop (line 30), so a thread's next tile overwrites sA (line 22) and sB while other threads of its block may still be reading the last one (thread 0 overwrites sA[0, 0], which thread 1 reads at line 30)
# diagnosis: missing-barrier 22 30
# shape: 37x21x29
from numba import cuda, float32

TPB = 8
TILE = (TPB, TPB)


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array(TILE, float32)
    sB = cuda.shared.array(TILE, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TPB + ty
    col = cuda.blockIdx.x * TPB + tx
    ntiles = (A.shape[1] + TPB - 1) // TPB
    acc = 0.0
    for t in range(ntiles):
        sA[ty, tx] = 0.0
        sB[ty, tx] = 0.0
        if row < A.shape[0] and t * TPB + tx < A.shape[1]:
            sA[ty, tx] = A[row, t * TPB + tx]
        if col < B.shape[1] and t * TPB + ty < B.shape[0]:
            sB[ty, tx] = B[t * TPB + ty, col]
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def host(A, B, C):
    matmul[(4, 5), (8, 8)](A, B, C)
