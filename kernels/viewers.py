"""How a result reaches a window or a picture without the engine importing the GUI.

``kernels`` is Qt-free and never imports ``app``.  The desktop app registers
itself as a viewer, through its package's metadata (the entry point group
``threadmap.viewers``, as pytest and napari find their plugins); ``r.show()``
and ``r.image()`` of the Python API look the viewer up when they are called.
A viewer is anything with ``show_result(result)`` and ``png_bytes(result,
map_name, size)``.
"""
from __future__ import annotations

from .errors import ThreadMapError

GROUP = "threadmap.viewers"
_viewer = None


def register(viewer) -> None:
    """Make ``viewer`` the one ``show()`` and ``image()`` use (the app's, or a
    test's)."""
    global _viewer
    _viewer = viewer


def viewer():
    """The registered viewer, found through the installed packages' entry
    points on first use."""
    global _viewer
    if _viewer is None:
        from importlib.metadata import entry_points

        for point in entry_points(group=GROUP):
            try:
                _viewer = point.load()
            except ImportError as exc:
                raise ThreadMapError(
                    f"showing a result needs the desktop app's packages (PySide6, pyqtgraph): "
                    f"{exc}") from None
            break
    if _viewer is None:
        raise ThreadMapError("showing a result needs ThreadMap's desktop app, which is not "
                             "installed here (pip install -e . installs it with the engine)")
    return _viewer
