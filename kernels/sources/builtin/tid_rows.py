"""The asker's bug, as the forum answer describes it.

The loop range comes from A instead of C (right only when C is square with
A.shape[0] rows: the X @ X.T case), B is indexed with the thread index
(``B[tid, col]``: right only if B has exactly as many rows as the block has
threads), and every thread computes and stores every element of C: collisions
whose winner is whichever thread stores last.  On all-ones inputs every thread
computes the same value, K, so the result can look right; on random inputs it
is wrong.  Every thread also repeats all the work: threads x n x n x K
multiply-adds instead of n x n x K.
"""
from numba import cuda


@cuda.jit
def matmul_tid_rows(A, B, C):
    tid = cuda.threadIdx.x
    n = A.shape[0]
    for row in range(n):
        for col in range(n):
            my_sum = 0.0
            for idx in range(A.shape[1]):
                my_sum += A[row, idx] * B[tid, col]
            C[row, col] = my_sum
