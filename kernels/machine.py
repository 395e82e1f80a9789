"""What this machine lends a process."""
from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform
    has one (a container's or ``taskset``'s limit), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
