"""The sandbox of the child process that compiles and runs a kernel: defence in depth.

The allow-list (``sources/allow.py``) keeps a kernel file from naming
anything that reaches the host.  Should something get past it, the process
that compiles and runs the kernel can do little:

* it runs in an empty temporary folder of its own, with ``HOME`` and
  ``TMPDIR`` pointing into it (:func:`make_workdir`, :func:`child_environment`);
* resource limits: file size, processes, CPU time per run, no core files,
  and in the simulator (which runs a kernel's body as Python) address space
  (:func:`limit_resources`, :func:`limit_cpu`);
* on Linux 5.13 and later, Landlock (through ``landlockpy``): no file
  written, created or removed outside that folder and the cache of generated
  kernels, no program executed, no network, no signal sent outside the
  sandbox (:func:`restrict_filesystem`).  Where Landlock is missing (another
  OS, an older kernel, Landlock disabled at boot), the child runs with the
  limits alone, and :func:`enter` says so.

Applied at the very start of the child, before numba starts any thread:
Landlock binds the thread that calls it and the threads and processes it
starts later.
"""
from __future__ import annotations

import os
import resource
import shutil
import tempfile
from pathlib import Path

from ..machine import usable_cores

#: Largest file the child may write (a numba cache file is a few MB).
MAX_FILE_BYTES = 512 * 2**20
#: Processes and threads of the user, as seen by the child (the simulator
#: starts one thread per CUDA thread of a block: up to 1,024).
MAX_PROCESSES = 8192
#: Seconds of CPU a run may use beyond its time limit on every core.
CPU_SLACK_SECONDS = 30.0


#: Each child folder's lock file, held (flock) by the process that made it,
#: for as long as the folder is in use: a folder whose lock can be taken was
#: left by a process that is gone (a pid cannot say so across containers
#: sharing /dev/shm, nor after the pid is used again).
OWNER_FILE = ".owner"
_owned: dict[Path, int] = {}


#: Name prefix of a child's folder once it is locked (the only ones that
#: :func:`_remove_orphans` judges), and of one being made.
CHILD_PREFIX = "threadmap-child-"
_MAKING_PREFIX = "threadmap-making-"


def make_workdir() -> Path:
    """A new private (0700) empty folder for one child process (but for its
    lock file).  Folders left by a process that was killed (SIGKILL: it could
    not remove them) are removed first.

    The folder is made under another name, locked, and only then renamed
    into the ``threadmap-child-*`` that other processes look at: made under
    its final name, its lock file stood unlocked for a moment, and a process
    removing orphans (``check``'s many workers) could take the lock, judge
    the folder orphaned and remove it under its live child."""
    base = Path(tempfile.gettempdir())
    _remove_orphans(base)
    making = Path(tempfile.mkdtemp(prefix=_MAKING_PREFIX, dir=base))
    descriptor = _lock(making)
    path = making.with_name(CHILD_PREFIX + making.name[len(_MAKING_PREFIX):])
    try:
        os.rename(making, path)  # (same folder: atomic; the lock moves with the file)
    except OSError:
        os.close(descriptor)
        shutil.rmtree(making, ignore_errors=True)
        raise
    _owned[path] = descriptor
    return path


