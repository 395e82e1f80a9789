# hostile: an array method that writes a file (the simulator passes numpy arrays)
# expect: 'A.tofile': a kernel reads only dtype, imag, itemsize, ndim, real, shape, size, strides, T of its values
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i == 0 and j == 0:
        A.tofile("MARKER")
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]
