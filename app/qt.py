"""Import Qt and pyqtgraph here, with the binding named and options set first.

Every module of ``app`` gets pyqtgraph from here, so the binding is never
guessed and images are row-major (pyqtgraph's default column-major order
would transpose every heatmap).
"""
import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import pyqtgraph as pg  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False, background="w",
                    foreground="k")

__all__ = ["pg", "QtCore", "QtGui", "QtWidgets"]
