"""Whether this process has a CUDA GPU, or runs numba's simulator: asked by the
engine, the backends and the occupancy figures alike (a module of its own, so
that none of them imports another for it)."""
from __future__ import annotations

import os
import sys
import time
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


def might_have_gpu() -> bool:
    """Whether this machine may have a CUDA GPU, asked without importing
    numba.cuda (0.2 s here, 0.8 s with a driver to start): on Linux a CUDA
    device shows as /dev/nvidia0 (and so on), in a container too, and under
    WSL as /dev/dxg with WSL's libcuda.  Elsewhere (Windows, macOS) it cannot
    be told so cheaply: True, and numba is asked."""
    if not sys.platform.startswith("linux"):
        return True
    try:
        names = os.listdir("/dev")
    except OSError:
        return True
    if any(name.startswith("nvidia") and name[6:].isdigit() for name in names):
        return True
    return "dxg" in names and os.path.exists("/usr/lib/wsl/lib/libcuda.so.1")


@lru_cache(maxsize=1)
def gpu_present() -> bool:
    """Whether numba sees a CUDA GPU in this process (usable or not: see
    :func:`gpu_stack_problem`)."""
    if simulating() or not might_have_gpu():
        return False
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # a broken driver or CUDA install: no GPU for us
        return False


def gpu_available() -> bool:
    """Whether numba can use a CUDA GPU in this process: one is there, and
    the installed GPU stack can compile for it."""
    return gpu_present() and gpu_stack_problem() is None


#: numpy's function that numba-cuda 0.30 registers an overload for when it
#: compiles a kernel for a GPU, and that numpy 2.5 removed (deprecated since 2.0).
_NUMPY_NAME_NUMBA_CUDA_NEEDS = "row_stack"


@lru_cache(maxsize=1)
def gpu_stack_problem() -> str | None:
    """Why the installed numba-cuda cannot compile with the installed numpy,
    in one sentence naming both versions and the fix; None when it can.

    Checked where it would fail (numba-cuda's array overloads name
    ``np.row_stack``), not from a table of versions: a numba-cuda that no
    longer names it is fine with any numpy.  The CPU emulation never needs
    numba-cuda, and stays usable either way."""
    import numpy as np

    if hasattr(np, _NUMPY_NAME_NUMBA_CUDA_NEEDS):
        return None
    try:
        from importlib import metadata
        from importlib.util import find_spec

        spec = find_spec("numba_cuda")
        if spec is None or not spec.submodule_search_locations:
            return None
        overloads = os.path.join(spec.submodule_search_locations[0], "numba", "cuda", "np",
                                 "arrayobj.py")
        with open(overloads, encoding="utf-8") as file:
            if f"np.{_NUMPY_NAME_NUMBA_CUDA_NEEDS}" not in file.read():
                return None
        numba_cuda = metadata.version("numba-cuda")
    except (OSError, ValueError, ImportError):
        return None
    return (f"numba-cuda {numba_cuda} needs numpy.{_NUMPY_NAME_NUMBA_CUDA_NEEDS}, which numpy "
            f"{np.__version__} no longer has, so nothing can be compiled for the GPU: install "
            "numpy<2.5 (pip install \"numpy<2.5\") or a numba-cuda made for numpy "
            f"{np.__version__}; the CPU emulation runs meanwhile")


def gpu_status() -> str:
    """Why there is or is not a GPU, in words for a status bar."""
    if gpu_available():
        from numba import cuda
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else device.name
        return f"CUDA device: {name}"
    if gpu_present():
        return f"a CUDA device is here, but unusable: {gpu_stack_problem()}"
    return "no CUDA device: runs use the CPU emulation (or the CUDA simulator)"


def make_context() -> dict:
    """Make this process's CUDA context now: a GPU child does so before it
    enters its sandbox, since Landlock, applied first, makes the driver's
    cuInit fail (CUDA_ERROR_OPERATING_SYSTEM, seen on an H200 under gVisor).
    What happened, for the child's report: whether it was made, why not, and
    when (time.monotonic(), to be set against when the sandbox was entered)."""
    try:
        from numba import cuda

        cuda.current_context()
    except Exception as exc:  # (reported; the run names it in one sentence)
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return {"made": False, "error": detail, "at": time.monotonic()}
    return {"made": True, "error": None, "at": time.monotonic()}
