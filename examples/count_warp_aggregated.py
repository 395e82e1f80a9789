"""Counting with one atomic per warp, not one per element: each warp votes
on which of its elements are positive (cuda.ballot_sync), counts the votes
(cuda.popc), and the lowest lane that voted (cuda.ffs - 1) adds the warp's
count to the total.  4,096 elements make 128 atomic updates of one int32,
where a thread per positive element would make about 2,048."""
from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]", "count": "int32[1]"}
FULL = 0xFFFFFFFF


@cuda.jit
def count_warp_aggregated(x, count):
    i = cuda.grid(1)
    positive = False
    if i < x.size:
        positive = x[i] > 0.0
    votes = cuda.ballot_sync(FULL, positive)  # every lane of the warp takes part
    leader = cuda.ffs(votes) - 1              # -1 where no lane voted
    if cuda.laneid == leader:
        cuda.atomic.add(count, 0, cuda.popc(votes))


if __name__ == "__main__":
    import numpy as np

    x = np.random.uniform(-1, 1, 4096).astype(np.float32)
    count = np.zeros(1, np.int32)
    count_warp_aggregated[16, 256](x, count)
