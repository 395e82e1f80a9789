"""A near miss of "threadIdx without blockIdx" (issue 21): each block takes a
chunk of blockDim.x elements, placed by blockIdx, so blocks never repeat each
other's elements.  It fails elsewhere: it reads B's column from C's row."""
from numba import cuda


@cuda.jit
def block_chunks(A, B, C):
    start = cuda.blockIdx.x * cuda.blockDim.x
    i = start + cuda.threadIdx.x
    if i < C.size:
        row = i // C.shape[1]
        col = i % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, row % B.shape[1]]
        C[row, col] = acc
