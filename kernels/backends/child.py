"""Run requests in a child process that can be ended at any moment.

Used for the simulator (numba reads ``NUMBA_ENABLE_CUDASIM`` once, at import,
so the simulator needs a process of its own), and for any run that must be
cancellable or time-limited while compiled code is running (a user's kernel
that loops forever cannot be interrupted from a thread).  The child stays up
between runs, so its compiled kernels stay warm; cancel ends it, and the next
run starts a fresh one.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from ..errors import KernelRuntimeError, RunCancelled, RunTimedOut, ThreadMapError
from .common import CancelCallback, ProgressCallback, _never, _no_progress

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


class ChildRunner:
    """One child process, started on first use, running one request at a time."""

    def __init__(self, simulator: bool):
        self.simulator = simulator
        self._process: subprocess.Popen | None = None
        self._to_child: Connection | None = None
        self._from_child: Connection | None = None
        self._lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _start(self) -> None:
        child_read, parent_write = os.pipe()
        parent_read, child_write = os.pipe()
        env = dict(os.environ)
        env["NUMBA_ENABLE_CUDASIM"] = "1" if self.simulator else "0"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PROJECT_ROOT, env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kernels.backends.child_main", str(child_read),
             str(child_write)],
            pass_fds=(child_read, child_write), env=env, stdin=subprocess.DEVNULL)
        os.close(child_read)
        os.close(child_write)
        self._to_child = Connection(parent_write, readable=False)
        self._from_child = Connection(parent_read, writable=False)

    def stop(self) -> None:
        """End the child now (whatever it is doing)."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        for conn in (self._to_child, self._from_child):
            if conn is not None:
                conn.close()
        self._process = self._to_child = self._from_child = None

    def run(self, request, backend_note: str, progress: ProgressCallback = _no_progress,
            cancel: CancelCallback = _never, time_limit: float | None = None):
        """Run ``request`` (its backend already resolved) in the child; return
        its RunResult or raise the error it raised."""
        with self._lock:
            started = time.monotonic()
            fresh = not self.alive
            if fresh:
                self.stop()
                self._start()
            assert self._to_child is not None and self._from_child is not None
            self._to_child.send(("run", request, backend_note))
            start_up: float | None = None
            while True:
                if cancel():
                    self.stop()
                    raise RunCancelled("run cancelled")
                if time_limit is not None and time.monotonic() - started > time_limit:
                    self.stop()
                    raise RunTimedOut(f"the run went past its time limit of {time_limit:g} s "
                                      "and was ended (a kernel that never finishes?)")
                if self._from_child.poll(0.05):
                    try:
                        message = self._from_child.recv()
                    except (EOFError, OSError):
                        code = self._process.wait() if self._process else None
                        self.stop()
                        raise KernelRuntimeError(
                            f"the kernel's process ended unexpectedly (exit code {code})") from None
                    kind = message[0]
                    if kind == "ready":
                        start_up = time.monotonic() - started if fresh else None
                    elif kind == "progress":
                        progress(message[1], message[2])
                    elif kind == "result":
                        return _with_start_up(message[1], start_up, self.simulator)
                    elif kind == "error":
                        raise message[1]
                elif self._process is not None and self._process.poll() is not None:
                    code = self._process.returncode
                    self.stop()
                    raise KernelRuntimeError(
                        f"the kernel's process ended unexpectedly (exit code {code})")


def _with_start_up(result, seconds: float | None, simulator: bool):
    """The result, with the child process's start-up as a timing of its own
    when this run started one (the run's own times are measured inside it)."""
    if seconds is None:
        return result
    import dataclasses

    from ..result import Timing

    start_up = Timing(
        "child process start-up", result.request.backend, seconds,
        "wall clock from starting the child process to its being ready to run (Python, "
        "numba" + (" with its simulator" if simulator else "") + " and ThreadMap imported); "
        "not part of the other times, which are measured inside the child")
    return dataclasses.replace(result, timings=(start_up,) + tuple(result.timings))


_runners: dict[bool, ChildRunner] = {}
_runners_lock = threading.Lock()


def runner(simulator: bool) -> ChildRunner:
    """The shared child runner for the simulator or for isolated native runs."""
    with _runners_lock:
        if simulator not in _runners:
            _runners[simulator] = ChildRunner(simulator)
        return _runners[simulator]


@atexit.register
def stop_all() -> None:
    """End every child process (also called at exit)."""
    for child in list(_runners.values()):
        child.stop()


__all__ = ["ChildRunner", "runner", "stop_all", "ThreadMapError"]
