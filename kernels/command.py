"""The ``threadmap`` command line's entry: a run's child process first.

``threadmap run --kernel-file F`` on the CPU emulation runs F in a child
process whose start-up (Python, ThreadMap, its sandbox: ~0.3 s) is the
longest wait before the kernel runs.  Here it starts from the arguments as
they were typed, before the command line (and numpy with it) is imported:
those imports, 0.2 s, then overlap it.  The arguments are only looked at,
not checked: the command's own parser does that, and a run whose request
names another kernel file (or none) starts its own child and ends this one.
"""
from __future__ import annotations

from typing import Sequence


def command_line(argv: Sequence[str], exporter=None, sweep_exporter=None, opener=None) -> int:
    """``threadmap run|sweep|kernels|cache|open ...``; the app gives the image
    exporters and the opener of its window."""
    argv = list(argv)
    path = kernel_file_to_warm(argv)
    if path is not None:
        from .backends.child import warm_for_file

        warm_for_file(path)
    from .cli import main

    return main(argv, exporter=exporter, sweep_exporter=sweep_exporter, opener=opener)


def kernel_file_to_warm(argv: Sequence[str]) -> str | None:
    """The kernel file of a ``run`` on the CPU emulation (``--backend`` cpu or
    auto, as ``warm_for`` starts a child for), from ``argv`` as typed; None
    for anything else."""
    if not argv or argv[0] != "run":
        return None
    values = {"--kernel-file": None, "--backend": "auto"}
    words = list(argv[1:])
    for i, word in enumerate(words):
        if word == "--":
            break
        for option in values:
            if word == option and i + 1 < len(words):
                values[option] = words[i + 1]
            elif word.startswith(option + "="):
                values[option] = word[len(option) + 1:]
    if values["--backend"] not in ("auto", "cpu"):
        return None
    return values["--kernel-file"] or None
