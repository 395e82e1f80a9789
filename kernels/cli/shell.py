"""The command line's shell: parse, run the command named, and turn what
goes wrong into one line and an exit status.

Each command is a module of this package.  Imported where a command uses
them, as measured (python -X importtime, on top of this package's 80 ms): the
engine, the API and the sweep, ~120 ms together; the result's words and the
backends' common parts, ~60 ms; the search, the check of a folder, the child
processes, the loader, ~15-20 ms each.  `threadmap kernels` and `threadmap
cache` need none of them, and a run's child starts before this package is
imported (command.py).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Callable, Sequence

from ..errors import (
    KernelCompileError,
    KernelRuntimeError,
    RunCancelled,
    RunTimedOut,
    ThreadMapError,
)
from .check import check_command
from .hunt import hunt_command
from .listings import cache_command, kernels_command
from .parser import build_parser
from .printing import one_line, printable
from .run import ImageExporter, run_command
from .sweep import sweep_command


class Terminated(BaseException):
    """SIGTERM or SIGHUP: the command ends as on Ctrl-C (a BaseException, so
    that no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _ending_on_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread, so the
    command ends its child processes and leaves its outputs as they were."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum, frame):
        raise Terminated(signum)

    previous = {}
    for number in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if number is not None:
            previous[number] = signal.signal(number, end)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv: Sequence[str] | None = None, *, exporter: ImageExporter | None = None,
         sweep_exporter: Callable | None = None, opener: Callable | None = None) -> int:
    """Run the command line; return the exit status.

    0 when the run happened (whatever its verdict); 2 with a one-line message
    for bad input; 1 when the kernel failed to compile or run, or was cancelled;
    130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP (children ended, outputs as
    they were).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "open":
        return open_command(args, opener)
    from ..engine import FILE_COMPILE_LIMIT, compile_files_in_children

    # numba types and compiles a kernel file in its sandboxed child, within
    # --time-limit when that is shorter (check's per-case limit covers them)
    given_limit = getattr(args, "time_limit", None)
    restore = compile_files_in_children(
        min(FILE_COMPILE_LIMIT, given_limit or FILE_COMPILE_LIMIT), typist=False)
    try:
        return _dispatch(args, parser, exporter, sweep_exporter)
    finally:
        restore()


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser, exporter,
              sweep_exporter) -> int:
    """The command ``args`` names, with its signals and its one-line errors."""
    try:
        with _ending_on_signals():
            if args.command == "run":
                return run_command(args, exporter)
            if args.command == "kernels":
                return kernels_command()
            if args.command == "sweep":
                return sweep_command(args, sweep_exporter)
            if args.command == "cache":
                return cache_command(args)
            if args.command == "hunt":
                return hunt_command(args)
            if args.command == "check":
                return check_command(args)
            parser.print_help()
            return 0
    except (KeyboardInterrupt, Terminated) as exc:
        # End any child process; one line; the shell's status for the signal.
        from ..backends.child import stop_all
        stop_all()
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"threadmap: stopped by {what}; child processes ended, earlier outputs kept",
              file=sys.stderr)
        return 128 + signum
    except (KernelCompileError, KernelRuntimeError, RunCancelled, RunTimedOut) as exc:
        print(f"threadmap: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    except ThreadMapError as exc:
        print(f"threadmap: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # (``| head``: whoever read our output has what it wanted)
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as exc:  # an output that cannot be written
        print(f"threadmap: error: cannot write {exc.filename or 'the output'}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2


def open_command(args: argparse.Namespace, opener: Callable | None) -> int:
    """``threadmap open FILE``: the window on a kernel file (checked first)."""
    from ..sources.source import kernel_names

    try:
        path = Path(args.kernel_file)
        if not path.exists():
            raise ThreadMapError(f"{path}: no such file")
        kernel_names(path)  # refused here, with its line, if it has no kernel
        if opener is None:
            raise ThreadMapError("threadmap open needs the desktop app (PySide6)")
    except ThreadMapError as exc:
        print(f"threadmap: error: {one_line(exc)}", file=sys.stderr)
        return 2
    return opener(str(path))
