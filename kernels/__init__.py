"""ThreadMap's engine: kernels, their instrumentation, backends and checks.

Qt-free.  Its public face is :mod:`kernels.api`, re-exported here: the GUI
(``app``) and the command line use nothing else.  numba is imported lazily,
so that the simulator can be chosen before it is.

The face is loaded when one of its names is first asked for (PEP 562), and
``command_line`` without it: ``threadmap run`` then starts its kernel's child
process before it imports the analyses (0.3 s, which the child's start-up
now overlaps).
"""
from __future__ import annotations

import importlib
import importlib.util


def __getattr__(name: str):
    # (a submodule's name is never the face's: its import asks here first,
    # and is told no, not sent round to import the face)
    if name.startswith("_") and name not in ("__all__", "__version__") \
            or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "command_line":
        return importlib.import_module(".command", __name__).command_line
    api = importlib.import_module(".api", __name__)
    face = globals()
    face.update({n: getattr(api, n) for n in api.__all__}, __all__=api.__all__,
                __version__=api.__version__)  # (asked here once: then found as any name)
    if name not in face:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return face[name]


def __dir__() -> list[str]:
    return sorted(set(importlib.import_module(".api", __name__).__all__) | set(globals()))
