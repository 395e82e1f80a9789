"""The verdict above the map: whole sentences, the first causes and a link to
the rest; the timings as a table with their whole text on hover."""
import pytest

pytest.importorskip("pytestqt")


def test_the_verdict_shows_whole_causes_and_the_rest_on_demand(window):
    from app.views.maps_view import SUMMARY_ITEMS

    controls = window.controls
    controls.select_kernel("builtin", "tid-rows")
    controls.m_spin.setValue(8)
    controls.k_spin.setValue(64)
    controls.n_spin.setValue(8)
    controls.apply_launch((1,), (1024,))
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    result = window.session.current
    causes = len(result.diagnoses) + len(result.verdict.reasons)
    assert causes > SUMMARY_ITEMS
    label = window.maps_view.verdict_label
    shown = label.text()
    # the first diagnosis whole, to its last word; a link to the rest
    assert result.diagnoses[0].message.split()[-1] in shown
    assert f"{causes - SUMMARY_ITEMS} more" in shown and "backend:" not in shown
    label.linkActivated.emit("more")
    whole = label.text()
    assert "backend:" in whole and "show less" in whole
    for reason in result.verdict.reasons:
        assert reason.split()[0] in whole
    label.linkActivated.emit("less")
    assert label.text() == shown
    # the timings: a row each, the backend named, how it was measured on hover
    table = window.maps_view.details
    whats = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert "instrumented kernel" in whats
    row = whats.index("instrumented kernel")
    assert table.item(row, 2).text() == "CPU emulation"
    assert "not a GPU time" in table.item(row, 2).toolTip()
    assert table.item(row, 3).toolTip() == table.item(row, 3).text()
