"""Run requests in a child process that can be ended at any moment.

Used for the simulator (numba reads ``NUMBA_ENABLE_CUDASIM`` once, at import,
so the simulator needs a process of its own), and for any run that must be
cancellable or time-limited while compiled code is running (a user's kernel
that loops forever cannot be interrupted from a thread).  The child stays up
between runs, so its compiled kernels stay warm; cancel ends it, and the next
run starts a fresh one.

The child runs sandboxed (``sandbox.py``: its own empty folder, resource
limits, Landlock where the kernel has it), in a session of its own (a Ctrl-C
at the terminal reaches the command, which ends it), and dies with its parent
(``lifeline.py``).
"""
from __future__ import annotations

import atexit
import dataclasses
import io
import os
import pickle
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from ..errors import KernelRuntimeError, RunCancelled, RunTimedOut, ThreadMapError
from . import lifeline, phases, sandbox
from .callbacks import CancelCallback, ProgressCallback, _never, _no_progress

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
#: Set to "1" in the environment of a child that runs kernels on the GPU.
GPU_CHILD_ENV = "THREADMAP_CHILD_GPU"
#: Set to "1" in the environment of the typist: the child that types kernel
#: files for the parent (numba's type inference, bounded), kernel after kernel.
TYPIST_ENV = "THREADMAP_CHILD_TYPIST"
#: The typist's own cache folder's name (it writes nothing of numba's there).
TYPIST_KEY = "typist"


