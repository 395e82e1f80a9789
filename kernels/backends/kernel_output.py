"""What a kernel prints, kept from one launch and never mixed into ours.

A run launches a kernel several times (the instrumented launch, then the
plain kernel, repeated for its timing), so a ``print`` in the kernel would
appear once per launch, in between ThreadMap's own summary.  Every launch
runs inside :func:`kernel_prints`: the instrumented launch keeps what it
prints (it runs every thread exactly once, on every backend), the others
drop it.

Numba's CPU ``print`` and the simulator's both write through ``sys.stdout``;
a GPU's ``printf`` buffer is written to file descriptor 1 by the driver, so
for the GPU the descriptor is redirected too.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

#: What is kept of one run's prints (the rest is counted, not kept).
MAX_KEPT_CHARS = 256 * 1024


class _Collector(io.TextIOBase):
    """A write-only text stream, safe for the emulation's worker threads."""

    def __init__(self, keep: bool):
        self.keep = keep
        self._parts: list[str] = []
        self._chars = 0
        self.dropped_chars = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not self.keep:
            return len(text)
        with self._lock:
            room = MAX_KEPT_CHARS - self._chars
            self._parts.append(text[:max(room, 0)])
            self._chars += min(len(text), max(room, 0))
            self.dropped_chars += max(len(text) - max(room, 0), 0)
        return len(text)

    def text(self) -> str:
        with self._lock:
            return "".join(self._parts)


class KernelPrints:
    """The kept output of a run: text, and how much was cut off."""

    def __init__(self):
        self.text = ""
        self.dropped_chars = 0


#: Held while a launch's C-level prints are caught (``descriptor``): file
#: descriptor 1 is then the launch's, for every thread.  Whoever writes to
#: standard output while runs go on in another thread (a sweep's lines) takes
#: it first, and writes to the stream it held before the runs began (during a
#: launch ``sys.stdout`` is the launch's too), or its line is caught with the
#: kernel's prints.
STDOUT = threading.RLock()


@contextlib.contextmanager
def kernel_prints(keep: KernelPrints | None, descriptor: bool = False):
    """Send what a launch prints to ``keep`` (or nowhere when None);
    ``descriptor`` also catches C-level output on file descriptor 1."""
    with STDOUT if descriptor else contextlib.nullcontext():
        with _caught(keep, descriptor):
            yield


@contextlib.contextmanager
def _caught(keep: KernelPrints | None, descriptor: bool):
    collector = _Collector(keep is not None)
    saved_stdout = sys.stdout
    sys.stdout = collector
    saved_fd = spill = None
    if descriptor:
        if sys.__stdout__ is not None:
            sys.__stdout__.flush()
        spill = tempfile.TemporaryFile()
        saved_fd = os.dup(1)
        os.dup2(spill.fileno(), 1)
    try:
        yield
    finally:
        sys.stdout = saved_stdout
        if spill is not None and saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
            spill.seek(0)
            collector.write(spill.read().decode("utf-8", "replace"))
            spill.close()
        if keep is not None:
            keep.text += collector.text()
            keep.dropped_chars += collector.dropped_chars


@contextlib.contextmanager
def kernel_warnings(gen, notes: list[str]):
    """Warnings raised while ``gen``'s kernels compile or run (a numpy
    RuntimeWarning in the simulator, a numba warning), as notes at the user's
    line, never at the generated file; one note per warning and line, counted."""
    counts: dict[tuple[str, str, str], int] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for warning in caught:
                where = _user_location(gen, warning.filename, warning.lineno)
                message = gen.relocate(str(warning.message))
                key = (warning.category.__name__, where, message)
                counts[key] = counts.get(key, 0) + 1
            for (category, where, message), count in counts.items():
                times = f" ({count:,} times in this run's launches)" if count > 1 else ""
                notes.append(f"{category} at {where}: {message}{times}")


def _user_location(gen, filename: str, lineno: int) -> str:
    if Path(filename).name != gen.path.name:
        return f"{filename}:{lineno}"
    line = gen.line_map.get(lineno)
    return f"{gen.source_path}:{line}" if line is not None else \
        f"{gen.source_path} (in code ThreadMap derived from it)"
