"""The ``threadmap`` command: the GUI without arguments, else the command line."""
from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        from .main_window import run_app
        return run_app()
    from kernels import command_line

    return command_line(argv, exporter=_export_images, sweep_exporter=_export_sweep_images,
                        opener=_open_in_app)


def _open_in_app(path: str) -> int:
    """``threadmap open FILE.py``: the window, with that file's kernels chosen."""
    from .main_window import run_app

    return run_app(open_file=path)


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
    sys.exit(main())
