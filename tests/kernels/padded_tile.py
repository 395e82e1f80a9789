"""The transposed tile of transposed_tile.py with its rows padded by one
column: lanes a row apart fall in different banks (a near miss of issue 21's
transposed-tile rule: no conflicts, no diagnosis)."""
from numba import cuda, float32

TPB = 16
PADDED = TPB + 1


@cuda.jit
def padded(A, B, C):
    sA = cuda.shared.array((TPB, PADDED), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = 0.0
    for i in range(A.shape[1] // TPB):
        # The tile of A goes in transposed: sA[tx, ty] holds A[y, i * TPB + tx].
        sA[tx, ty] = A[y, i * TPB + tx]
        sB[ty, tx] = B[i * TPB + ty, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[j, ty] * sB[j, tx]
        cuda.syncthreads()
    C[y, x] = tmp
