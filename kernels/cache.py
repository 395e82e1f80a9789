"""The cache of generated kernels: one folder, private to the user, never moved.

Generated modules, numba's compiled code for them (its index files are
pickles: whoever can write there can run code in the next ThreadMap), the
kernels' local types and ptxas's register figures live in
``$THREADMAP_CACHE_DIR/generated``, else ``~/.cache/threadmap/generated``
(``$XDG_CACHE_HOME`` where set).  So the folder must be the user's own:

* owned by the user, and written by nobody else: the default folder is made
  0700 (and put back to 0700); a folder given by ``$THREADMAP_CACHE_DIR``
  that others can write, or owned by someone else, is refused;
* a folder that cannot be made or written is an error that names it: the
  cache is never moved silently (a fallback to a predictable ``/tmp`` folder
  let a planted pickle run);
* checked on each start of a process (once: the answer is kept);
* a sandboxed child (backends/sandbox.py) never writes there: it runs one
  kernel file, whose submission may be hostile, and gets a folder of that
  kernel's own, ``sandboxed/<hash of its text>`` (numba's files too), which
  no other process loads code from.  A kernel that writes into it can spoil
  only its own later runs, never the unsandboxed commands' cache (where a
  planted index once ran its pickle in the next ``threadmap run``), nor
  another submission's.
"""
from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import ThreadMapError

GENERATED_PREFIX = "tm_gen_"


class CacheError(ThreadMapError):
    """The cache folder cannot be used; the message names it and says why."""


def _configured() -> tuple[Path, bool]:
    """The cache's base folder, and whether the user named it ($THREADMAP_CACHE_DIR)."""
    env = os.environ.get("THREADMAP_CACHE_DIR")
    if env:
        return Path(env), True
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "threadmap", False


#: Set in a sandboxed child's environment: the one folder it writes.
SANDBOX_ENV = "THREADMAP_SANDBOX_CACHE"
#: The sandboxed kernels' folders are kept to this size (least recently used
#: removed first).
SANDBOX_LIMIT_BYTES = 256 * 1024 * 1024
#: ... and measured at most this often while the same kernels are rerun.
SANDBOX_PRUNE_INTERVAL_S = 300.0
#: (a file beside the kernels' folders: its time is the last pruning's)
_PRUNED_STAMP = ".last-pruned"

_checked: dict[Path, Path] = {}


def cache_dir() -> Path:
    """The folder of generated modules, checked (see the module's docstring);
    raises :class:`CacheError` where it cannot be used.  In a sandboxed child,
    its kernel's own folder."""
    own = os.environ.get(SANDBOX_ENV)
    if own:
        path = Path(own)
        if path not in _checked:
            _check_private(path, "the sandboxed kernel's cache", named=True)
            _checked[path] = path
        return path
    base, named = _configured()
    found = _checked.get(base)
    if found is None:
        found = _checked[base] = _checked_folder(base, named)
    return found


def sandbox_cache_dir(key: str) -> Path:
    """The folder a sandboxed child running the kernel whose text hashes to
    ``key`` may write (made, checked, marked as used now); the others are
    pruned by :func:`prune_sandbox_caches`, which the caller runs once its
    child has started."""
    base, named = _configured()
    cache_dir()  # (the base folder checked, as for any use)
    root = base / "sandboxed"
    _checked_folder(base, named, root)
    path = root / key
    _check_private(path, "the cache of sandboxed kernels", named)
    os.utime(path)
    return path


def prune_sandbox_caches(keep: Path) -> None:
    """Remove the least recently used sandboxed kernels' folders besides
    ``keep`` past :data:`SANDBOX_LIMIT_BYTES` (their sizes summed file by
    file).

    Summing costs 0.25 s of a core over a few thousand files, at each child's
    start, where it competes with the child's own start-up (a whole run of a
    warm kernel takes 2-3 s).  So it is done only when it can matter: for a
    new kernel (an empty ``keep``: its compile will add a few megabytes), or
    when the last pruning is :data:`SANDBOX_PRUNE_INTERVAL_S` old.  A warm
    kernel's rerun adds next to nothing."""
    root = keep.parent
    stamp = root / _PRUNED_STAMP
    try:
        age = time.time() - stamp.stat().st_mtime
    except OSError:
        age = None
    if age is not None and 0 <= age < SANDBOX_PRUNE_INTERVAL_S and _has_files(keep):
        return
    try:
        stamp.touch()
    except OSError:
        pass  # (pruned every time, then)
    folders = []
    for folder in root.iterdir():
        if folder.is_dir() and not folder.is_symlink():
            size = sum(f.stat().st_size for f in folder.rglob("*")
                       if f.is_file() and not f.is_symlink())
            folders.append((folder.stat().st_mtime, size, folder))
    total = sum(size for _, size, _ in folders)
    for _, size, folder in sorted(folders):
        if total <= SANDBOX_LIMIT_BYTES:
            break
        if folder != keep:
            shutil.rmtree(folder, ignore_errors=True)
            total -= size