class ChildRunner:
    """One child process, started on first use, running one request at a time."""

    def __init__(self, simulator: bool, gpu: bool = False, typist: bool = False):
        self.simulator = simulator
        #: whether it is the typist (see :data:`TYPIST_ENV`)
        self.typist = typist
        #: whether the child makes its CUDA context before its sandbox (a
        #: child for GPU runs: see device.make_context); a CPU child never
        #: pays numba.cuda's import and the driver's start for it
        self.gpu = gpu
        self._process: subprocess.Popen | None = None
        self._to_child: Connection | None = None
        self._from_child: Connection | None = None
        self._lifeline: int | None = None
        self._workdir: Path | None = None
        #: the kernel the child may cache for (its text's hash): a child runs
        #: one kernel's requests, and another kernel gets a fresh child
        self._cache_key: str | None = None
        #: what the child's sandbox applied (its "ready" message)
        self.sandbox: dict | None = None
        self._by_memory = False
        #: when the child was started, and whether it has said it is ready
        self._started_at = 0.0
        self._ready = False
        self._lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The child's process id while one is up."""
        return self._process.pid if self.alive else None

    def _start(self, cache_key: str) -> None:
        from ..cache import prune_sandbox_caches, sandbox_cache_dir

        child_read, parent_write = os.pipe()
        parent_read, child_write = os.pipe()
        watch_read, watch_write = os.pipe()  # never written: its end of file is our end
        self._workdir = sandbox.make_workdir()
        own_cache = sandbox_cache_dir(cache_key)
        env = sandbox.child_environment(self._workdir, own_cache)
        self._cache_key = cache_key
        env["NUMBA_ENABLE_CUDASIM"] = "1" if self.simulator else "0"
        env[GPU_CHILD_ENV] = "1" if self.gpu else "0"
        env[TYPIST_ENV] = "1" if self.typist else "0"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PROJECT_ROOT, env.get("PYTHONPATH")) if p)
        try:
            self._process = lifeline.spawn(
                [sys.executable, "-m", "kernels.backends.child_main", str(child_read),
                 str(child_write), str(watch_read), str(os.getpid())],
                pass_fds=(child_read, child_write, watch_read), env=env,
                stdin=subprocess.DEVNULL, cwd=self._workdir, start_new_session=True)
        finally:
            os.close(child_read)
            os.close(child_write)
            os.close(watch_read)
        os.set_inheritable(watch_write, False)
        self._started_at = time.monotonic()
        self._ready = False
        from .transfer import can_take_from

        #: whether a large result may come in the child's sealed memfds
        self._by_memory = can_take_from(self._process.pid)
        self._lifeline = watch_write
        self._to_child = Connection(parent_write, readable=False)
        self._from_child = Connection(parent_read, writable=False)
        prune_sandbox_caches(keep=own_cache)  # (while the child starts)

    def stop(self) -> None:
        """End the child now (whatever it is doing), and remove its folder."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        for conn in (self._to_child, self._from_child):
            if conn is not None:
                conn.close()
        if self._lifeline is not None:
            os.close(self._lifeline)
        sandbox.remove_workdir(self._workdir)
        self._process = self._to_child = self._from_child = None
        self._lifeline = self._workdir = None

    def warm(self, request) -> None:
        """Start the child for ``request``'s kernel now, if it is not already
        up: its imports then overlap the parent's own checks of the request
        (numba's typing pass), ~0.2 s of a new kernel's first answer."""
        self.warm_for_key(_cache_key(request))

    def warm_for_key(self, key: str) -> None:
        """Start the child for the kernel whose source hashes to ``key``
        (:func:`source_key`), if it is not already up."""
        if not self._lock.acquire(blocking=False):
            return  # a run is in progress: it starts what it needs
        try:
            if not self.alive or key != self._cache_key:
                self.stop()
                self._start(key)
        finally:
            self._lock.release()

    def run(self, request, backend_note: str, progress: ProgressCallback = _no_progress,
            cancel: CancelCallback = _never, time_limit: float | None = None,
            compile_ahead: bool = False, known_types=None):
        """Run ``request`` (its backend already resolved) in the child; return
        its RunResult or raise the error it raised."""
        with self._lock:
            started = time.monotonic()
            key = _cache_key(request)
            if not self.alive or key != self._cache_key:
                self.stop()
                self._start(key)
            # (a child started by warm() is still starting: its start-up counts from then)
            fresh = not self._ready
            if fresh:
                started = min(started, self._started_at)
            assert self._to_child is not None and self._from_child is not None
            # The child's folder is not the caller's: it gets the kernel file's
            # full path, and the result names the file as it was given.
            asked = request
            given = request.kernel_file
            if given:
                request = request.with_(kernel_file=os.path.abspath(given))
            fresh = self._send(key, ("run", request, backend_note, sandbox.cpu_budget(time_limit),
                                     compile_ahead, known_types, self._by_memory)) or fresh
            start_up: float | None = None
            clock = _RunClock(started, fresh)
            for message in self._replies(cancel, lambda code: KernelRuntimeError(_ended_how(code)),
                                         self._run_message):
                kind = message[0] if message is not None else None
                if kind == "result":  # (received whole: never thrown away as timed out)
                    result = _with_start_up(message[1], start_up, self.simulator)
                    return self._as_given(result, asked)
                if time_limit is not None:
                    timed_out = clock.past(time_limit)
                    if timed_out:
                        self.stop()
                        raise RunTimedOut(*timed_out)
                if kind == "ready":
                    start_up = _start_up(message, started) if fresh else None
                    clock.ready()
                elif kind == "compiling":
                    clock.compiling(bool(message[1]),
                                    str(message[2]) if len(message) > 2 else phases.COMPILE)
                elif kind == "progress":
                    progress(message[1], message[2])
        raise AssertionError("unreachable: the child's replies end only by raising")

    def _run_message(self, data: bytes) -> tuple:
        """A run's message from the child, its result read from the memory
        it was sent in (mapped here: the child may then close its memfds)."""
        message = child_message(data)
        if message[0] == "result_memory":
            message = result_from_memory(message, self._process.pid)
            try:
                self._to_child.send(("release",))
            except OSError:
                pass
        return message

    def _send(self, key: str, message: tuple) -> bool:
        """Send ``message`` to the child for ``key``, started first where it has
        none or another's; True when a child was started for it."""
        started = False
        if not self.alive or key != self._cache_key:
            self.stop()
            self._start(key)
            started = True
        assert self._to_child is not None and self._from_child is not None
        try:
            self._to_child.send(message)
        except OSError:  # it died between runs: start a fresh one
            self.stop()
            self._start(key)
            started = True
            self._to_child.send(message)
        return started

    def _replies(self, cancel: CancelCallback, ended, read=None):
        """The child's messages as they come, ``read`` from their bytes, and
        None every 50 ms without one.  A cancel, the child's end (``ended``
        of its exit status makes the error) or a message it cannot read
        stop the child and raise here; a "ready" message sets what the
        sandbox applied before it is given, and an "error" message is raised.
        (The one loop of a run's and of a question's replies.)"""
        read = read or child_message
        while True:
            if cancel():
                self.stop()
                raise RunCancelled("run cancelled")
            if self._from_child.poll(0.05):
                try:
                    message = read(self._from_child.recv_bytes())
                except (EOFError, OSError):
                    # (an OSError may come from a child still alive: never wait on it)
                    code = self._process.poll() if self._process else None
                    self.stop()
                    raise ended(code) from None
                except KernelRuntimeError:
                    self.stop()
                    raise
                if message[0] == "ready":
                    self._ready = True
                    # (what the sandbox applied: a dict; the "compiling"
                    # message's flag had been taken for it, and a cold
                    # cache's True then failed on .get)
                    self.sandbox = message[1] if len(message) > 1 \
                        and isinstance(message[1], dict) else None
                elif message[0] == "error":
                    raise message[1]
                yield message
            elif self._process is not None and self._process.poll() is not None:
                code = self._process.returncode
                self.stop()
                raise ended(code)
            else:
                yield None

    def kernel_types(self, plan, dtype: str, scalar_types: tuple[str, ...],
                     time_limit: float, cancel: CancelCallback = _never):
        """numba's typing of ``plan`` (read from a kernel file), done in this
        runner's child (:meth:`_compiled_in_child`)."""
        return self._compiled_in_child(plan, ("types", dtype, tuple(scalar_types)),
                                       "typing", time_limit, cancel)

    def kernel_ptx(self, plan, dtype: str, cc: tuple[int, int], time_limit: float,
                   cancel: CancelCallback = _never) -> str:
        """The PTX of ``plan``'s plain CUDA form for compute capability ``cc``
        (for ptxas's register count), compiled in this runner's child
        (:meth:`_compiled_in_child`)."""
        return self._compiled_in_child(plan, ("ptx", dtype, tuple(cc)), "compile to PTX",
                                       time_limit, cancel)

    def expected_output(self, plan, request, time_limit: float,
                        cancel: CancelCallback = _never):
        """A described run's expected output (reference_code.Expected) from
        its reference, imported and called in this runner's child, under its
        sandbox (a reference found on its own, the course's references.py,
        is host code ThreadMap did not take from the teacher's hand)."""
        return self._compiled_in_child(plan, ("expected", request), "the reference",
                                       time_limit, cancel)

    def _compiled_in_child(self, plan, question: tuple, what: str, time_limit: float,
                           cancel: CancelCallback):
        """numba's work on ``plan`` (read from a kernel file): ``question``'s
        answer from this runner's child, under its sandbox, its address-space
        limit and ``time_limit`` seconds of wall clock and CPU.  The parent
        never runs numba's type inference or compiler on an untrusted file.

        The typist (:func:`typist`) stays up from kernel to kernel, numba
        imported, so a new or edited kernel's typing costs what it did in
        the parent; a kernel's own child (a one-shot command's, started at
        its first step) imports numba for it.  A child past the limit is
        ended, and the next question starts a fresh one."""
        from ..errors import KernelCompileError

        def failed(how: str) -> KernelCompileError:
            whose = f"{what} of kernel" if what.startswith("the ") else \
                f"numba's {what} of kernel"
            return KernelCompileError(f"{plan.module.path}: {whose} {plan.name!r} {how}")

        with self._lock:
            key = TYPIST_KEY if self.typist else source_key(plan.module.text)
            self._send(key, (question[0], plan.module.text, plan.module.path, plan.name,
                             plan.matmul, sandbox.cpu_budget(time_limit)) + tuple(question[1:]))
            # (counted from when the child is ready: its start-up is not the kernel's)
            deadline = None
            for reply in self._replies(cancel, lambda code: failed(f"failed: {_ended_how(code)}")):
                if reply is None:
                    if deadline is None and self._ready:
                        deadline = time.monotonic() + time_limit
                elif reply[0] == "ready":
                    deadline = time.monotonic() + time_limit
                elif reply[0] == question[0]:
                    return reply[1]
                if deadline is not None and time.monotonic() > deadline:
                    self.stop()
                    raise failed(f"did not end within {time_limit:g} s (real kernels take "
                                 "well under a second; deeply nested tuples or very long "
                                 "expressions make it grow without bound)")
        raise AssertionError("unreachable: the child's replies end only by raising")

    def _as_given(self, result, asked):
        """The result with the request as the caller asked it (the kernel file
        named as given), never the child's copy: a child taken over by its
        kernel could name another reference file there, which this process
        would import; and saying so where the child ran without Landlock."""
        import dataclasses

        result = dataclasses.replace(result, request=asked)
        given = asked.kernel_file
        if self.sandbox and not self.sandbox.get("landlock") and given:
            result = dataclasses.replace(result, notes=tuple(result.notes) + (
                "the kernel ran in a child process with resource limits but without Landlock "
                f"({self.sandbox.get('landlock_missing')}): see the README, Untrusted kernel "
                "files",))
        return result


#: What a child's messages may name besides ThreadMap's own dataclasses and
#: errors: numpy's arrays and scalars, and a few plain builtins.
_PLAIN_GLOBALS = frozenset({
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "scalar"), ("builtins", "complex"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "slice"), ("collections", "OrderedDict"),
    # an array over memory sent apart (pickle protocol 5: transfer.py)
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
})


