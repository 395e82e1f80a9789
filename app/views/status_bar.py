"""The status bar: the GPU's status, passing messages, progress and Cancel."""
from __future__ import annotations

from ..models.session import Session
from ..qt import QtWidgets


class StatusBar(QtWidgets.QStatusBar):
    """Shows the session's messages and the controller's progress."""

    def __init__(self, session: Session, backend_status: str, parent=None):
        super().__init__(parent)
        self.backend_status = QtWidgets.QLabel(backend_status)
        self.backend_status.setObjectName("backend-status")
        self.addPermanentWidget(self.backend_status)
        self.progress_bar = QtWidgets.QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMaximumWidth(260)
        self.addPermanentWidget(self.progress_bar)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setToolTip("Esc")
        self.addPermanentWidget(self.cancel_button)
        # Always there, idle between runs: showing them at a run's start
        # repainted the whole window (200 ms of a busy machine, at the start
        # of every sweep).
        self.set_busy(False)
        session.told.connect(self.showMessage)

    def set_busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        self.progress_bar.setEnabled(busy)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("0%" if busy else "idle")

    def show_progress(self, fraction: float, message: str) -> None:
        self.progress_bar.setValue(int(1000 * max(0.0, min(1.0, fraction))))
        self.progress_bar.setFormat(f"{fraction:.0%}")
        self.showMessage(message)
