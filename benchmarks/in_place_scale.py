"""An in-place kernel for bench_engine.py's cost of the race check in global
memory: x is read and stored, so each access also keeps its shadow and access
ranges (issue 22, point 4)."""
from numba import cuda

THREADMAP_ARGS = {"x": "float32[1048576]"}


@cuda.jit
def scale_in_place(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * 2.0