#: How long numba may compile one kernel's emulation before the run is ended
#: (tens of seconds on a busy machine; a compile is never the kernel's fault,
#: so it is not counted in the run's own limit).
COMPILE_TIME_LIMIT = 600.0
#: What the work a time limit does not count was, past its own limit: the
#: compile is slow, or the engine's own work is (neither is the kernel's).
_EXCLUDED_WORDS = {
    phases.COMPILE: "numba's compile of the emulation went past {limit:g} s and was ended: the "
                    "compile was slow, the kernel never ran (try --tier instant)",
    phases.INSTANT_TRY: "the instant tier's try before handing over to the compiled tier went "
                        "past {limit:g} s and was ended",
    phases.ONES_RERUN: "the diagnosis's rerun of the kernel on all-ones inputs went past "
                       "{limit:g} s and was ended",
}
#: How long a child may take to start (imports, sandbox) before it is ended.
START_UP_TIME_LIMIT = 120.0


class _RunClock:
    """The time a run has had in its child: wall time less the child's
    start-up and the work the child announces as not the kernel's own
    (numba's compiles, an instant-tier try that handed over, the all-ones
    rerun: phases.py)."""

    def __init__(self, started: float, fresh: bool):
        self.started = started
        self.waiting_for_start = fresh
        self.excluded = 0.0
        self.excluded_what: list[str] = ["start-up"] if fresh else []
        self.compile_since: float | None = None
        self.compile_what = phases.COMPILE

    def ready(self) -> None:
        if self.waiting_for_start:
            self.excluded += time.monotonic() - self.started
            self.waiting_for_start = False

    def compiling(self, started: bool, what: str = phases.COMPILE) -> None:
        now = time.monotonic()
        if started:
            self.compile_since = now
            self.compile_what = what if what in _EXCLUDED_WORDS else phases.COMPILE
        elif self.compile_since is not None:
            self.excluded += now - self.compile_since
            self.compile_since = None
            if self.compile_what not in self.excluded_what:
                self.excluded_what.append(self.compile_what)

    def past(self, time_limit: float) -> tuple[str, bool] | None:
        """Why the run is over its limit, in words, and whether the kernel's
        own run was (not a start-up or compile); None while it is not."""
        now = time.monotonic()
        if self.waiting_for_start:
            if now - self.started > max(time_limit, START_UP_TIME_LIMIT):
                return (f"the child process did not start within "
                        f"{max(time_limit, START_UP_TIME_LIMIT):g} s (a busy machine?); "
                        f"the kernel never ran"), False
            return None
        if self.compile_since is not None:
            if now - self.compile_since > max(time_limit, COMPILE_TIME_LIMIT):
                # (a rerun on all-ones inputs that ignored its own deadline
                # is the kernel not finishing on those values)
                return _EXCLUDED_WORDS[self.compile_what].format(
                    limit=max(time_limit, COMPILE_TIME_LIMIT)), \
                    self.compile_what == phases.ONES_RERUN
            return None
        if now - self.started - self.excluded > time_limit:
            what = self.excluded_what or ["start-up"]
            words = what[0] if len(what) == 1 else ", ".join(what[:-1]) + " and " + what[-1]
            excluded = f" (not counting {self.excluded:.1f} s of {words})" \
                if self.excluded >= 0.05 else ""
            return (f"the run went past its time limit of {time_limit:g} s{excluded} "
                    f"and was ended (a kernel that never finishes?)"), True
        return None


