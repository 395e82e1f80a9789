"""Whether this process has a CUDA GPU, or runs numba's simulator: asked by the
engine, the backends and the occupancy figures alike (a module of its own, so
that none of them imports another for it)."""
from __future__ import annotations

import os
import sys
from functools import lru_cache


def simulating() -> bool:
    """Whether numba runs its CUDA simulator in this process.  Before numba
    is imported, its switch is read as numba will read it (its environment
    variable), so that asking does not import numba: 0.3 s of a command
    whose numba work is all in its child process."""
    if "numba" not in sys.modules and not os.path.exists(".numba_config.yaml"):
        try:
            return bool(int(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") or 0))
        except ValueError:  # (numba warns, and takes its default: off)
            return False
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
