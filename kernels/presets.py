"""Launch presets the GUI offers: the seed's, one thread per element, a ragged edge."""
from __future__ import annotations

from .request import RunRequest

SEED_SHAPE = (128, 256, 128)
#: Not a multiple of 16, 32 or 256 in any dimension.
RAGGED_SHAPE = (100, 37, 90)


def one_thread_per_element(request: RunRequest, launch_dims: int) -> RunRequest:
    """Enough threads for one per element of C: 16 x 16 blocks for 2-D kernels
    (x along the columns), 256-thread blocks otherwise."""
    m, n = request.m, request.n
    if launch_dims == 2:
        return request.with_(grid=(-(-n // 16), -(-m // 16)), block=(16, 16))
    return request.with_(grid=(-(-(m * n) // 256),), block=(256,))


def seed_launch(request: RunRequest, launch_dims: int = 1) -> RunRequest:
    """The forum question's launch: one block of 1024 threads on 128 x 256 x 128."""
    m, k, n = SEED_SHAPE
    return request.with_(m=m, k=k, n=n, grid=(1,), block=(1024,))


def ragged_edge(request: RunRequest, launch_dims: int) -> RunRequest:
    """A shape that is not a multiple of the block, launched one thread per element:
    the last blocks overhang C and the bounds check must hold."""
    m, k, n = RAGGED_SHAPE
    return one_thread_per_element(request.with_(m=m, k=k, n=n), launch_dims)


PRESETS = {
    "seed": ("Seed launch: 1 x 1024 on 128x256x128", seed_launch),
    "per-element": ("One thread per element", one_thread_per_element),
    "ragged": ("Ragged edge: 100x37x90, one thread per element", ragged_edge),
}
