"""The ``threadmap`` command: the GUI without arguments, else the command line."""
from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        from .main_window import run_app
        return run_app()
    from kernels.cli import main as cli_main
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