def _has_files(folder: Path) -> bool:
    try:
        return any(folder.iterdir())
    except OSError:
        return False


def _check_private(folder: Path, where: str, named: bool) -> None:
    """Make ``folder`` (0700) if need be, and refuse one that is not the user's
    own, or that others can write."""
    if folder.exists() and not folder.is_dir():
        raise CacheError(f"{where}: {folder} is a file, not a folder; remove it or set "
                         "THREADMAP_CACHE_DIR to a folder of yours")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"{where}: cannot create {folder} ({exc.strerror or exc}); set "
                         "THREADMAP_CACHE_DIR to a folder you can write") from None
    info = folder.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise CacheError(
            f"{where}: {folder} belongs to another user (uid {info.st_uid}); ThreadMap "
            "loads compiled code from its cache, so it uses only a folder of yours")
    if named and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(
            f"{where}: {folder} can be written by other users (mode "
            f"{stat.S_IMODE(info.st_mode):o}); ThreadMap loads compiled code from its "
            "cache, so it must be yours alone (chmod 700)")
    if not named and info.st_mode & 0o077:
        os.chmod(folder, 0o700)  # ours: private again


def _checked_folder(base: Path, named: bool, path: Path | None = None) -> Path:
    where = "$THREADMAP_CACHE_DIR" if named else "the cache of generated kernels"
    path = path or base / "generated"
    for folder in (base, path):
        _check_private(folder, where, named)
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheError(f"{where}: cannot write in {path}; set THREADMAP_CACHE_DIR to a "
                         "folder you can write")
    return path


#: The cache keeps the most recently used modules (with numba's compiled code
#: and the register figures) up to this size.
CACHE_LIMIT_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class CacheEntry:
    """A generated module and the files that go with it."""

    name: str
    files: tuple[Path, ...]
    last_used: float

    @property
    def nbytes(self) -> int:
        return sum(f.stat().st_size for f in self.files if f.exists())


def cache_entries(directory: Path | None = None) -> list[CacheEntry]:
    """The cache's modules, least recently used first: each module's .py, and
    numba's compiled code for it in __pycache__."""
    directory = directory or cache_dir()
    compiled: dict[str, list[Path]] = {}
    pycache = directory / "__pycache__"
    if pycache.is_dir():
        with os.scandir(pycache) as found:
            for file in found:
                compiled.setdefault(file.name.split(".", 1)[0], []).append(Path(file.path))
    entries = []
    with os.scandir(directory) as found:
        for file in found:
            if not (file.name.startswith(GENERATED_PREFIX) and file.name.endswith(".py")):
                continue
            name = file.name[:-3]
            try:
                used = file.stat().st_mtime
            except FileNotFoundError:  # pruned meanwhile by another process
                continue
            entries.append(CacheEntry(name, (Path(file.path), *compiled.get(name, ())), used))
    return sorted(entries, key=lambda e: e.last_used)


def prune_cache(directory: Path | None = None, limit: int = CACHE_LIMIT_BYTES,
                keep: str | None = None) -> int:
    """Remove least recently used modules until the cache holds at most
    ``limit`` bytes (never ``keep``, the module in use); returns how many."""
    entries = cache_entries(directory)
    total = sum(e.nbytes for e in entries)
    removed = 0
    for entry in entries:
        if total <= limit:
            break
        if entry.name == keep:
            continue
        total -= entry.nbytes
        for file in entry.files:
            try:
                file.unlink()
            except OSError:
                pass
        removed += 1
    return removed


def clear_cache(directory: Path | None = None) -> tuple[int, int]:
    """Remove every generated module, numba's code for them and the stored
    register figures; returns (files, bytes) removed."""
    directory = directory or cache_dir()
    sandboxes = directory.parent / "sandboxed"
    files = [f for folder in (directory, sandboxes) if folder.is_dir()
             for f in folder.rglob("*") if f.is_file() and not f.is_symlink()]
    size = sum(f.stat().st_size for f in files)
    for file in files:
        try:
            file.unlink()
        except OSError:
            pass
    if sandboxes.is_dir():
        for folder in sandboxes.iterdir():
            shutil.rmtree(folder, ignore_errors=True)
    return len(files), size


