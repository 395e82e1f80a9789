"""Progress of a long command-line run on standard error, so it never looks hung.

Nothing is shown for a run that ends within ``quiet_seconds``.  After that,
on a terminal one line is rewritten in place (at most a few times a second);
into a file or a pipe a line is added every ``interval`` seconds, so logs
stay short.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class CommandLineProgress:
    """A progress callback for :func:`kernels.engine.run` and ``run_sweep``."""

    def __init__(self, stream: TextIO | None = None, quiet_seconds: float = 2.0,
                 interval: float | None = None):
        self.stream = stream or sys.stderr
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.quiet_seconds = quiet_seconds
        self.interval = interval if interval is not None else (0.25 if self.terminal else 10.0)
        self.started = time.monotonic()
        self._last_shown = 0.0
        self._width = 0
        self.lines_shown = 0
        #: held to write: the progress of a sweep comes from the thread that
        #: runs it, its result lines from the main thread
        self.lock = threading.RLock()

    def __call__(self, fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.quiet_seconds or now - self._last_shown < self.interval:
            return
        with self.lock:
            self._show(now, fraction, message)

    def _show(self, now: float, fraction: float, message: str) -> None:
        self._last_shown = now
        text = f"  [{min(max(fraction, 0.0), 1.0):4.0%}] {message} ({now - self.started:.0f} s)"
        if self.terminal:
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.lines_shown += 1

    def clear(self) -> None:
        """Remove the rewritten line (on a terminal) before other output."""
        with self.lock:
            if self.terminal and self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0
