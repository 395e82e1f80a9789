"""A child's result sent back without copying its maps through the pipe.

A 4096 x 4096 run's maps are ~600 MB.  Pickled into one message, they were
copied four times (pickled, written to the pipe, read from it, unpickled):
a second of a run whose kernel took two.  Here the child pickles the result
with protocol 5, which hands each large array's memory to a callback instead
of copying it into the pickle; the child writes those buffers once, to a file
in its own folder, and sends the small pickle with where each buffer lies.
The parent maps the file (copy-on-write: the arrays are writable, and the
file's pages are shared until written) and unpickles with the buffers.

Trust is unchanged: the pickle is still read by the parent's allow-list
unpickler (``child.child_message``), and the file only ever becomes array
memory: numbers, never code.  The parent opens it without following links
(a child taken over by its kernel could plant one), checks every span lies
inside it, and removes it.
"""
from __future__ import annotations

import mmap
import os
import pickle
import re
import stat
from pathlib import Path

#: Arrays smaller than this stay inside the pickle (no file for a small run).
OUT_OF_BAND_BYTES = 1 << 20
#: A result whose large arrays total less than this is sent in the pipe.
FILE_WORTH_BYTES = 16 << 20
#: Each buffer starts on a multiple of this (a cache line; numpy's alignment).
ALIGNMENT = 64
#: The only names a child may give its result file.
_FILE_NAME = re.compile(r"result-[0-9]{1,10}-[0-9]{1,10}\.bin")

_written = 0


def write_result(message, folder: Path) -> tuple | None:
    """``("result_file", pickle, file name, spans)`` for ``message``, its
    large buffers written to a new file in ``folder``; None where it is too
    small to be worth a file, or the file cannot be written (the caller then
    sends ``message`` in the pipe as before)."""
    global _written
    buffers: list[pickle.PickleBuffer] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        if buffer.raw().nbytes < OUT_OF_BAND_BYTES:
            return True  # (in the pickle)
        buffers.append(buffer)
        return False

    data = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
    if sum(b.raw().nbytes for b in buffers) < FILE_WORTH_BYTES:
        return None
    _written += 1
    name = f"result-{os.getpid()}-{_written}.bin"
    path = folder / name
    spans = []
    try:
        with open(path, "wb") as handle:
            offset = 0
            for buffer in buffers:
                raw = buffer.raw()
                gap = -offset % ALIGNMENT
                if gap:
                    handle.write(b"\0" * gap)
                    offset += gap
                handle.write(raw)
                spans.append((offset, raw.nbytes))
                offset += raw.nbytes
    except OSError:  # (a full disk: the pipe still works)
        path.unlink(missing_ok=True)
        return None
    return ("result_file", data, name, tuple(spans))


def read_result(data: bytes, name: str, spans, folder: Path, unpickler):
    """The message the child wrote with :func:`write_result`, its arrays
    over a private, copy-on-write map of the file in ``folder`` (which is
    removed).  ``unpickler(data, buffers)`` is the allow-list unpickler.
    ValueError, with why, for a message that does not fit its file."""
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name):
        raise ValueError(f"a result file named {name!r}")
    path = folder / name
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # (a FIFO never blocks)
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ValueError(f"its result file cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("its result file is not a plain file")
        size = info.st_size
        if not isinstance(spans, tuple) or not all(
                isinstance(s, tuple) and len(s) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in s)
                and 0 <= s[0] and 0 <= s[1] and s[0] + s[1] <= size for s in spans):
            raise ValueError("its result file does not hold the arrays it names")
        mapped = mmap.mmap(descriptor, size, access=mmap.ACCESS_COPY) if size else None
    finally:
        os.close(descriptor)
        path.unlink(missing_ok=True)
    view = memoryview(mapped) if mapped is not None else memoryview(b"")
    buffers = [view[offset:offset + length] for offset, length in spans]
    return unpickler(data, buffers)
