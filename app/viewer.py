"""The app as the engine's viewer (``kernels/viewers.py``): registered through
the ``threadmap.viewers`` entry point in pyproject.toml, so that the Python
API's ``r.show()`` and ``r.image()`` reach the window and the exporter while
``kernels`` never imports ``app``."""
from __future__ import annotations


def show_result(result) -> None:
    from .main_window import show_result_window

    show_result_window(result)


def png_bytes(result, map_name: str = "count", size: tuple[int, int] = (800, 600)) -> bytes:
    from .export import png_bytes as export_png

    return export_png(result, map_name, size)
