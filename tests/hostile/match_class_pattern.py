# hostile: a match statement's class pattern names an attribute as a string (tofile), past
# every check of attribute chains; in the simulator it wrote a file (found by a red-team review)
# expect: 'match' statements are not supported in a kernel
import numpy as np
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
    w = 0
    s = np.float32(1)
    match s:
        case np.float32(tofile=w):
            w("MARKER", sep=",", format="ran%.0s")
