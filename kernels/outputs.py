"""Outputs are written whole or not at all, and a run's files are published together.

As SQLite and git do: each file is written to a temporary file beside the
final one, flushed to disk, and renamed over it, so a full disk, a Ctrl-C or
a crash leaves the previous file or the new one, never a mix.  A command's
files (``result.json`` with its ``maps.npz``) are staged first and renamed
one after the other with Ctrl-C and SIGTERM held back for those few
microseconds; ``result.json`` also names its ``maps.npz`` by a run id that
``load_maps`` checks, so a pair torn apart by a power cut is refused, not
misread.  Two commands writing one folder are not interleaved: the second is
refused while the first holds the folder's lock.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator

from .errors import ThreadMapError

#: Signals held back while a command's files are renamed into place.
_DEFERRED = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None),
                              getattr(signal, "SIGHUP", None)) if s is not None)


class OutputError(ThreadMapError):
    """An output could not be written; what was there before is kept."""


def _temporary(path: Path) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(name)


def _give_a_new_files_mode(temporary: Path) -> None:
    """mkstemp made ``temporary`` 0600; the file it becomes gets the mode a
    newly created file would (0666 less the umask), as outputs meant for
    others to read must (a teacher's report, a shared run).  The umask is read
    from /proc where there is one: setting it to read it back (os.umask)
    would, for that moment, change the mode of files other threads create."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            umask = next(int(line.split()[1], 8) for line in status
                         if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o077)  # (the moment's files private, if anything)
        os.umask(umask)
    with contextlib.suppress(OSError):  # (a file system without modes: as it is)
        os.chmod(temporary, 0o666 & ~umask)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Writeback:
    """Flushes a large file to disk part by part while it is still being
    written, so that its final flush (fsync) waits only for the last part.

    On this project's VMs a flush costs ~1.2 ms per MB written since the
    one before, whenever those MB were written: asking the kernel to start
    the disk writes early (Linux's ``sync_file_range``, tried first) left
    the final flush of a 160 MB file at 0.2 s.  A flush (``fdatasync``) of
    what is written so far, started on a thread while the rest is written,
    took the first 128 MB off it: the final flush then took 0.055 s.  One
    flush at a time; each covers all that was written before it started."""

    #: bytes written between the starts of two flushes (at least)
    STEP = 16 << 20

    def __init__(self, out):
        self.out = out
        #: where the last flush started: what it covers ends there
        self.flushed_to = 0
        self._flush: threading.Thread | None = None

    def written(self) -> None:
        """Call after writing: starts a flush of what is written, once
        :attr:`STEP` bytes have been written since the last one started
        and that one has ended."""
        end = self.out.tell()
        if end - self.flushed_to < self.STEP or (self._flush is not None
                                                 and self._flush.is_alive()):
            return
        self.out.flush()
        # (its own descriptor, closed when it is done: the file may be
        # closed here meanwhile, and its number reused for another)
        fd = os.dup(self.out.fileno())
        self._flush = threading.Thread(target=_flush_early, args=(fd,), daemon=True,
                                       name="threadmap early flush")
        self._flush.start()
        self.flushed_to = end

    def finish(self) -> None:
        """Wait for the flush under way, if any (the caller's own final
        flush follows, and reports any error: these only save time)."""
        if self._flush is not None:
            self._flush.join()
            self._flush = None


def _flush_early(fd: int) -> None:
    try:
        getattr(os, "fdatasync", os.fsync)(fd)
    except OSError:  # (the final flush meets the same error and reports it)
        pass
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # (not every platform syncs a folder)
        _sync(folder)


