# hostile: a local array's dtype reaching os.system through numpy.testing
# expect: numpy.testing._private.utils.os.system
import numpy as np
from numba import cuda, float32


@cuda.jit
def matmul(A, B, C):
    scratch = cuda.local.array(4, np.testing._private.utils.os.system("touch MARKER") or float32)
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        scratch[0] = A[i, 0]
        C[i, j] = scratch[0] * B[0, j]
