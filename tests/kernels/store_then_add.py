"""Two threads per element of C, grid-stride: the even one stores the sum over
the first half of k, the odd one adds the second half atomically.  Stores and
atomic updates fall on the same elements, so the writer maps (lowest and
highest writer, store number) hold both kinds of write."""
from numba import cuda


@cuda.jit
def store_then_add(A, B, C):
    t = cuda.grid(1)
    pairs = cuda.gridsize(1) // 2
    n = C.shape[1]
    k = A.shape[1]
    half = k // 2
    e = t // 2
    while e < C.shape[0] * n:
        i = e // n
        j = e % n
        acc = 0.0
        if t % 2 == 0:
            for p in range(half):
                acc += A[i, p] * B[p, j]
            C[i, j] = acc
        else:
            for p in range(half, k):
                acc += A[i, p] * B[p, j]
            cuda.atomic.add(C, (i, j), acc)
        e += pairs
