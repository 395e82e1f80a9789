# hostile: an import from numpy that binds os (the import line was once copied as it is)
# expect: 'os.system' (numpy.testing._private.utils.os.system, through the file's imports)
from numba import cuda
from numpy.testing._private.utils import os


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i == 1000000:
        os.system("touch MARKER")
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
