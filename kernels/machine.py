"""What this machine lends a process."""
from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform
    has one (a container's or ``taskset``'s limit), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


#: The CPU emulation's workers at most, however many cores there are: each
#: holds a private copy of C and of the per-element maps.
MOST_EMULATION_WORKERS = 8


def emulation_cores() -> int:
    """The cores the CPU emulation spreads a run over, before its memory and
    its units of work limit them: what both the runs and their estimates use."""
    return min(usable_cores(), MOST_EMULATION_WORKERS)
