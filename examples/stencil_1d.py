"""A 3-point stencil with its halo in shared memory: each block stages its 32
elements and one neighbour on each side, then every thread sums three."""
from numba import cuda, float32

TPB = 32
WITH_HALO = TPB + 2  # (a shape numba can read when it compiles)
THREADMAP_ARGS = {"x": "float32[256]", "out": "float32[256]"}


@cuda.jit
def stencil_1d(x, out):
    tile = cuda.shared.array(WITH_HALO, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t + 1] = x[i]
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0.0
    if t == TPB - 1:
        tile[TPB + 1] = x[i + 1] if i + 1 < x.size else 0.0
    cuda.syncthreads()
    out[i] = tile[t] + tile[t + 1] + tile[t + 2]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(256).astype(np.float32)
    out = np.zeros_like(x)
    stencil_1d[8, TPB](x, out)
