"""A barrier the emulation cannot place: its value decides a branch directly."""
from numba import cuda


@cuda.jit
def vote(A, B, C):
    i, j = cuda.grid(2)
    inside = i < C.shape[0] and j < C.shape[1]
    if cuda.syncthreads_or(inside):
        if inside:
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s
