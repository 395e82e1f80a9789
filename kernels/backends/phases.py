"""Tell whoever listens when a run is compiling, so that a time limit counts
the run and never numba's compile (``child.py`` pauses its clock)."""
from __future__ import annotations

import contextlib
from typing import Callable

_listeners: list[Callable[[bool], None]] = []


def listen(listener: Callable[[bool], None]) -> None:
    """Call ``listener(True)`` when a compile starts and ``listener(False)``
    when it ends."""
    _listeners.append(listener)


@contextlib.contextmanager
def compiling():
    for listener in _listeners:
        listener(True)
    try:
        yield
    finally:
        for listener in _listeners:
            listener(False)