#: The modules whose classes a child's message may hold: ThreadMap's modules
#: that define dataclasses or errors, and nothing else (no entry point: they
#: run when imported).  tests/test_sandbox.py keeps it equal to what the
#: package's sources define.
MESSAGE_MODULES = frozenset(f"kernels.{name}" for name in (
    "analyses.bank_conflicts", "analyses.coalescing", "analyses.correctness",
    "analyses.diagnoses.diagnosis", "analyses.diagnoses.source", "analyses.diff",
    "analyses.divergence", "analyses.finding", "analyses.hazards",
    "analyses.lockstep_analysis", "analyses.occupancy", "analyses.record_clients",
    "backends.common", "backends.cpu",
    "backends.instant", "cache", "check", "derived.codegen", "derived.intrinsics",
    "derived.local_types", "derived.lockstep", "derived.lowering", "derived.native",
    "derived.transform", "derived.vector", "errors",
    "live", "maps_file", "outputs", "records", "reference_code", "request", "result", "search",
    "sources.allow", "sources.arguments", "sources.catalogue", "sources.plan",
    "sources.signature", "sources.source", "stow", "sweep", "tour", "work"))


class _ChildUnpickler(pickle.Unpickler):
    """Unpickling of a sandboxed child's messages, by an allow-list: a pickle
    names functions to call, and a child that a kernel had taken over would
    otherwise run code in this, unsandboxed, process with its next message."""

    def find_class(self, module: str, name: str):
        if (module, name) in _PLAIN_GLOBALS:
            return super().find_class(module, name)
        # The module is checked before it is imported: importing one runs it
        # (a message naming kernels.__main__ made this process run sys.exit).
        if module in MESSAGE_MODULES and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and (dataclasses.is_dataclass(found)
                                            or issubclass(found, ThreadMapError)):
                return found
        raise pickle.UnpicklingError(f"a child's message named {module}.{name}, which no "
                                     "message of ThreadMap's holds")


