"""Children die with their parent.

A child process that compiles and runs a kernel must never outlive the
command or window that started it (SIGTERM to ``threadmap run`` on the
simulator once left its child at 100% CPU for four minutes).  Three things
see to it:

* the child asks the kernel to kill it when its parent dies
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, :func:`die_with_parent`), then
  checks that the parent did not die before it asked;
* Linux ties that signal to the *thread* that forked the child, not to the
  process: a child started from a worker thread would be killed when that
  thread ends.  So every child is started from one thread that lives as
  long as the process (:func:`spawn`);
* the child also watches its pipe from the parent (:func:`watch_parent`):
  where prctl does not exist, end of file on that pipe means the parent
  is gone.
"""
from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Any

_PR_SET_PDEATHSIG = 1

_requests: queue.Queue = queue.Queue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _serve() -> None:
    while True:
        args, kwargs, reply = _requests.get()
        try:
            reply.put((True, subprocess.Popen(*args, **kwargs)))
        except BaseException as exc:  # handed back to the caller's thread
            reply.put((False, exc))


def _after_fork_in_child() -> None:
    """A forked process (a pool worker) has none of its parent's threads, and
    may have copied the queue mid-use: it starts its own spawner afresh."""
    global _requests, _spawner, _spawner_lock
    _requests = queue.Queue()
    _spawner = None
    _spawner_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def spawn(*args: Any, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(*args, **kwargs)``, forked from a thread that lives
    as long as this process (see the module's docstring)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_serve, name="threadmap-spawner", daemon=True)
            _spawner.start()
    reply: queue.Queue = queue.Queue(maxsize=1)
    _requests.put((args, kwargs, reply))
    ok, value = reply.get()
    if not ok:
        raise value
    return value


def die_with_parent(parent_pid: int) -> None:
    """In a child: be killed when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # it died before prctl: nobody would tell us
        os._exit(1)


def watch_parent(fd: int) -> None:
    """In a child: end this process when ``fd`` (a pipe whose only writer is
    the parent) reaches end of file, i.e. when the parent is gone."""
    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="threadmap-parent-watch", daemon=True).start()
