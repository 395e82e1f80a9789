"""The Qt binding does not corrupt Python's reference counts.

PySide6 6.12.0's ``Signal.emit()`` returned ``True`` without a reference: each
emit over-released ``True`` and a long session aborted with "bool_dealloc".
pyproject.toml excludes that release; this test catches any other with it.
"""
import sys

from app.qt import QtCore


class _Emitter(QtCore.QObject):
    changed = QtCore.Signal(str)


def test_signal_emit_keeps_true_alive():
    emitter = _Emitter()
    before = sys.getrefcount(True)
    for _ in range(200):
        emitter.changed.emit("x")
    assert abs(sys.getrefcount(True) - before) < 50
