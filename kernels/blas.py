"""numpy's BLAS pool, through threadpoolctl: how many threads it has, and
work run with fewer (the reference, its bound, the timing of numpy's matmul)."""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator


@lru_cache(maxsize=1)
def _pools():
    # Finding the loaded BLAS libraries walks the process's shared objects:
    # done once (numpy loads its BLAS when it is imported).
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def blas_threads() -> int:
    """The most threads of numpy's BLAS pools as they are now (1 without one)."""
    return max((pool["num_threads"] for pool in _pools().info()), default=1)


@contextmanager
def blas_limited(threads: int) -> Iterator[None]:
    """numpy's BLAS on at most ``threads`` threads, within the block."""
    with _pools().limit(limits=threads):
        yield


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on the calling thread alone, for the reference and its bound.

    After a call on several threads, OpenBLAS's worker threads spin for ~0.1 s
    (2**28 cycles) waiting for more work.  Measured on 2 cores: that spin took
    a core from the next configuration's recording run in a sweep, which then
    ran at half speed (105 ms instead of 54 ms for 512 x 64 x 512).  One thread
    costs ~20 ms more on a 4096 x 16 x 4096 reference and spins nothing."""
    with blas_limited(1):
        yield
