"""ThreadMap's engine: kernels, their instrumentation, backends and checks.

Qt-free.  Its public face is :mod:`kernels.api`, re-exported here: the GUI
(``app``) and the command line use nothing else.  numba is imported lazily,
so that the simulator can be chosen before it is.
"""
from __future__ import annotations

from .api import *  # noqa: F401,F403  (the public face)
from .api import __all__, __version__  # noqa: F401
