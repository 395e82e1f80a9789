"""Maps too large to colour on the GUI thread are made off it.

A 4096 x 4096 map took pyqtgraph ~0.5 s to colour through its lookup table
at each switch of the map type, all of it on the GUI thread.  Here the map
and its colours (``colors.image_rgba``) are made on one worker thread and
handed back, ready to draw, through a queued signal; a newer request makes
an older one's answer stale, and it is dropped.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from kernels import ThreadMapError

from ..models.map_images import MapImage
from ..qt import QtCore
from .colors import image_rgba

#: maps of more elements than this are made off the GUI thread (a 1024 x
#: 1024 map colours in ~30 ms; 4096 x 4096 in ~0.5 s)
OFF_THREAD_ELEMENTS = 1 << 20


class MapPainter(QtCore.QObject):
    """Makes a map and its colours on a worker thread."""

    #: (request number, MapImage, RGBA bytes) or (request number, None, why not)
    painted = QtCore.Signal(int, object, object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="map-painter")
        self.latest = 0

    def paint(self, make: Callable[[], MapImage]) -> int:
        """Start making ``make()``; returns the request's number."""
        self.latest += 1
        number = self.latest
        self._pool.submit(self._work, number, make)
        return number

    def _work(self, number: int, make: Callable[[], MapImage]) -> None:
        if number != self.latest:
            return  # asked for something else meanwhile
        try:
            image = make()
            rgba = image_rgba(image)
        except ThreadMapError as exc:
            self.painted.emit(number, None, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 (a bug of ours: said, not lost on a thread)
            self.painted.emit(number, None, f"the map could not be drawn: {exc!r}")
            return
        self.painted.emit(number, image, rgba)

    def shut_down(self) -> None:
        self.latest += 1
        self._pool.shutdown(wait=True, cancel_futures=True)
