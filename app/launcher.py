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


def display_problem() -> str | None:
    """Why no window can open here, found before Qt tries (its xcb plugin
    aborts the process, exit 134, suggesting a reinstall); None if one can."""
    import os

    if not sys.platform.startswith("linux"):
        return None
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith(("xcb", "wayland")):
        return None  # offscreen, vnc, ...: no display needed
    if os.environ.get("WAYLAND_DISPLAY") and not platform.startswith("xcb"):
        return None
    display = os.environ.get("DISPLAY")
    if not display:
        return "no display to open the window on (DISPLAY is not set)"
    try:
        import ctypes

        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return None  # (Qt will say what is missing)
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    failed = xcb.xcb_connection_has_error(connection)
    xcb.xcb_disconnect(connection)
    return f"cannot reach the display {display!r}" if failed else None


def _window(**options) -> int:
    global _window_opened
    problem = display_problem()
    if problem:
        print(f"threadmap: error: {problem}: run it in a desktop session or under xvfb-run "
              "(xvfb-run threadmap), or use the command line (threadmap --help)",
              file=sys.stderr)
        return 2
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