def child_message(data: bytes, buffers=None):
    """A message from a child, unpickled through :class:`_ChildUnpickler`
    (``buffers``: its arrays' memory, sent apart: transfer.py)."""
    try:
        return _ChildUnpickler(io.BytesIO(data), buffers=buffers).load()
    except (pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError,
            EOFError) as exc:
        raise KernelRuntimeError(f"the kernel's process sent a message ThreadMap does not "
                                 f"accept ({exc}); it was ended") from None


def result_from_memory(message: tuple, pid: int):
    """The ``("result", ...)`` message a child sent as ``("result_memory",
    pickle, memfd numbers)``: its arrays' memory in its sealed memfds."""
    from .transfer import read_result

    if len(message) != 3 or not isinstance(message[1], bytes):
        raise KernelRuntimeError("the kernel's process sent a result ThreadMap does not "
                                 "accept; it was ended")
    _, data, descriptors = message
    try:
        found = read_result(data, descriptors, pid, child_message)
    except (ValueError, OSError) as exc:
        raise KernelRuntimeError(f"the kernel's process sent a result ThreadMap does not "
                                 f"accept ({exc}); it was ended") from None
    if not (isinstance(found, tuple) and found and found[0] == "result"):
        raise KernelRuntimeError("the kernel's process sent a result ThreadMap does not "
                                 "accept; it was ended")
    return found


def _cache_key(request) -> str:
    """The hash of the request's kernel source: its child's cache folder."""
    from ..sources.loader import load_plan

    return source_key(load_plan(request).module.text)


