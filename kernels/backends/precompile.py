"""Compile a built-in kernel's compiled tier in a process of its own, while
the app shows the instant tier's answer.

The app runs built-in kernels in its own process, where numba's compile would
hold the interpreter for seconds and stall the window.  A process of its own
compiles into the same cache (built-in kernels are ThreadMap's own code, so
the shared cache is theirs), dies with the app (``lifeline.py``), and the next,
larger run of the kernel finds its code ready (numba's cache on disk).
Kernel files never come here: their sandboxed child compiles them ahead.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from pathlib import Path

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
_RUNNING: dict[tuple, subprocess.Popen] = {}
_LOCK = threading.Lock()


def compile_ahead(request) -> bool:
    """Start compiling ``request``'s built-in kernel in the background, unless
    its code is ready or a compile of it is under way; whether one started."""
    if request.kernel_file or request.backend not in ("auto", "cpu"):
        return False
    from ..engine import prepare
    from ..errors import ThreadMapError
    from .cpu import compiled_ready

    try:
        resolved, plan, _ = prepare(request)
    except ThreadMapError:
        return False
    if resolved.backend != "cpu" or compiled_ready(plan, resolved):
        return False
    key = (request.kernel, request.dtype)
    with _LOCK:
        running = _RUNNING.get(key)
        if running is not None and running.poll() is None:
            return False
        from . import lifeline
        from .cpu import numba_cache_dir

        # numba's cache where this process's numba looks for it
        env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache_dir())
        if not env["NUMBA_CACHE_DIR"]:
            del env["NUMBA_CACHE_DIR"]
        _RUNNING[key] = lifeline.spawn(
            [sys.executable, "-m", "kernels.backends.precompile", request.kernel,
             request.dtype, str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env, cwd=_PROJECT_ROOT)
    return True


@atexit.register
def stop_all() -> None:
    with _LOCK:
        for process in _RUNNING.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        _RUNNING.clear()


def main(argv: list[str]) -> int:
    kernel, dtype, parent = argv[0], argv[1], int(argv[2])
    from .lifeline import die_with_parent

    die_with_parent(parent)
    from ..engine import run
    from ..request import RunRequest

    run(RunRequest(kernel=kernel, m=1, k=1, n=1, dtype=dtype, grid=(1,), block=(1,),
                   backend="cpu", tier="compiled", repeats=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
