"""Python's garbage collection on the GUI thread only.

The cyclic garbage collector runs in whichever thread happens to allocate
when a threshold is passed.  Run in a worker thread, it can destroy Qt
objects (a closed window's wrappers) there while the GUI thread deletes
widgets: each thread then holds what the other waits for (the GIL, a Qt
mutex) and the app hangs.  pyqtgraph's GarbageCollector turns automatic
collection off and collects on a GUI-thread timer instead.
"""
from __future__ import annotations

import gc

from pyqtgraph.util.garbage_collector import GarbageCollector

_collector: GarbageCollector | None = None


def collect_on_gui_thread(interval: float = 1.0) -> None:
    """Install the collector once per process (call it on the GUI thread)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=interval)


_frozen = False


def freeze_what_lasts() -> None:
    """Once per process, when the first window is built: what the app is made
    of (its modules, Qt's and pyqtgraph's objects, the window's widgets:
    hundreds of thousands of objects) lives as long as the process, so it goes
    out of the collector's sight; a full collection then scans only what came
    after (scanning them all took 100 ms on the GUI thread, 200 ms on a busy
    machine, at the first sweep).  Garbage is collected first, so nothing
    that is already garbage is kept."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