def source_key(text: str) -> str:
    """The key of a kernel source's child (and of its cache folder)."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _ended_how(code: int | None) -> str:
    """Why the child ended, in words, from its exit status."""
    import signal

    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGXCPU:
            return ("the run used up its CPU time (its time limit on every core) and was "
                    "ended (a kernel that never finishes?)")
        if -code == signal.SIGXFSZ:
            return "the run tried to write a file past its size limit and was ended"
        return f"the kernel's process was ended by {name}"
    return f"the kernel's process ended unexpectedly (exit code {code})"


def _start_up(ready: tuple, started: float) -> float:
    """The child's start-up, from its start to the moment its "ready"
    message says it was ready (the system's monotonic clock, which both
    processes read): a child started early (``warm_for_file``) is read only
    when the parent comes to run, and the parent's own imports and checks
    until then are not the child's.  The child's word is held between its
    start and now; a message without it counts up to now."""
    now = time.monotonic()
    said = ready[2] if len(ready) > 2 else None
    if isinstance(said, float) and started <= said <= now:
        return said - started
    return now - started


def _with_start_up(result, seconds: float | None, simulator: bool):
    """The result, with the child process's start-up as a timing of its own
    when this run started one (the run's own times are measured inside it)."""
    if seconds is None:
        return result
    import dataclasses

    from ..result import Timing

    # (labelled with the tier that ran: an instant-tier run's start-up is not
    # the compiled loop's)
    start_up = Timing(
        "child process start-up", result.labelled_backend, seconds,
        "wall clock from starting the child process to its being ready to run (Python"
        + (", numba with its simulator" if simulator else "") + " and ThreadMap imported); "
        "not part of the other times, which are measured inside the child")
    return dataclasses.replace(result, timings=(start_up,) + tuple(result.timings))


_runners: dict[tuple[bool, bool] | str, ChildRunner] = {}
_runners_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked process (a pool worker) starts its own children: those of the
    process it was forked from are not its to use, or to end."""
    global _runners, _runners_lock
    _runners = {}
    _runners_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def warm_for(request) -> None:
    """Start the child process that a kernel file's isolated run on the CPU
    emulation will use, if it is not up: its start-up (Python, ThreadMap and
    its sandbox, 0.25-0.5 s) then overlaps the caller's own work until the
    run (imports, the checks of the request)."""
    from .device import simulating

    if request.kernel_file and request.backend in ("auto", "cpu") and not simulating():
        try:
            runner(simulator=False).warm(request)
        except ThreadMapError:
            pass  # (the run's own checks name what is wrong with the request)


def warm_for_file(path: str) -> None:
    """:func:`warm_for` a run of the kernel file ``path`` on the CPU
    emulation, before the request is made (or numpy imported): the command
    line's first step (``kernels/command.py``).  A file that cannot be read,
    or a child that cannot start, starts nothing: the run's own checks, and
    its own start, say why."""
    from ..sources.limits import kernel_text
    from .device import simulating

    if simulating():
        return
    try:
        key = source_key(kernel_text(path))
        runner(simulator=False).warm_for_key(key)
    except (ThreadMapError, OSError):
        pass


def typist() -> ChildRunner:
    """The child that types kernel files for this process (see
    :meth:`ChildRunner.kernel_types`)."""
    with _runners_lock:
        if "typist" not in _runners:
            _runners["typist"] = ChildRunner(simulator=False, typist=True)
        return _runners["typist"]


def warm_typist() -> None:
    """Start the typist now, if it is not up: its imports (numba's front end,
    0.5 s) then overlap the caller's own start."""
    try:
        typist().warm_for_key(TYPIST_KEY)
    except ThreadMapError:
        pass  # (the typing itself starts it again, and says what fails)


def runner(simulator: bool, gpu: bool = False) -> ChildRunner:
    """The shared child runner for the simulator, for isolated runs on the
    CPU emulation, or (``gpu``) for isolated runs on the GPU."""
    with _runners_lock:
        if (simulator, gpu) not in _runners:
            _runners[simulator, gpu] = ChildRunner(simulator, gpu)
        return _runners[simulator, gpu]


@atexit.register
def stop_all() -> None:
    """End every child process (also called at exit)."""
    for child in list(_runners.values()):
        child.stop()


__all__ = ["ChildRunner", "ThreadMapError", "runner", "stop_all"]
