"""The textbook kernel with its sum kept in C itself: each thread zeroes its
element, then adds into it once per k.  Correct (one thread per element),
though each element is stored K + 1 times, all by the same thread."""
from numba import cuda


@cuda.jit
def accumulate_in_c(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = 0.0
        for p in range(A.shape[1]):
            C[i, j] += A[i, p] * B[p, j]
