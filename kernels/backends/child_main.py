"""Entry point of a child process: read requests, run them, send results back.

Started by ``child.py`` with the simulator switched on or off in its
environment before numba is imported.  Before anything else it ties its life
to its parent's (``lifeline.py``) and enters its sandbox (``sandbox.py``).
"""
from __future__ import annotations

import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection


def main(argv: list[str]) -> int:
    inbox_fd, outbox_fd, watch_fd, parent = (int(a) for a in argv[:4])
    from .lifeline import die_with_parent, watch_parent

    die_with_parent(parent)
    watch_parent(watch_fd)
    # A Ctrl-C is the parent's to act on (it ends this process); SIGTERM keeps
    # its default: the end, at once, without a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox = Connection(inbox_fd, writable=False)
    outbox = Connection(outbox_fd, readable=False)

    from pathlib import Path

    from . import sandbox, transfer
    from ..cache import cache_dir
    from .child import GPU_CHILD_ENV, TYPIST_ENV

    import time

    # A GPU child makes its CUDA context first: under Landlock the driver's
    # cuInit fails (CUDA_ERROR_OPERATING_SYSTEM).  The context is made by
    # ThreadMap's own code before anything of the kernel file is read; the
    # driver's threads started for it run no code of the kernel's.
    context = None
    if os.environ.get(GPU_CHILD_ENV) == "1":
        from .device import make_context

        context = make_context()
    # Its kernel's own cache (numba's files inside it) and its folder: nothing else.
    workdir = Path(os.environ.get("THREADMAP_SANDBOX_WORKDIR", os.getcwd()))
    writable = [cache_dir(), workdir]
    applied = sandbox.enter(writable, simulator=os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                            gpu=context is not None)
    applied["entered_at"] = time.monotonic()
    applied["cuda_context"] = context

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        import numba.cuda  # noqa: F401  (the simulator's start-up: counted in it)
    # The CPU emulation's child imports numba only when it compiles (the
    # instant tier never needs it): half a second off a new kernel's answer.

    from ..engine import run_here
    from ..errors import BackendUnavailable, KernelRuntimeError, ThreadMapError

    def send(message) -> None:
        try:
            outbox.send(message)
        except (BrokenPipeError, ConnectionError, OSError):
            os._exit(0)  # the parent is gone or stopped listening: nothing to say

    if os.environ.get(TYPIST_ENV) == "1":
        # The typist: numba's front end is all it runs, and it is ready once
        # that is imported (the parent's time limit counts from then).
        from numba.core import compiler, registry, typed_passes  # noqa: F401
    send(("ready", applied, time.monotonic()))  # (when: the parent may read it later)

    from ..derived import local_types
    from . import phases, tiers

    # The parent's clock stops while numba compiles (a time limit counts the
    # run, never the compile) or the engine does other work of its own
    # (phases.py), and so does the CPU limit: that work's CPU seconds are
    # given back to the run when it ends.
    compile_began: list[float] = []

    def on_compile(started: bool, what: str) -> None:
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # a compile in the background, between runs
        send(("compiling", started, what))
        if started:
            compile_began.append(sandbox.cpu_seconds_used())
        elif compile_began:
            sandbox.extend_cpu(sandbox.cpu_seconds_used() - compile_began.pop())

    phases.listen(on_compile)

    def progress(fraction: float, message: str) -> None:
        send(("progress", fraction, message))

    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            return 0
        if message[0] == "release":  # (the parent has mapped the last result's memory)
            transfer.release()
            continue
        if message[0] in ("types", "ptx"):  # (numba's work on a kernel file, for the parent)
            send(_compiled_for(message))
            continue
        if message[0] == "expected":  # (a reference found on its own: run here, sandboxed)
            send(_expected_for(message))
            continue
        if message[0] != "run":
            return 0
        _, request, note, cpu_seconds, compile_ahead, known_types, by_memory = message
        tiers.BACKGROUND_COMPILE = bool(compile_ahead)
        local_types.give_types(known_types)  # the parent's typing pass, not done again
        sandbox.limit_cpu(cpu_seconds)
        try:
            if request.backend == "gpu" and context is not None and not context["made"]:
                raise BackendUnavailable(f"the GPU could not be initialised: {context['error']}")
            result = run_here(request, note, progress=progress)
        except ThreadMapError as exc:
            send(("error", exc))
        except MemoryError:
            send(("error", KernelRuntimeError(
                "the run ran out of memory (its child process may use most of the memory "
                "available when it started)")))
        except Exception as exc:  # report, never die silently
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            send(("error", KernelRuntimeError(f"the run failed: {detail}")))
        else:
            # (its maps in sealed memory when large, where the parent can take it)
            sent = transfer.write_result(("result", result)) if by_memory else None
            send(sent if sent is not None else ("result", result))


def _compiled_for(message: tuple) -> tuple:
    """The reply to a parent's ``(kind, text, path, kernel, matmul, CPU
    seconds, ...)``: the kernel planned again from its text (no file is
    read), then, within the CPU seconds given, typed (``"types"``, with the
    dtype and scalar types) or compiled to PTX (``"ptx"``, with the dtype and
    compute capability) here."""
    from . import sandbox
    from ..errors import KernelCompileError, ThreadMapError
    from ..sources.plan import make_plan
    from ..sources.source import parse_module

    kind, text, path, name, matmul, cpu_seconds, *question = message
    what = "typing" if kind == "types" else "compile to PTX"
    sandbox.limit_cpu(cpu_seconds)
    try:
        module = parse_module(text, path)
        plan = make_plan(module, module.kernel(name), matmul)
        if kind == "types":
            from ..derived.local_types import type_here

            dtype, scalar_types = question
            return ("types", type_here(plan, dtype, scalar_types))
        from ..analyses.ptx import plain_ptx

        dtype, cc = question
        return ("ptx", plain_ptx(plan, dtype, tuple(cc)))
    except ThreadMapError as exc:
        return ("error", exc)
    except (MemoryError, RecursionError) as exc:
        return ("error", KernelCompileError(
            f"{path}: numba's {what} of kernel {name!r} ran out of "
            f"{'memory' if isinstance(exc, MemoryError) else 'stack'} (its child process may "
            "use most of the memory available when it started)"))
    except Exception as exc:  # report, never die silently
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:300]
        return ("error", KernelCompileError(f"{path}: numba's {what} of kernel {name!r} "
                                            f"failed: {detail}"))


def _expected_for(message: tuple) -> tuple:
    """The reply to ``("expected", text, path, kernel, matmul, CPU seconds,
    request)``: the run's expected output from its reference, imported and
    called here, in the sandbox, within the CPU seconds given."""
    from . import sandbox
    from ..errors import KernelRuntimeError, ThreadMapError
    from ..reference_code import expected_output
    from ..sources.plan import make_plan
    from ..sources.source import parse_module

    _, text, path, name, matmul, cpu_seconds, request = message
    sandbox.limit_cpu(cpu_seconds)
    try:
        module = parse_module(text, path)
        return ("expected", expected_output(request, make_plan(module, module.kernel(name),
                                                               matmul)))
    except ThreadMapError as exc:
        return ("error", exc)
    except MemoryError:
        return ("error", KernelRuntimeError(
            f"the reference {request.reference} ran out of memory in the sandbox"))
    except Exception as exc:  # report, never die silently
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:300]
        return ("error", KernelRuntimeError(f"the reference {request.reference} failed in the "
                                            f"sandbox: {detail}"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
