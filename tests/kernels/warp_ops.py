"""Warp-level operations (issue 22): shuffles, votes, syncwarp and the lane
queries, run by the CPU lockstep emulation (tests/test_warp_ops.py)."""
from numba import cuda, float32

FULL = 0xFFFFFFFF


@cuda.jit
def matmul_warp_dot(A, B, C):
    # One warp per element of C: the lanes split the K loop, then a tree of
    # shfl_down_sync adds their partial sums into lane 0.
    lane = cuda.threadIdx.x % 32
    warp = cuda.grid(1) // 32
    warps = cuda.gridsize(1) // 32
    for e in range(warp, C.shape[0] * C.shape[1], warps):
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        offset = 16
        while offset > 0:
            acc += cuda.shfl_down_sync(FULL, acc, offset)
            offset //= 2
        if lane == 0:
            C[row, col] = acc


@cuda.jit
def matmul_butterfly(A, B, C):
    # The same with shfl_xor_sync: every lane ends with the whole sum, and the
    # lane the element's column names stores it.
    lane = cuda.laneid
    warp = cuda.grid(1) // 32
    warps = cuda.gridsize(1) // 32
    for e in range(warp, C.shape[0] * C.shape[1], warps):
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        mask = 16
        while mask > 0:
            acc = acc + cuda.shfl_xor_sync(FULL, acc, mask)
            mask //= 2
        cuda.syncwarp()
        if lane == col % 32:
            C[row, col] = acc


@cuda.jit
def probe(A, B, C):
    # One warp; lanes 20-31 exit first (a full mask may still name them).
    # Each lane writes what each warp operation gave it into its row of C.
    lane = cuda.threadIdx.x
    if lane >= 20:
        return
    zero = A[0, 0] * 0.0 + B[0, 0] * 0.0  # (ThreadMap's kernels read A and B)
    C[lane, 0] = cuda.activemask() + zero
    C[lane, 1] = cuda.ballot_sync(FULL, lane % 3 == 0)
    C[lane, 2] = cuda.any_sync(FULL, lane == 7)
    C[lane, 3] = cuda.all_sync(FULL, lane < 19)
    C[lane, 4] = cuda.shfl_sync(FULL, lane * 10, 5)
    C[lane, 5] = cuda.shfl_up_sync(FULL, lane, 2)
    C[lane, 6] = cuda.shfl_xor_sync(FULL, lane, 1)
    C[lane, 7] = cuda.lanemask_lt()
    C[lane, 8] = cuda.eq_sync(FULL, lane < 100)
    C[lane, 9] = cuda.eq_sync(FULL, lane % 2 == 0) + 2 * cuda.shfl_down_sync(FULL, lane, 3)
    C[lane, 10] = cuda.match_any_sync(FULL, lane % 3)


@cuda.jit
def matmul_half_mask(A, B, C):
    # A mask of lanes 0-15 while all 32 lanes run the loop.
    lane = cuda.threadIdx.x % 32
    warp = cuda.grid(1) // 32
    warps = cuda.gridsize(1) // 32
    for e in range(warp, C.shape[0] * C.shape[1], warps):
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        offset = 16
        while offset > 0:
            acc += cuda.shfl_down_sync(0xFFFF, acc, offset)
            offset //= 2
        if lane == 0:
            C[row, col] = acc


@cuda.jit
def matmul_shuffle_in_branch(A, B, C):
    # Only the lanes that need a partner's sum call the shuffle, with a full
    # mask: the others never arrive, and the partners read are not there.
    lane = cuda.threadIdx.x % 32
    warp = cuda.grid(1) // 32
    warps = cuda.gridsize(1) // 32
    for e in range(warp, C.shape[0] * C.shape[1], warps):
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = 0.0
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        offset = 16
        while offset > 0:
            if lane < offset:
                acc += cuda.shfl_down_sync(FULL, acc, offset)
            offset //= 2
        if lane == 0:
            C[row, col] = acc



# Warp-synchronous shared memory: each warp reduces its partial sums in
# shared memory, with and without cuda.syncwarp() between the steps.
@cuda.jit
def matmul_warp_tree_synced(A, B, C):
    # One element of C per warp; 64 threads per block: warps 0 and 1.
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    lane = t % 32
    e = cuda.blockIdx.x * 2 + t // 32
    if e < C.shape[0] * C.shape[1]:
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = float32(0.0)
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        buf[t] = acc
        cuda.syncwarp()
        offset = 16
        while offset > 0:
            if lane < offset:
                v = buf[t + offset]
            cuda.syncwarp()
            if lane < offset:
                buf[t] += v
            cuda.syncwarp()
            offset //= 2
        if lane == 0:
            C[row, col] = buf[t]


@cuda.jit
def matmul_warp_tree_unsynced(A, B, C):
    # The same, relying on the warp running in lockstep (the pre-Volta idiom).
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    lane = t % 32
    e = cuda.blockIdx.x * 2 + t // 32
    if e < C.shape[0] * C.shape[1]:
        row = e // C.shape[1]
        col = e % C.shape[1]
        acc = float32(0.0)
        for k in range(lane, A.shape[1], 32):
            acc += A[row, k] * B[k, col]
        buf[t] = acc
        offset = 16
        while offset > 0:
            if lane < offset:
                buf[t] += buf[t + offset]
            offset //= 2
        if lane == 0:
            C[row, col] = buf[t]
