"""numba's documentation-style tiled matmul with its early return written with
``and`` where it needs ``or`` (issue 21): a thread with one coordinate in
range goes on and stores outside C."""
from numba import cuda, float32

TPB = 8


@cuda.jit
def fast_matmul(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tiles = (A.shape[1] + TPB - 1) // TPB
    tmp = float32(0.)
    for i in range(tiles):
        sA[tx, ty] = 0
        sB[tx, ty] = 0
        if x < A.shape[0] and (ty + i * TPB) < A.shape[1]:
            sA[tx, ty] = A[x, ty + i * TPB]
        if y < B.shape[1] and (tx + i * TPB) < B.shape[0]:
            sB[tx, ty] = B[tx + i * TPB, y]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    if x >= C.shape[0] and y >= C.shape[1]:
        return
    C[x, y] = tmp
