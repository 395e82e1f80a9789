# hostile, accepted: imports bound to ThreadMap's own names or to a dunder are never copied into
# the generated code (they rebound the cast the recording helpers use, and builtins)
# expect: runs
import numpy as __builtins__
from numba import cuda
from numba.cuda import int8 as _tm_i64

_TM_OPTS = 5


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc
