from numba import cuda


@cuda.jit
def guarded_rows(A, B, C):
    # The guard people write first: threads past the last row return.
    t = cuda.grid(1)
    if t >= C.shape[0]:
        return
    C[t, 0] = A[t, 0] * B[0, 0]
