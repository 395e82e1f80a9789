# hostile: a body that the simulator would run as Python (a loop over a tuple sends it there)
# expect: 'np.testing._private.utils.os.system' (numpy.testing._private.utils.os.system
import numpy as np
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    for step in (1, 2):
        if i > 100 * step:
            np.testing._private.utils.os.system("touch MARKER")
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
