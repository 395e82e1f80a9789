"""A histogram with atomics: 16 int32 bins of [-1, 1), each element adds 1 to
its bin with cuda.atomic.add, so threads that meet in a bin never lose a count."""
from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]", "bins": "int32[16]"}


@cuda.jit
def histogram(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        b = int((x[i] + 1.0) * 8.0)
        if b > 15:
            b = 15
        cuda.atomic.add(bins, b, 1)


if __name__ == "__main__":
    import numpy as np

    x = np.random.uniform(-1, 1, 4096).astype(np.float32)
    bins = np.zeros(16, np.int32)
    histogram[16, 256](x, bins)
