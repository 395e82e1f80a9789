"""Messages in the app name its own fields, not command-line options."""
import pytest

pytest.importorskip("pytestqt")

from app.app_words import in_app_words  # noqa: E402


def test_options_become_the_fields_that_do_their_job():
    said = in_app_words(
        "to run it as it is, give --reference FILE.py:FUNCTION, your code that returns the "
        "expected out; or give M and K with --shape; test on random inputs (ThreadMap's "
        "default, --pattern random)")
    assert "--" not in said
    assert "the Reference field (FILE.py:FUNCTION)" in said
    assert "the M, K and N fields" in said and "the Inputs box (random)" in said


def test_the_session_shows_engine_errors_in_the_apps_words(window):
    shown = []
    window.session.error_raised.connect(lambda message, _run: shown.append(message))
    window.session.raise_error(
        "vector_add.py:4 THREADMAP_ARGS x=float32[4096]: A is flattened; give --reference "
        "FILE.py:FUNCTION, your code that returns the expected out")
    assert shown and "--reference" not in shown[-1] and "the Reference field" in shown[-1]
    assert window.maps_view.error_label.text() == shown[-1]


def test_a_run_without_a_reference_names_the_reference_field(window):
    from pathlib import Path

    told = []
    window.session.told.connect(lambda message, _ms: told.append(message))
    example = Path(__file__).parent.parent / "examples" / "vector_add.py"
    assert window.controller.open_kernel_file(str(example))
    window.controls.reference_edit.clear()
    window.controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert window.session.current.verdict.reference_note  # (no reference given)
    window.maps_view.verdict_label.linkActivated.emit("more")
    for text in (window.maps_view.verdict_label.text(), told[-1]):
        assert "--reference" not in text and "the Reference field" in text
