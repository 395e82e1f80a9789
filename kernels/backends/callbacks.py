"""The callbacks a run takes (its progress and its cancel), and their defaults.

Apart from ``common.py`` (which imports numpy) so that ``child.py`` can
start a child process before numpy is imported (``kernels/command.py``)."""
from __future__ import annotations

from typing import Callable

ProgressCallback = Callable[[float, str], None]
CancelCallback = Callable[[], bool]


def _no_progress(fraction: float, message: str) -> None:
    pass


def _never() -> bool:
    return False
