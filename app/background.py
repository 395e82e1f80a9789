"""Work threads give way to the GUI thread.

On 2 cores, two emulation workers at the GUI's priority delayed its events by
up to ~120 ms (benchmarks/bench_gui.py, a 64-configuration sweep); one step
below it, the GUI thread gets a core when it needs one and the work loses
almost nothing (it gets the rest).  Linux sets niceness per thread, and a
thread inherits it from the one that starts it: the engine's own workers too.
"""
from __future__ import annotations

import os
import threading

#: niceness of work threads (the GUI thread keeps 0)
WORK_NICENESS = 5


def yield_to_the_gui() -> None:
    """Lower this thread's scheduling priority, where the system allows it."""
    if not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORK_NICENESS)
    except OSError:
        pass
