"""The status bar: the GPU's status, passing messages, progress and Cancel."""
from __future__ import annotations

from ..models.session import Session
from ..qt import QtCore, QtWidgets


class StatusBar(QtWidgets.QStatusBar):
    """Shows the session's messages and the controller's progress."""

    def __init__(self, session: Session, backend_status: str, parent=None):
        super().__init__(parent)
        # the device in a few words; all of it on hover
        self.backend_status = QtWidgets.QLabel(backend_status.split(":")[0])
        self.backend_status.setToolTip(backend_status)
        self.backend_status.setObjectName("backend-status")
        self.addPermanentWidget(self.backend_status)
        self.progress_bar = QtWidgets.QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMaximumWidth(160)
        self.addPermanentWidget(self.progress_bar)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setToolTip("Esc")
        self.addPermanentWidget(self.cancel_button)
        # Always there, idle between runs: showing them at a run's start
        # repainted the whole window (200 ms of a busy machine, at the start
        # of every sweep).
        self.set_busy(False)
        session.told.connect(self.showMessage)

    def showMessage(self, message: str, timeout: int = 0) -> None:  # noqa: N802 (Qt API)
        """``message``, elided to the room left of the permanent widgets (a
        long one ran into the device's label), whole in the tooltip."""
        self._message = message
        room = min((w.x() for w in (self.backend_status, self.progress_bar,
                                    self.cancel_button) if w.isVisible()),
                   default=self.width()) - 16
        shown = self.fontMetrics().elidedText(message, QtCore.Qt.TextElideMode.ElideRight,
                                              max(room, 40)) if room < self.width() else message
        self.setToolTip(message if shown != message else "")
        super().showMessage(shown, timeout)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        message = getattr(self, "_message", "")
        if message and self.currentMessage():
            self.showMessage(message)

    def set_busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        self.progress_bar.setEnabled(busy)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("0%" if busy else "idle")

    def show_progress(self, fraction: float, message: str) -> None:
        self.progress_bar.setValue(int(1000 * max(0.0, min(1.0, fraction))))
        self.progress_bar.setFormat(f"{fraction:.0%}")
        self.showMessage(message)