def _describe(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    if exc.errno == errno.EFBIG:
        return "the file is larger than this process may write"
    return exc.strerror or str(exc)


def write_atomically(path: str | Path, data: bytes | str | Callable[[Path], object]) -> object:
    """Write ``path`` whole or not at all: ``data`` (bytes or text), or what
    ``data(temporary_path)`` writes, goes to a temporary file in the same
    folder, is flushed to disk and renamed over ``path``.  Returns what
    ``data`` returned (else the path).  Raises :class:`OutputError` (the
    previous file kept) when it cannot be written."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = _temporary(path)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_describe(exc)}") from None
    returned: object = path
    try:
        if isinstance(data, str):
            temporary.write_text(data, encoding="utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            temporary.write_bytes(data)
        else:
            returned = data(temporary)
        _give_a_new_files_mode(temporary)
        _sync(temporary)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        kept = "the previous file is kept" if path.exists() else "nothing was written"
        raise OutputError(f"cannot write {path}: {_describe(exc)}; {kept}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    sync_folder(path.parent)
    return returned


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold back Ctrl-C, SIGTERM and SIGHUP until the block ends (then act on
    the first that came).  Only the main thread receives Python's signal
    handlers; elsewhere this does nothing, and needs nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for number in _DEFERRED:
        try:
            previous[number] = signal.signal(number, lambda n, frame: caught.append(n))
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            signal.raise_signal(caught[0])


class OnThread:
    """Work an :class:`OutputFolder` does on a thread of its own: a file
    written (``write_later``), or flushed to disk (fsync waits for the disk
    and holds no lock of Python's meanwhile)."""

    def __init__(self, work: Callable[[], object], name: str):
        self._returned: object = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True,
                                        name=f"threadmap {name}")
        self._thread.start()

    def _run(self, work: Callable[[], object]) -> None:
        try:
            self._returned = work()
        except BaseException as exc:  # noqa: BLE001 (raised where the result is taken)
            self._failure = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> object:
        """What the work returned, once it has ended; raises what it raised
        (an :class:`OutputError`, an OSError)."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self._returned


class OutputFolder:
    """A folder a command writes into, locked while it does, its files staged
    and then published together::

        with OutputFolder(out, "--out") as folder:
            save_maps(folder.stage("maps.npz"), ...)
            folder.stage_text("result.json", text)
            folder.publish()

    Leaving the block without :meth:`publish` (an error, a Ctrl-C) removes
    what was staged and leaves the folder as it was.
    """

    def __init__(self, folder: str | Path, option: str = "--out",
                 files: tuple[str, ...] = ()):
        self.folder = Path(folder)
        self.option = option
        #: the files the command writes here (named when they are kept)
        self.files = files
        self._staged: list[tuple[Path, Path]] = []
        #: the flushes to disk of staged files already written, under way
        self._flushing: dict[Path, OnThread] = {}
        #: files being written on threads of their own (write_later)
        self._writing: list[OnThread] = []
        self._lock: int | None = None
        self._created = False

    def __enter__(self) -> "OutputFolder":
        try:
            self._created = not self.folder.exists()
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise OutputError(f"{self.option} {self.folder}: cannot write there "
                              f"({_describe(exc)})") from None
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # (no flock on this platform: unlocked)
            pass
        except OSError:
            os.close(fd)
            raise OutputError(
                f"{self.option} {self.folder}: another threadmap command is writing into it; "
                "wait for it to finish, or choose another folder") from None
        self._lock = fd
        return self

    def __exit__(self, *exc_info) -> None:
        for written in self._writing:  # (what they staged is removed below)
            written.wait()
        self._writing.clear()
        for flush in self._flushing.values():
            flush.wait()
        self._flushing.clear()
        for temporary, _ in self._staged:
            with contextlib.suppress(OSError):
                temporary.unlink()
        self._staged.clear()
        if self._lock is not None:
            os.close(self._lock)  # (closing releases the flock)
            self._lock = None
        if self._created:  # made for a command that wrote nothing: not left behind
            with contextlib.suppress(OSError):
                self.folder.rmdir()

    def _kept(self) -> str:
        names = list(self.files) + [final.name for _, final in self._staged
                                    if final.name not in self.files]
        existing = [name for name in names if (self.folder / name).exists()]
        return (f"the previous {' and '.join(existing)} in {self.folder} "
                f"{'is' if len(existing) == 1 else 'are'} kept" if existing
                else "nothing was written")

    def stage(self, name: str) -> Path:
        """A temporary path for the file ``name``, to be written by the
        caller and published with the others."""
        final = self.folder / name
        try:
            temporary = _temporary(final)
        except OSError as exc:
            raise OutputError(f"cannot write {final}: {_describe(exc)}; "
                              f"{self._kept()}") from None
        self._staged.append((temporary, final))
        return temporary

    def write(self, name: str, write: Callable[[Path], object]) -> object:
        """Stage ``name`` and write it with ``write(temporary_path)``; an
        :class:`OutputError` (the folder left as it was) if that fails."""
        temporary = self.stage(name)
        try:
            written = write(temporary)
        except OSError as exc:
            raise OutputError(f"cannot write {self.folder / name}: {_describe(exc)}; "
                              f"{self._kept()}") from None
        # Its flush to disk starts now, on a thread, and goes on while the
        # command makes its next file: a 4096 x 4096 run's maps.npz, 160 MB,
        # took 0.2-0.3 s to flush, which publish() had waited for alone.
        self._flushing[temporary] = OnThread(lambda: _sync(temporary), "flush")
        return written

    def write_later(self, name: str, write: Callable[[Path], object]) -> OnThread:
        """:meth:`write` on a thread of its own, while the caller goes on; its
        :meth:`OnThread.result` waits for it.  The folder is not left (nor
        its files published) before it ends."""
        written = OnThread(lambda: self.write(name, write), "write")
        self._writing.append(written)
        return written

    def write_text(self, name: str, text: str) -> None:
        self.write(name, lambda path: path.write_text(text, encoding="utf-8"))

    def publish(self) -> None:
        """Flush every staged file to disk and rename each into place, in the
        order staged, with interrupts held back while they are renamed."""
        for written in self._writing:
            written.result()
        self._writing.clear()
        try:
            for temporary, _ in self._staged:
                _give_a_new_files_mode(temporary)
                flush = self._flushing.pop(temporary, None)
                if flush is None:
                    _sync(temporary)
                else:
                    flush.result()
        except OSError as exc:
            raise OutputError(f"cannot write into {self.folder}: {_describe(exc)}; "
                              f"{self._kept()}") from None
        with interrupts_deferred():
            for temporary, final in self._staged:
                os.replace(temporary, final)
            self._staged.clear()
        sync_folder(self.folder)
