"""Tiles of 128 x 128 float32: 64 KiB of shared memory per block each."""
from numba import cuda, float32

TILE = 128


@cuda.jit
def huge(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        sA[0, 0] = A[i, 0]
        C[i, j] = sA[0, 0] * B[0, j]
