"""A near miss of the ``and`` guard (issue 21): the early return still says
``and``, but a correct guard stands before the store, so no thread stores
outside C; the kernel fails for another reason (B read transposed)."""
from numba import cuda


@cuda.jit
def guarded_twice(A, B, C):
    x, y = cuda.grid(2)
    if x >= C.shape[0] and y >= C.shape[1]:
        return
    if x < C.shape[0] and y < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            if k < B.shape[1] and y < B.shape[0]:
                acc += A[x, k] * B[y, k]
        C[x, y] = acc