def _lock(path: Path) -> int:
    """Make ``path``'s lock file and hold its lock: the descriptor."""
    import fcntl

    descriptor = os.open(path / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_EXCL
                         | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def _remove_orphans(base: Path) -> None:
    """Remove this user's child folders in ``base`` whose owner is gone (its
    lock file can be locked)."""
    import fcntl

    try:
        entries = list(base.glob(CHILD_PREFIX + "*"))
        # (one still being made is judged only when old: a process killed
        # between making it and renaming it)
        entries += [e for e in base.glob(_MAKING_PREFIX + "*") if _older_than(e, 60.0)]
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_symlink() or not entry.is_dir() or entry.stat().st_uid != os.getuid():
                continue
            descriptor = os.open(entry / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW
                                 | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue  # (no lock file: not ours to judge)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # (held: in use)
        finally:
            os.close(descriptor)
        shutil.rmtree(entry, ignore_errors=True)


def _older_than(path: Path, seconds: float) -> bool:
    import time

    try:
        return time.time() - path.lstat().st_mtime > seconds
    except OSError:
        return False


def remove_workdir(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
        descriptor = _owned.pop(path, None)
        if descriptor is not None:
            os.close(descriptor)  # (its lock with it)


def child_environment(workdir: Path, cache: Path) -> dict[str, str]:
    """The child's environment: the parent's, with its home and temporary
    folders inside ``workdir``, and ``cache`` (its kernel's own folder,
    cache.sandbox_cache_dir) as the one cache it reads and writes, numba's
    included: never the cache the unsandboxed commands load code from."""
    from ..cache import SANDBOX_ENV

    env = dict(os.environ)
    env.update(HOME=str(workdir), TMPDIR=str(workdir), TEMP=str(workdir), TMP=str(workdir),
               THREADMAP_SANDBOX_WORKDIR=str(workdir), NUMBA_CACHE_DIR=str(cache / "numba"))
    env[SANDBOX_ENV] = str(cache)
    env.pop("XDG_CACHE_HOME", None)
    return env


#: Stack of each of the simulator's threads (one per CUDA thread: 1,024 in a
#: block) instead of the default 8 MiB, so that their reservations fit the
#: address-space limit; Python 3.11 calls Python without using the C stack.
SIMULATOR_THREAD_STACK = 4 * 2**20


def address_space_limit() -> int:
    """Bytes of address space a child may map: most of the memory available
    now, and 4 GiB for libraries and thread stacks.  The simulator runs a
    kernel's body as Python, where ``(0.0,) * 3e9`` would take the
    machine's memory; the CPU emulation holds a kernel's local arrays once
    per thread (a 300-byte file asked for 16 GiB).  A GPU child is not
    limited so: its driver reserves vast virtual ranges."""
    from ..request import available_memory

    available = available_memory()
    if available is None:
        try:
            available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            available = 8 * 2**30
    return max(int(0.8 * available) + 4 * 2**30, 6 * 2**30)


def limit_resources(simulator: bool = False, gpu: bool = False) -> list[str]:
    """File size, processes, core files, and but for a GPU's child address
    space: what was applied."""
    applied = []
    limits = [("RLIMIT_FSIZE", MAX_FILE_BYTES, "file size"),
              ("RLIMIT_NPROC", MAX_PROCESSES, "processes"), ("RLIMIT_CORE", 0, "core files")]
    if simulator:
        import threading

        threading.stack_size(SIMULATOR_THREAD_STACK)
    if not gpu:
        limits.insert(0, ("RLIMIT_AS", address_space_limit(), "address space"))
    for name, limit, what in limits:
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft, hard = resource.getrlimit(kind)
        capped = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        if soft != resource.RLIM_INFINITY and soft <= capped:
            applied.append(what)
            continue
        try:
            resource.setrlimit(kind, (capped, hard))
            applied.append(what)
        except (ValueError, OSError):
            pass
    return applied


def cpu_seconds_used() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def extend_cpu(seconds: float) -> None:
    """Raise this process's CPU limit by ``seconds`` (a compile's, given back
    to the run it interrupted)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    if soft != resource.RLIM_INFINITY and seconds > 0:
        _set_cpu_limit(soft + int(seconds) + 1)


def limit_cpu(seconds: float | None) -> None:
    """Let the next run use ``seconds`` more of CPU time (None: no limit),
    counted from what this process has used so far (it runs many requests).
    Past it the kernel kills the process (SIGXCPU)."""
    if seconds is None or not seconds < _NO_CPU_LIMIT:
        _set_cpu_limit(None)  # (--time-limit 1e300: no limit, as setrlimit takes 64 bits)
    else:
        _set_cpu_limit(int(cpu_seconds_used() + seconds) + 1)


def _set_cpu_limit(target: int | None) -> None:
    """The soft CPU limit to ``target`` seconds of this process (None: up to
    the hard limit), never above the hard limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if target is None:
        target = hard
    elif hard != resource.RLIM_INFINITY:
        target = min(target, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (target, hard))
    except (ValueError, OSError, OverflowError):
        pass


#: CPU seconds past which a budget means no limit (a year).
_NO_CPU_LIMIT = 365 * 24 * 3600.0


def cpu_budget(time_limit: float | None) -> float | None:
    """CPU seconds for a run with this wall-clock limit: every core busy for
    the whole of it, and some slack."""
    if time_limit is None:
        return None
    return time_limit * usable_cores() + CPU_SLACK_SECONDS


def device_entries(folder: str = "/dev") -> list[str]:
    """The entries of /dev a child may write (and ioctl): all but /dev/shm
    (other processes' shared memory) and links (a link's rule would allow
    where it points)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names
            if name != "shm" and not os.path.islink(os.path.join(folder, name))]


def restrict_filesystem(writable: list[Path]) -> str | None:
    """Landlock: writes only beneath ``writable``, no exec, no network, no
    signals out of the sandbox.  None when applied, else why not."""
    try:
        import landlockpy
        from landlockpy import AccessFS, Ruleset
    except ImportError:
        return "landlockpy is not installed"
    try:
        abi = landlockpy.abi_version()
    except OSError as exc:
        return f"Landlock cannot be queried ({exc})"
    if abi < 1:
        return "this kernel has no Landlock (Linux 5.13 or later, enabled at boot)"
    everything = landlockpy.fs_for_abi(abi)
    reading = AccessFS.READ_FILE | AccessFS.READ_DIR
    # Reads stay allowed everywhere (Python, numba and the kernel file are read).
    handled = everything & ~reading
    devices = (AccessFS.WRITE_FILE | AccessFS.TRUNCATE
               | getattr(AccessFS, "IOCTL_DEV", AccessFS(0))) & handled
    try:
        with Ruleset(handled_fs=handled, handled_net=landlockpy.net_for_abi(abi),
                     scoped=landlockpy.scope_for_abi(abi)) as ruleset:
            for path in writable:
                if path.exists():
                    ruleset.allow_path(path, handled & ~AccessFS.EXECUTE)
            # /dev/null, and a GPU's device files (CUDA writes and ioctls them):
            # each of /dev's entries but /dev/shm (other processes' shared
            # memory, which a kernel must never write).
            for entry in device_entries():
                try:
                    ruleset.allow_path(entry, devices)
                except OSError:
                    continue  # (one that cannot be opened is not allowed)
            ruleset.restrict()
    except (OSError, ValueError, RuntimeError) as exc:
        return f"Landlock refused the rules ({exc})"
    return None


def enter(writable: list[Path], simulator: bool = False, gpu: bool = False) -> dict:
    """Apply the resource limits and Landlock to this process (a child, at its
    start); what was applied, and why Landlock was not where it was not."""
    limits = limit_resources(simulator, gpu)
    why_not = restrict_filesystem(writable)
    return {"limits": limits, "landlock": why_not is None, "landlock_missing": why_not}
