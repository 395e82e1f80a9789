"""A child's result sent back without copying its maps through the pipe.

A 4096 x 4096 run's maps are ~600 MB.  Pickled into one message, they were
copied four times (pickled, written to the pipe, read from it, unpickled):
a second of a run whose kernel took two.  Here the child pickles the result
with protocol 5, which hands each large array's memory to a callback instead
of copying it into the pickle; the child writes those buffers once, to a file
in its own folder, one file each, and sends the small pickle with their
names.  The parent reads each file once into its own memory (never maps
it: the child could still write or shrink it) and unpickles with the
buffers.

Trust is unchanged: the pickle is still read by the parent's allow-list
unpickler (``child.child_message``), and the file only ever becomes array
memory: numbers, never code.  The parent opens each without following links
(a child taken over by its kernel could plant one) or waiting on a FIFO, and
removes them.  A buffer's length comes from its pickle and its file's size,
and numpy refuses one whose file is too short for the array it names.
"""
from __future__ import annotations

import os
import pickle
import re
import stat
from pathlib import Path

import numpy as np

#: Arrays smaller than this stay inside the pickle (no file for a small run).
OUT_OF_BAND_BYTES = 1 << 20
#: A result whose large arrays total less than this is sent in the pipe.
FILE_WORTH_BYTES = 16 << 20
#: The only names a child may give its result file.
_FILE_NAME = re.compile(r"result-[0-9]{1,10}-[0-9]{1,10}-[0-9]{1,6}\.bin")

_written = 0


def write_result(message, folder: Path) -> tuple | None:
    """``("result_file", pickle, file names)`` for ``message``, each of its
    large buffers written to a new file of its own in ``folder`` (one file
    each keeps every file under the sandbox's file-size limit: one file of
    all of a 4096 x 4096 run's maps came within 3% of it); None where it is
    too small to be worth files, or a file cannot be written (the caller then
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
    names = tuple(f"result-{os.getpid()}-{_written}-{index}.bin"
                  for index in range(len(buffers)))
    try:
        for name, buffer in zip(names, buffers):
            with open(folder / name, "wb") as handle:
                handle.write(buffer.raw())
    except OSError:  # (a full disk, a file past the limit: the pipe still works)
        for name in names:
            (folder / name).unlink(missing_ok=True)
        return None
    return ("result_file", data, names)


def read_result(data: bytes, names, folder: Path, unpickler):
    """The message the child wrote with :func:`write_result`, its arrays in
    this process's memory, read from the files in ``folder`` (which are
    removed).  ``unpickler(data, buffers)`` is the allow-list unpickler.
    ValueError, with why, for a message that does not fit its files."""
    if not isinstance(names, tuple) or not all(
            isinstance(name, str) and _FILE_NAME.fullmatch(name) for name in names):
        raise ValueError("result files named otherwise than a child names them")
    buffers = []
    try:
        for name in names:
            buffers.append(_read_whole(folder / name))
    finally:
        for name in names:
            try:
                (folder / name).unlink(missing_ok=True)
            except OSError:
                pass  # (a folder planted under the name: the child's folder goes with it)
    return unpickler(data, buffers)


def _read_whole(path: Path) -> memoryview:
    """The plain file ``path`` read whole into memory of this process, opened
    without following a link and without waiting on a FIFO.  Read, not
    mapped: a map of a file the child can still write shows its later writes
    (a private map too, for pages not yet touched here), and one it shrinks
    kills this process with SIGBUS at the next touch."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ValueError(f"its result file cannot be opened ({exc.strerror})") from None
    with os.fdopen(descriptor, "rb", buffering=0) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("its result file is not a plain file")
        memory = np.empty(info.st_size, np.uint8)  # (untouched until read into)
        view, done = memoryview(memory), 0
        while done < info.st_size:
            got = handle.readinto(view[done:])
            if not got:
                raise ValueError("its result file grew shorter while it was read")
            done += got
    return view
