"""Entry point of a child process: read requests, run them, send results back.

Started by ``child.py`` with the simulator switched on or off in its
environment before numba is imported.
"""
from __future__ import annotations

import sys
import traceback
from multiprocessing.connection import Connection


def main(argv: list[str]) -> int:
    inbox = Connection(int(argv[0]), writable=False)
    outbox = Connection(int(argv[1]), readable=False)
    import numba.cuda  # noqa: F401  (the bulk of a start-up: counted in it)

    from ..engine import run_here
    from ..errors import KernelRuntimeError, ThreadMapError

    outbox.send(("ready",))

    def progress(fraction: float, message: str) -> None:
        outbox.send(("progress", fraction, message))

    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            return 0
        if message[0] != "run":
            return 0
        _, request, note = message
        try:
            result = run_here(request, note, progress=progress)
        except ThreadMapError as exc:
            outbox.send(("error", exc))
        except Exception as exc:  # report, never die silently
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            outbox.send(("error", KernelRuntimeError(f"the run failed: {detail}")))
        else:
            outbox.send(("result", result))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
