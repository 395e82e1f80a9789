"""The shared-memory tiled kernel.

Each block computes a TPB x TPB tile of C, staging TPB x TPB tiles of A and B
through shared memory.  Tiles that overhang A or B are padded with zeros, so
shapes that are not multiples of TPB are handled.  It must be launched with
blocks of exactly TPB x TPB threads.
"""
from numba import cuda

TPB = 16


@cuda.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=A.dtype)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=B.dtype)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = 0.0
    for i in range((A.shape[1] + TPB - 1) // TPB):
        sA[ty, tx] = 0.0
        sB[ty, tx] = 0.0
        if row < A.shape[0] and tx + i * TPB < A.shape[1]:
            sA[ty, tx] = A[row, tx + i * TPB]
        if col < B.shape[1] and ty + i * TPB < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, col]
        # Wait until the whole tile is loaded before anyone reads it.
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        # Wait until everyone is done with the tile before it is overwritten.
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = tmp
