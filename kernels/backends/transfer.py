"""A child's result sent back without copying its maps through the pipe.

A 4096 x 4096 run's maps are ~500 MB.  Pickled into one message, they were
copied four times (pickled, written to the pipe, read from it, unpickled):
a second of a run whose kernel took two, and on a VM fresh memory is slow
to fault in.  Here the child pickles the result with protocol 5, which
hands each large array's memory to a callback instead of copying it into
the pickle; the child writes each buffer once into a memfd (memory, not a
file anywhere), seals it against any write, shrink or growth, and sends the
small pickle with the memfds' numbers.  The parent opens each through
``/proc/<child>/fd/<n>``, checks the seals, and maps it copy-on-write: the
same pages, no copy, writable arrays.

Trust is unchanged: the pickle is still read by the parent's allow-list
unpickler (``child.child_message``), and a memfd only ever becomes array
memory: numbers, never code.  Only a sealed memfd is mapped: a file the
child could still write would change under the parent, and one it shrank
would kill the parent with SIGBUS.  numpy refuses a buffer whose length
does not hold the array its pickle names.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import pickle
import stat

from ..machine import usable_cores

#: Arrays smaller than this stay inside the pickle (no memfd for a small array).
OUT_OF_BAND_BYTES = 1 << 20
#: A result whose large arrays total less than this is sent in the pipe.
MEMFD_WORTH_BYTES = 16 << 20

#: The seals a result's memfd must carry before the parent maps it (0 where
#: there are none: then results come through the pipe).
SEALS = sum(getattr(fcntl, name, 0) for name in (
    "F_SEAL_WRITE", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL"))
#: The memfds of the result last sent, held open until the next one (the
#: parent opens them through /proc while they are).
_held: list[int] = []


def can_take_from(pid: int) -> bool:
    """Whether this process may open a child's descriptors through /proc
    (its stdin, always open): else results come through the pipe."""
    try:
        os.close(os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
        return True
    except OSError:
        return False


def write_result(message) -> tuple | None:
    """``("result_memory", pickle, memfd numbers)`` for ``message``, each of
    its large buffers in a sealed memfd of its own; None where it is too
    small to be worth it, or a memfd cannot be made (the caller then sends
    ``message`` in the pipe as before)."""
    buffers: list[pickle.PickleBuffer] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        if buffer.raw().nbytes < OUT_OF_BAND_BYTES:
            return True  # (in the pickle)
        buffers.append(buffer)
        return False

    release()
    if not SEALS or not hasattr(os, "memfd_create"):
        return None
    data = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
    if sum(b.raw().nbytes for b in buffers) < MEMFD_WORTH_BYTES:
        return None
    try:
        for _ in buffers:
            _held.append(os.memfd_create("threadmap-result",
                                         os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC))
        _write_all(list(zip(_held, buffers)))
        for descriptor in _held:
            fcntl.fcntl(descriptor, fcntl.F_ADD_SEALS, SEALS)
    except (OSError, AttributeError):  # (no memfd, a size past the limit: the pipe works)
        release()
        return None
    return ("result_memory", data, tuple(_held))


def _write_all(pairs: list[tuple[int, pickle.PickleBuffer]]) -> None:
    """Write each buffer into its memfd, the largest first, on as many
    threads as there are cores (os.write releases the GIL, and most of its
    time is the memfd's fresh pages faulted in: 0.23 s for a 4096 x 4096
    run's maps on one core)."""
    pairs = sorted(pairs, key=lambda pair: -pair[1].raw().nbytes)
    cores = usable_cores()
    if cores < 2 or len(pairs) < 2:
        for descriptor, buffer in pairs:
            _write_one(descriptor, buffer)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(cores, len(pairs), 8)) as pool:
        for done in [pool.submit(_write_one, descriptor, buffer)
                     for descriptor, buffer in pairs]:
            done.result()


def _write_one(descriptor: int, buffer: pickle.PickleBuffer) -> None:
    raw, done = buffer.raw().cast("B"), 0
    while done < raw.nbytes:
        done += os.write(descriptor, raw[done:])


def release() -> None:
    """Close the memfds of the result last sent (the parent has its own maps:
    it says so with a "release" message, or the next run does)."""
    while _held:
        os.close(_held.pop())


def read_result(data: bytes, descriptors, pid: int, unpickler):
    """The message child ``pid`` wrote with :func:`write_result`, its arrays
    over copy-on-write maps of its sealed memfds.  ``unpickler(data,
    buffers)`` is the allow-list unpickler.  ValueError, with why, for a
    message whose memfds are not as it says."""
    if not isinstance(descriptors, tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 2 < d < 1 << 20
            for d in descriptors):
        raise ValueError("result memory named otherwise than a child names it")
    buffers = [_mapped(pid, descriptor) for descriptor in descriptors]
    return unpickler(data, buffers)


def _mapped(pid: int, number: int) -> memoryview:
    """Child ``pid``'s memfd ``number``, mapped copy-on-write once its seals
    are checked."""
    try:
        descriptor = os.open(f"/proc/{pid}/fd/{number}", os.O_RDONLY | os.O_NONBLOCK
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ValueError(f"its result memory cannot be opened ({exc.strerror})") from None
    try:
        try:
            seals = fcntl.fcntl(descriptor, fcntl.F_GET_SEALS)
        except (OSError, AttributeError):
            raise ValueError("its result memory is not a sealed memfd") from None
        if seals & SEALS != SEALS:
            raise ValueError("its result memory is not sealed against writes")
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("its result memory is not a plain memfd")
        if not info.st_size:
            return memoryview(b"")
        return memoryview(mmap.mmap(descriptor, info.st_size, access=mmap.ACCESS_COPY))
    finally:
        os.close(descriptor)
