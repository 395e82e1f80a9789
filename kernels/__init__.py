"""ThreadMap's engine: kernels, their instrumentation, backends and checks.

Qt-free: the GUI (``app``) and the command line both call :func:`run`.
numba is imported lazily, so that the simulator can be chosen before it is.
"""
from __future__ import annotations

from .catalogue import CATALOGUE
from .errors import (BackendUnavailable, KernelCompileError, KernelRuntimeError,
                     KernelSourceError, RequestError, RunCancelled, RunTimedOut,
                     ThreadMapError, UnsupportedConstruct)
from .request import RunRequest, check_request

__version__ = "0.1.0"


def run(request, progress=None, cancel=None, **options):
    """Run a :class:`RunRequest`; see :func:`kernels.engine.run`."""
    from .engine import run as _run
    return _run(request, progress, cancel, **options)


__all__ = ["CATALOGUE", "RunRequest", "run", "check_request", "ThreadMapError",
           "RequestError", "KernelSourceError", "UnsupportedConstruct", "KernelCompileError",
           "KernelRuntimeError", "RunCancelled", "RunTimedOut", "BackendUnavailable"]
