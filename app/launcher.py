"""The ``threadmap`` command: the GUI without arguments, else the command line."""
from __future__ import annotations

import sys
from typing import NoReturn, Sequence

#: Whether this process opened the window (its exit keeps the teardown).
_window_opened = False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        return _window()
    from kernels import command_line

    return command_line(argv, exporter=_export_images, sweep_exporter=_export_sweep_images,
                        opener=_open_in_app)


def command() -> NoReturn:
    """``threadmap`` (the console script), ``python -m app`` and ``python -m
    app.launcher``."""
    code = main(sys.argv[1:])
    if not _window_opened:
        _exit_without_teardown(code)
    sys.exit(code)


def _exit_without_teardown(code: int) -> NoReturn:
    """End a command-line run at once.  What it wrote is already closed; the
    output streams are flushed and the exit handlers run (they stop child
    processes); what is skipped is the interpreter's teardown: a last
    collection over numba's and LLVM's objects, freeing every array and
    unloading every module, 0.2-0.5 s of a 2.5 s ``threadmap run``.  (A
    window's exit keeps the teardown: Qt saves its settings there.)"""
    import atexit
    import os

    atexit._run_exitfuncs()  # (no public way to run them before os._exit)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say there
            pass
    try:  # and C's stdio buffers (printf from compiled code), which exit() would flush
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    os._exit(code)


def _window(**options) -> int:
    global _window_opened
    from .main_window import run_app

    _window_opened = True
    return run_app(**options)


def _open_in_app(path: str) -> int:
    """``threadmap open FILE.py``: the window, with that file's kernels chosen."""
    return _window(open_file=path)


def _export_images(result, **options) -> None:
    """--png / --svg of ``threadmap run``: Qt rendering, offscreen if headless."""
    from .export import cli_exporter, ensure_app

    ensure_app()
    cli_exporter(result, **options)


def _export_sweep_images(out, map_name: str):
    """``threadmap sweep``'s images: one .png per configuration as it comes
    (``.add(cell)``), and the contact sheet (``.finish(cells)``)."""
    from .export import SweepImages

    return SweepImages(out, map_name)


if __name__ == "__main__":
    command()
