"""Start here: the seed's story, one step at a time (kernels.seed_tour).

A window beside the main one, never modal: each step is a run the main window
shows with the map named and the line of the cause selected in its source,
the step's words here.  The steps are the engine's; this only lists them.
"""
from __future__ import annotations

import html
import math

from kernels import counted

from ..models.map_images import MAP_CHOICES
from ..qt import QtCore, QtWidgets


class TourWindow(QtWidgets.QDialog):
    """The walk's steps, their words, and Back / Show / Next."""

    #: show this step in the main window (a TourStep)
    step_requested = QtCore.Signal(object)

    def __init__(self, steps, parent=None):
        super().__init__(parent)
        self.setObjectName("start-here")
        self.setWindowTitle("Start here: the forum question, step by step")
        self.setModal(False)
        self.steps = tuple(steps)
        self.step_list = QtWidgets.QListWidget()
        self.step_list.setObjectName("tour-steps")
        for step in self.steps:
            self.step_list.addItem(step.title)
        self.step_list.setMinimumWidth(self.step_list.sizeHintForColumn(0) + 24)
        self.step_list.currentRowChanged.connect(self._on_row_changed)
        self.step_list.itemActivated.connect(lambda _item: self.show_step())
        self.title = QtWidgets.QLabel()
        self.title.setObjectName("tour-title")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title.setFont(font)
        self.text = QtWidgets.QLabel()
        self.text.setObjectName("tour-text")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        self.where = QtWidgets.QLabel()
        self.where.setObjectName("tour-where")
        self.where.setWordWrap(True)
        self.back_button = QtWidgets.QPushButton("Back")
        self.show_button = QtWidgets.QPushButton("Show this step")
        self.show_button.setDefault(True)
        self.next_button = QtWidgets.QPushButton("Next")
        self.back_button.clicked.connect(lambda: self._go(-1))
        self.next_button.clicked.connect(lambda: self._go(+1))
        self.show_button.clicked.connect(self.show_step)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addStretch(1)
        buttons.addWidget(self.show_button)
        buttons.addWidget(self.next_button)
        words = QtWidgets.QVBoxLayout()
        words.addWidget(self.title)
        words.addWidget(self.text, 1)
        words.addWidget(self.where)
        words.addLayout(buttons)
        layout = QtWidgets.QHBoxLayout(self)
        layout.addWidget(self.step_list)
        layout.addLayout(words, 1)
        self.resize(760, 340)
        self.step_list.setCurrentRow(0)

    @property
    def current(self):
        return self.steps[max(self.step_list.currentRow(), 0)]

    def show_step(self) -> None:
        self.step_requested.emit(self.current)

    def _go(self, delta: int) -> None:
        row = min(max(self.step_list.currentRow() + delta, 0), len(self.steps) - 1)
        self.step_list.setCurrentRow(row)
        self.show_step()

    def _on_row_changed(self, row: int) -> None:
        if row < 0:
            return
        step = self.steps[row]
        self.title.setText(step.title)
        self.text.setText(step.text)
        request = step.request
        launch = (f"{counted(math.prod(request.grid), 'block')} of "
                  f"{counted(math.prod(request.block), 'thread')}")
        self.where.setText(
            f"<b>Runs</b> {html.escape(request.kernel)} on {request.m} x {request.k} x "
            f"{request.n}, {html.escape(launch)}; <b>the map:</b> "
            f"{html.escape(MAP_CHOICES[step.map_name][0])}; <b>the cause:</b> line "
            f"{step.line}, selected in "
            "the Source page.")
        self.back_button.setEnabled(row > 0)
        self.next_button.setEnabled(row < len(self.steps) - 1)
