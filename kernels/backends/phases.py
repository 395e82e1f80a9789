"""Tell whoever listens when a run is doing work that is not its kernel's, so
that a time limit counts the kernel's run and never the engine's own choices
(``child.py`` pauses its clock): numba's compile, an instant-tier try that
handed over to the compiled tier, the all-ones rerun of a diagnosis.  A time
limit that counted them ended a correct but slow-to-emulate kernel as a hang
(the seed's kernel, in a check of a course's submissions on a busy machine)."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

#: The kinds of work a time limit does not count, as a message names them.
COMPILE = "compile"
INSTANT_TRY = "an instant-tier try"
ONES_RERUN = "the all-ones rerun"

_listeners: list[Callable[[bool, str], None]] = []
_depth = threading.local()


def listen(listener: Callable[[bool, str], None]) -> None:
    """Call ``listener(True, what)`` when work that is not the kernel's run
    starts and ``listener(False, what)`` when it ends (on the thread that does
    it; nested ones count once, as the outermost)."""
    _listeners.append(listener)


@contextlib.contextmanager
def not_counted(what: str):
    depth = getattr(_depth, "value", 0)
    _depth.value = depth + 1
    if depth == 0:
        for listener in _listeners:
            listener(True, what)
    try:
        yield
    finally:
        _depth.value = depth
        if depth == 0:
            for listener in _listeners:
                listener(False, what)


def compiling():
    return not_counted(COMPILE)
