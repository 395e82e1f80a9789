from numba import cuda, float32


@cuda.jit
def guarded_shared(A, B, C):
    # The guard again, in a kernel with shared memory: its block runs as one
    # unit in both tiers, so a warp with no lane at the return sits beside
    # one that has some.
    s = cuda.shared.array(64, float32)
    t = cuda.grid(1)
    if t >= C.shape[0]:
        return
    s[cuda.threadIdx.x] = A[t, 0]
    C[t, 0] = s[cuda.threadIdx.x] * B[0, 0]
