"""Whether this process has a CUDA GPU, or runs numba's simulator: asked by the
engine, the backends and the occupancy figures alike (a module of its own, so
that none of them imports another for it)."""
from __future__ import annotations

from functools import lru_cache


def simulating() -> bool:
    """Whether numba runs its CUDA simulator in this process."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)


@lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether numba can use a CUDA GPU in this process."""
    from numba import cuda
    try:
        return bool(cuda.is_available()) and not simulating()
    except Exception:  # a broken driver install: no GPU for us
        return False


def gpu_status() -> str:
    """Why there is or is not a GPU, in words for a status bar."""
    if gpu_available():
        from numba import cuda
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else device.name
        return f"CUDA device: {name}"
    return "no CUDA device: runs use the CPU emulation (or the CUDA simulator)"
