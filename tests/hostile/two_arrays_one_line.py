# wrong accept: two shared arrays on one line; the second took the first's shape and dtype, so
# its own (a 74.5 GiB object array) was never checked (found by a red-team review)
# expect: shared array 't': shape (100000, 100000) holds more than 1,048,576 elements
import numpy as np
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    s = cuda.shared.array((1, 1), np.float32); t = cuda.shared.array((100000, 100000), np.float32)
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        t[0, 0] = A[i, 0]
        C[i, j] = t[0, 0] * B[0, j]
