"""Import Qt and pyqtgraph here, with the binding named and options set first.

Every module of ``app`` gets pyqtgraph from here, so the binding is never
guessed and images are row-major (pyqtgraph's default column-major order
would transpose every heatmap).
"""
import os
import sys

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

# pyqtgraph's RawImageWidget imports CUDA's runtime bindings (numba-cuda
# installs them) for an OpenGL view of GPU arrays that ThreadMap does not use:
# 0.11 s of every start.  Kept from it, and left for numba to import.
_UNUSED = "cuda.bindings.runtime"
_kept_out = _UNUSED not in sys.modules
if _kept_out:
    sys.modules[_UNUSED] = None  # (an ImportError for pyqtgraph, which expects one)
try:
    import pyqtgraph as pg  # noqa: E402
finally:
    if _kept_out and sys.modules.get(_UNUSED, 0) is None:
        del sys.modules[_UNUSED]
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False, background="w",
                    foreground="k")

__all__ = ["pg", "QtCore", "QtGui", "QtWidgets"]
