"""One glossary (kernels/glossary.py): on hover wherever a term appears, in
Help > Glossary, and in docs/GLOSSARY.md."""
from pathlib import Path

from kernels.glossary import GLOSSARY, explain, markdown, terms_in

BEGINNER_TERMS = ("occupancy", "wave", "thread that stored no output", "warp", "lane",
                  "collision", "grid-stride iteration", "lowest writer")


def test_the_terms_a_beginner_misreads_are_each_explained():
    for term in BEGINNER_TERMS:
        assert len(GLOSSARY[term]) > 40, term
    # the occupancy line a user misread: each of its terms, "thread" not on
    # its own where it only says "threads stored no output"
    assert terms_in("occupancy 100%, 1 wave / last wave >99% idle / 0% of threads stored no "
                    "output") == ["occupancy", "wave", "thread that stored no output"]
    # (not "idle thread": a reduction's threads that add into shared memory
    # and leave the store to one thread of the block were read as idle)
    assert "reduction" in GLOSSARY["thread that stored no output"]
    assert terms_in("128 threads: 127 stored no output (99%)") == [
        "thread that stored no output"]
    assert terms_in("3 out-of-bounds reads of B") == ["out of bounds"]
    assert explain("nothing to explain here") == ""


def test_docs_glossary_is_the_glossary():
    page = Path(__file__).parent.parent / "docs" / "GLOSSARY.md"
    assert page.read_text() == markdown()


def test_a_label_with_a_term_explains_it_on_hover_and_help_lists_them_all(qtbot, window,
                                                                           monkeypatch):
    from app.qt import QtCore, QtGui, QtWidgets

    label = QtWidgets.QLabel("occupancy 100%, 1 wave")
    qtbot.addWidget(label)
    label.show()
    shown = []
    monkeypatch.setattr(QtWidgets.QToolTip, "showText",
                        lambda pos, text, widget=None: shown.append(text))
    event = QtGui.QHelpEvent(QtCore.QEvent.Type.ToolTip, QtCore.QPoint(2, 2),
                             label.mapToGlobal(QtCore.QPoint(2, 2)))
    QtWidgets.QApplication.sendEvent(label, event)
    assert shown and shown[0].startswith("occupancy: ") and "wave: " in shown[0]
    # a widget's own tooltip is left alone (Qt shows it)
    from app.glossary_tips import GlossaryTips

    label.setToolTip("its own")
    tips = QtWidgets.QApplication.instance().findChild(GlossaryTips)
    assert tips.eventFilter(label, event) is False and len(shown) == 1
    dialog = window.show_glossary()
    text = dialog.findChild(QtWidgets.QTextBrowser).toPlainText()
    for term in BEGINNER_TERMS:
        assert f"{term}: " in text
