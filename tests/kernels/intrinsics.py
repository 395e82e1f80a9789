"""Kernels that call CUDA's scalar intrinsics (tests/test_intrinsics.py):
each value they store is worked out by hand there."""
import numpy as np
from numba import cuda

FULL = 0xFFFFFFFF


@cuda.jit
def matmul_fma(A, B, C):
    # The tuned matmul's inner step: acc = a * b + acc, rounded once.
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc = cuda.fma(A[i, k], B[k, j], acc)
        C[i, j] = acc


@cuda.jit
def matmul_fma32(A, B, C):
    # fma of float32 values (numba-cuda's float32 case): acc stays float32.
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = np.float32(0.0)
        for k in range(A.shape[1]):
            acc = cuda.fma(A[i, k], B[k, j], acc)
        C[i, j] = acc


@cuda.jit
def bits(A, B, C):
    # One row per thread: what each intrinsic gives for the thread's number.
    t = cuda.grid(1)
    if t >= C.shape[0]:
        return
    zero = A[0, 0] * 0.0 + B[0, 0] * 0.0  # (ThreadMap's kernels read A and B)
    x = np.int32(t * 7 - 20)               # negative for the first threads
    C[t, 0] = cuda.popc(x) + zero
    C[t, 1] = cuda.clz(x)
    C[t, 2] = cuda.ffs(x)
    C[t, 3] = cuda.brev(np.uint32(t)) >> 24
    C[t, 4] = cuda.popc(t)                 # int64: 64 bits
    C[t, 5] = cuda.clz(t)
    C[t, 6] = cuda.selp(t % 2 == 0, np.float32(t), np.float32(-t))
    C[t, 7] = cuda.cbrt(np.float64(t * t * t))


@cuda.jit
def warp_votes(A, B, C):
    # The idioms around a ballot: how many lanes voted (popc), which lane
    # leads (ffs - 1), and the lanes below this one that voted.
    i = cuda.grid(1)
    if i >= C.shape[0]:
        return
    vote = A[i, 0] > 0.0
    ballot = cuda.ballot_sync(FULL, vote)
    voters = cuda.popc(ballot)
    leader = cuda.ffs(ballot) - 1
    below = cuda.popc(ballot & cuda.lanemask_lt())
    C[i, 0] = voters + B[0, 0] * 0.0
    C[i, 1] = leader
    C[i, 2] = below
