"""Python's garbage collection on the GUI thread only.

The cyclic garbage collector runs in whichever thread happens to allocate
when a threshold is passed.  Run in a worker thread, it can destroy Qt
objects (a closed window's wrappers) there while the GUI thread deletes
widgets: each thread then holds what the other waits for (the GIL, a Qt
mutex) and the app hangs.  pyqtgraph's GarbageCollector turns automatic
collection off and collects on a GUI-thread timer instead.
"""
from __future__ import annotations

from pyqtgraph.util.garbage_collector import GarbageCollector

_collector: GarbageCollector | None = None


def collect_on_gui_thread(interval: float = 1.0) -> None:
    """Install the collector once per process (call it on the GUI thread)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=interval)
