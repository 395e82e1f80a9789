"""Sizes fixed in the file (issue 21): ``n = bpg * tpb`` (1,600) bounds the
sum, right only where K is 1,600; and a near miss whose constant is this
run's K (it fails for another reason: B's column taken from C's row)."""
from numba import cuda

bpg = 16
tpb = 100
n = bpg * tpb
K_OF_THE_TEST = 37


@cuda.jit
def fixed_n(A, B, C):
    x, y = cuda.grid(2)
    if x < C.shape[0] and y < C.shape[1]:
        tmp = 0.0
        for k in range(n):
            tmp += A[x, k] * B[k, y]
        C[x, y] = tmp


@cuda.jit
def fixed_k_wrong_column(A, B, C):
    x, y = cuda.grid(2)
    if x < C.shape[0] and y < C.shape[1]:
        tmp = 0.0
        for k in range(K_OF_THE_TEST):
            tmp += A[x, k] * B[k, x % B.shape[1]]
        C[x, y] = tmp
