"""Vector add: one thread per element, guarded for the last block."""
from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]", "y": "float32[4096]", "out": "float32[4096]"}


@cuda.jit
def vector_add(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


if __name__ == "__main__":
    import numpy as np

    x = np.random.rand(4096).astype(np.float32)
    y = np.random.rand(4096).astype(np.float32)
    out = np.zeros_like(x)
    vector_add[16, 256](x, y, out)
