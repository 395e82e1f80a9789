"""Tell whoever listens when a run is compiling, so that a time limit counts
the run and never numba's compile (``child.py`` pauses its clock)."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

_listeners: list[Callable[[bool], None]] = []
_depth = threading.local()


def listen(listener: Callable[[bool], None]) -> None:
    """Call ``listener(True)`` when a compile starts and ``listener(False)``
    when it ends (on the thread that compiles; nested compiles count once)."""
    _listeners.append(listener)


@contextlib.contextmanager
def compiling():
    depth = getattr(_depth, "value", 0)
    _depth.value = depth + 1
    if depth == 0:
        for listener in _listeners:
            listener(True)
    try:
        yield
    finally:
        _depth.value = depth
        if depth == 0:
            for listener in _listeners:
                listener(False)
