"""SAXPY with a grid-stride loop: 256 threads cover 1,000 elements, each taking
every 256th, so the launch does not have to match the size."""
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]",
                  "n": 1000, "alpha": 2.5}


@cuda.jit
def saxpy(x, y, out, n, alpha):
    start = cuda.grid(1)
    for i in range(start, n, cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(1000).astype(np.float32)
    y = np.random.rand(1000).astype(np.float32)
    out = np.zeros_like(x)
    saxpy[4, 64](x, y, out, 1000, 2.5)
