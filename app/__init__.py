"""ThreadMap's desktop app (PySide6 + pyqtgraph), on top of ``kernels``."""
