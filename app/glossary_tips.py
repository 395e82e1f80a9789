"""The glossary on hover: a widget that shows one of its terms and has no
tooltip of its own (a label, a button, a table's column heading) explains
the term when the pointer rests on it, from kernels' one glossary."""
from __future__ import annotations

import re

from kernels import explain_terms

from .qt import QtCore, QtWidgets

_TAGS = re.compile(r"<[^>]+>")


def _plain(text: str) -> str:
    return _TAGS.sub(" ", text).replace("&nbsp;", " ").replace("&amp;", "&")


def shown_text(widget: QtWidgets.QWidget, position: QtCore.QPoint) -> str:
    """The words ``widget`` shows under ``position`` (its text, or the column
    heading there)."""
    if isinstance(widget, QtWidgets.QLabel):
        return _plain(widget.text())
    if isinstance(widget, QtWidgets.QAbstractButton):
        return widget.text()
    if isinstance(widget, QtWidgets.QComboBox):
        return widget.currentText()
    header = widget.parent()
    if isinstance(header, QtWidgets.QHeaderView) and header.model() is not None:
        section = header.logicalIndexAt(position)
        if section >= 0:
            value = header.model().headerData(section, header.orientation())
            return str(value or "")
    return ""


class GlossaryTips(QtCore.QObject):
    """The application's tooltip events, answered from the glossary where the
    widget has none of its own."""

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() != QtCore.QEvent.Type.ToolTip or not isinstance(
                watched, QtWidgets.QWidget) or watched.toolTip():
            return False
        text = explain_terms(shown_text(watched, event.pos()))
        if not text:
            return False
        QtWidgets.QToolTip.showText(event.globalPos(), text, watched)
        return True


def install(app: QtWidgets.QApplication) -> GlossaryTips:
    """Answer ``app``'s tooltips from the glossary (once per application)."""
    tips = app.findChild(GlossaryTips)
    if tips is None:
        tips = GlossaryTips(app)
        app.installEventFilter(tips)
    return tips


def glossary_html() -> str:
    """Every entry, for Help > Glossary."""
    import html

    from kernels import GLOSSARY

    return "".join(f"<p><b>{html.escape(term)}</b>: {html.escape(meaning)}</p>"
                   for term, meaning in GLOSSARY.items())

