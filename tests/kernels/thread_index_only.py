"""The seed's idiom (issue 21): work indexed by ``threadIdx`` alone, with a
literal stride of 1024, fine on one block of 1024 threads; on more blocks,
each repeats block 0's elements."""
from numba import cuda


@cuda.jit
def matmul_1024(A, B, C):
    tx = cuda.threadIdx.x
    to_calculate = range(tx, C.size, 1024)
    for i in to_calculate:
        row = i // C.shape[1]
        col = i % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
