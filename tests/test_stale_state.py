"""State the Run panel must not lose or keep stale: the backend asked for, the
kernel before a cancelled Open dialog, a verdict without a reference, the
user's shape after a hunt, a launch's source after an edit, a launch of
another kernel (offscreen, as tests/test_app.py)."""
import dataclasses
from pathlib import Path

import pytest

from app.qt import QtCore, QtWidgets

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "kernels"


def told(window) -> list[str]:
    messages = []
    window.session.told.connect(lambda message, _ms: messages.append(message))
    return messages


def choose(combo: QtWidgets.QComboBox, data: str) -> None:
    """Pick an item as the user does: the index changes, then ``activated``."""
    index = combo.findData(data)
    assert index >= 0, data
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def small_shape(controls, m=24, k=8, n=20) -> None:
    controls.m_spin.setValue(m)
    controls.k_spin.setValue(k)
    controls.n_spin.setValue(n)


# -- 1. auto stays auto -------------------------------------------------------------------

def test_auto_stays_auto_after_a_run_and_is_saved_so(window, settings, qtbot):
    from app.main_window import MainWindow
    controls = window.controls
    controls.select_kernel("builtin", "grid-stride")
    small_shape(controls)
    controls.backend_combo.setCurrentText("auto")
    window.run_action.trigger()
    first = window.session.current
    assert first is not None and first.request.backend in ("cpu", "gpu")  # (resolved)
    # the box says what was asked for, not what auto chose
    assert controls.backend_combo.currentData() == "auto"
    assert controls.request().backend == "auto"
    window.save_settings()
    assert settings.request().backend == "auto"
    window.run_action.trigger()
    second = window.session.current
    assert second is not first
    assert "as asked" not in second.backend_note, second.backend_note
    # a row shown again: still the backend asked for
    window.results_view.selectRow(0)
    assert window.session.current is first
    assert controls.backend_combo.currentData() == "auto"
    # the next start: auto
    again = MainWindow(synchronous=True, settings=settings, confirm=lambda title, text: True)
    qtbot.addWidget(again)
    assert again.controls.backend_combo.currentData() == "auto"


def test_a_backend_asked_by_name_is_shown_by_name(window):
    controls = window.controls
    controls.select_kernel("builtin", "grid-stride")
    small_shape(controls)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert controls.backend_combo.currentData() == "cpu"
    assert "as asked" in window.session.current.backend_note


def test_a_followed_kernel_file_runs_again_on_the_backend_asked(window):
    controls = window.controls
    assert window.controller.open_kernel_file(str(KERNELS / "block_chunks.py"))
    small_shape(controls)
    controls.backend_combo.setCurrentText("auto")
    window.run_action.trigger()
    assert window.session.current.request.backend != "auto"
    assert window.controller._watched_request.backend == "auto"


# -- 2. a cancelled Open dialog -------------------------------------------------------------

def test_a_cancelled_open_dialog_goes_back_to_the_kernel_shown(window, monkeypatch):
    from app.views.controls import OPEN_FILE
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName",
                        staticmethod(lambda *args, **kwargs: ("", "")))
    controls = window.controls
    choose(controls.kernel_combo, "builtin:tiled")
    small_shape(controls, 32, 16, 32)
    controls.grid_edit.setText("2x2")
    controls.block_edit.setText("16x16")
    choose(controls.kernel_combo, f"{OPEN_FILE}:")
    assert controls.kernel_choice() == ("builtin", "tiled")
    assert controls.kernel_combo.currentText() == "tiled"
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("2x2", "16x16")
    assert controls.request().kernel == "tiled"
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert "no kernel" not in window.maps_view.error_label.text()
    assert window.session.current is not None
    assert window.session.current.request.kernel == "tiled"


def test_a_cancelled_open_dialog_keeps_a_kernel_files_launch(window, monkeypatch):
    from app.views.controls import OPEN_FILE
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName",
                        staticmethod(lambda *args, **kwargs: ("", "")))
    controls = window.controls
    path = str((KERNELS / "block_chunks.py").resolve())
    assert window.controller.open_kernel_file(path)
    controls.grid_edit.setText("3")
    controls.block_edit.setText("64")
    choose(controls.kernel_combo, f"{OPEN_FILE}:")
    assert controls.kernel_choice() == ("file", path)
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("3", "64")
    # a file chosen in the dialog is added and selected
    chosen = str((KERNELS / "grid_chunks.py").resolve())
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName",
                        staticmethod(lambda *args, **kwargs: (chosen, "")))
    choose(controls.kernel_combo, f"{OPEN_FILE}:")
    assert controls.kernel_choice() == ("file", chosen)


# -- 3. no reference: CHECKED, never PASS or nan ----------------------------------------------

def test_a_run_without_a_reference_is_checked_everywhere_and_has_no_nan(window):
    from app.views.results_table import COLUMNS
    from kernels.result import Confirmation
    messages = told(window)
    controls = window.controls
    assert window.controller.open_kernel_file(str(ROOT / "examples" / "vector_add.py"))
    controls.reference_edit.clear()
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    result = window.session.current
    assert result.verdict.passed and result.verdict.reference_note
    done = [m for m in messages if m.startswith("done: ")]
    assert done and ": CHECKED (no reference given" in done[-1] and "PASS" not in done[-1]
    table = window.results_view.model()
    row = window.session.row_of(result)
    assert table.cell_text(row, COLUMNS.index("verdict")) == "CHECKED"
    assert table.cell_text(row, COLUMNS.index("relative error")) == "no reference"
    assert "nan" not in " ".join(table.cell_text(row, c) for c in range(len(COLUMNS)))
    # the GPU's run that follows an answer: CHECKED too, in the table and the status bar
    # (engine.confirm records the second run's word as shown: CHECKED here)
    confirmed = dataclasses.replace(result, follows=None, confirmation=Confirmation(
        "gpu", result.verdict.shown_word, result.verdict.summary(), (), ("verdict",)))
    window.controller._on_run_confirmed((result, confirmed))
    assert messages[-1].startswith("GPU: CHECKED") and "PASS" not in messages[-1]
    tip = table.data(table.index(row, 0), QtCore.Qt.ItemDataRole.ToolTipRole)
    assert "GPU: CHECKED" in tip and "PASS" not in tip


def test_a_run_held_to_a_reference_still_says_pass(window):
    from app.views.results_table import COLUMNS
    messages = told(window)
    controls = window.controls
    controls.select_kernel("builtin", "grid-stride")
    small_shape(controls)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    assert [m for m in messages if m.startswith("done: ")][-1].endswith(": PASS")
    rel = window.results_view.model().cell_text(0, COLUMNS.index("relative error"))
    assert rel != "no reference" and float(rel) < 1e-3


# -- 4. Find a failing case keeps the user's shape -----------------------------------------------

def test_find_a_failing_case_keeps_the_users_shape_and_settings(window, settings):
    controls = window.controls
    controls.select_kernel("builtin", "tid-rows")
    small_shape(controls, 48, 40, 36)
    controls.grid_edit.setText("2")
    controls.block_edit.setText("128")
    controls.backend_combo.setCurrentText("auto")
    window.run_action.trigger()
    own = window.session.current
    window.hunt_action.trigger()
    found = window.session.current
    assert found is not None and found.request == window.controller.last_hunt.result.request
    assert found.asked_request.backend == "auto"  # (its cases ran on the CPU, as auto asked)
    assert (found.request.m, found.request.k, found.request.n) != (48, 40, 36)
    # the fields are the user's still
    assert (controls.m_spin.value(), controls.k_spin.value(), controls.n_spin.value()) == \
        (48, 40, 36)
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("2", "128")
    assert controls.backend_combo.currentData() == "auto"
    window.save_settings()
    saved = settings.request()
    assert (saved.m, saved.k, saved.n, saved.grid, saved.block, saved.backend) == \
        (48, 40, 36, (2,), (128,), "auto")
    # the found case is a row: chosen, the panel shows it (to run it again), as asked
    window.results_view.selectRow(window.session.row_of(own))
    window.results_view.selectRow(window.session.row_of(found))
    assert window.session.current is found
    assert (controls.m_spin.value(), controls.k_spin.value(), controls.n_spin.value()) == \
        (found.request.m, found.request.k, found.request.n)
    assert controls.backend_combo.currentData() == "auto"


# -- 5. an edited shape is no longer a preset's launch ---------------------------------------------

def test_a_shape_edited_after_a_preset_is_no_longer_the_presets_launch(window):
    controls = window.controls
    controls.select_kernel("builtin", "grid-stride")
    controls.apply_preset("per-element")
    assert controls.launch_source() == "the preset: One thread per element"
    controls.m_spin.setValue(controls.m_spin.value() + 5)
    assert controls.launch_source() == "given"
    assert controls.request().launch_source == "given"
    controls.m_spin.setValue(controls.m_spin.value() - 5)  # back to what the preset set
    assert controls.launch_source() == "the preset: One thread per element"


def test_a_kernel_files_own_launch_holds_for_any_shape(window):
    controls = window.controls
    assert window.controller.open_kernel_file(str(KERNELS / "tiled_own_launch.py"))
    assert controls.launch_source().startswith("from the file, line")
    controls.n_spin.setValue(controls.n_spin.value() + 3)
    assert controls.launch_source().startswith("from the file, line")


# -- 6. a built-in kernel's own launch after another kernel's ----------------------------------

def test_a_builtin_kernel_takes_its_own_launch_after_a_1d_kernel_file(window):
    controls = window.controls
    small_shape(controls, 40, 8, 72)
    assert window.controller.open_kernel_file(str(KERNELS / "block_chunks.py"))
    assert "x" not in controls.block_edit.text()  # (a 1-D launch: the file's guess)
    controls.select_kernel("builtin", "tiled")
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("5x3", "16x16")
    assert controls.launch_source() == "the built-in kernel's preset"
    # chosen in the box, as the user does, after a file's literal 1-D launch
    assert window.controller.open_kernel_file(str(ROOT / "examples" / "vector_add.py"))
    assert controls.block_edit.text() == "256"
    choose(controls.kernel_combo, "builtin:tiled")
    assert controls.block_edit.text() == "16x16" and not controls.described


def test_a_launch_the_user_typed_stays_for_the_next_kernel(window):
    controls = window.controls
    assert window.controller.open_kernel_file(str(KERNELS / "block_chunks.py"))
    controls.grid_edit.setText("4")
    controls.block_edit.setText("128")
    choose(controls.kernel_combo, "builtin:grid-stride")
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("4", "128")
    assert controls.launch_source() == "given"


def test_the_launch_source_is_saved_with_the_request(settings):
    from kernels import RunRequest
    settings.set_request(RunRequest(kernel="tiled", grid=(8, 8), block=(16, 16),
                                    launch_source="from the file, line 37"))
    assert settings.request().launch_source == "from the file, line 37"


def test_a_save_that_does_not_parse_keeps_the_result_and_says_so_once(window, tmp_path):
    path = tmp_path / "block_chunks.py"
    path.write_text((KERNELS / "block_chunks.py").read_text())
    messages = told(window)
    controls = window.controls
    assert window.controller.open_kernel_file(str(path))
    small_shape(controls)
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    shown = window.session.current
    assert shown is not None
    path.write_text("def broken(:\n")
    window.controller._look_at_the_file()
    assert window.session.current is shown and window.results_view.results.rowCount() == 1
    assert "cannot run" in messages[-1] and "last good result" in messages[-1]
    assert messages[-2].endswith("was saved: running it again")  # (then said no more)


# -- 7. a restart, and a save of the file shown ---------------------------------------------------

SAXPY = (ROOT / "examples" / "saxpy.py").read_text()
TWO = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]",
                  "n": 1000, "alpha": 2.5, "v": "float32[300]", "w": "float32[300]"}


@cuda.jit
def saxpy(x, y, out, n, alpha):
    i = cuda.grid(1)
    if i < n:
        out[i] = alpha * x[i] + y[i]


@cuda.jit
def double(v, w):
    i = cuda.grid(1)
    if i < v.size:
        w[i] = 2 * v[i]
'''


def restarted(qtbot, settings, first):
    from app.main_window import MainWindow
    first.close()
    second = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(second)
    return second


def opened(qtbot, settings, path):
    from app.main_window import MainWindow
    window = MainWindow(synchronous=True, settings=settings)
    qtbot.addWidget(window)
    assert window.controller.open_kernel_file(str(path))
    return window


def test_a_restart_on_a_kernel_run_as_it_is_keeps_the_matmul_fields_apart(
        qtbot, settings, tmp_path):
    """saxpy's scalars and derived shape were saved as the C = A @ B fields:
    grid-stride chosen after a restart had Scalars 'n=1000, alpha=2.5', and Run
    was refused ('no scalar parameter alpha, n')."""
    path = tmp_path / "saxpy.py"
    path.write_text(SAXPY)
    first = opened(qtbot, settings, path)
    small_shape(first.controls, 40, 12, 36)
    second = restarted(qtbot, settings, first)
    controls = second.controls
    assert controls.described
    choose(controls.kernel_combo, "builtin:grid-stride")
    assert controls.scalars_edit.text() == ""
    assert controls.request().shape == (40, 12, 36)
    controls.backend_combo.setCurrentText("cpu")
    second.run_action.trigger()
    assert second.session.current is not None and second.session.current.verdict.passed


def test_a_restart_reads_the_files_threadmap_args_as_they_are_now(qtbot, settings, tmp_path):
    """THREADMAP_ARGS edited between sessions: the restart shows the new ones
    (the old were saved as if typed); Arguments typed in the app stay typed."""
    path = tmp_path / "saxpy.py"
    path.write_text(SAXPY)
    first = opened(qtbot, settings, path)
    second = restarted(qtbot, settings, first)
    path.write_text(SAXPY.replace("1000", "700"))
    third = restarted(qtbot, settings, second)
    assert third.controls.arguments_edit.text() == \
        "x=float32[700] y=float32[700] out=float32[700] n=700 alpha=2.5"
    typed = "x=float32[64] y=float32[64] out=float32[64] n=64 alpha=2.5"
    third.controls.arguments_edit.setText(typed)
    path.write_text(SAXPY.replace("1000", "500"))
    fourth = restarted(qtbot, settings, third)
    assert fourth.controls.arguments_edit.text() == typed


def test_a_kernel_gone_from_its_file_by_the_restart_gives_way_to_the_first(
        qtbot, settings, tmp_path):
    path = tmp_path / "two.py"
    path.write_text(TWO)
    first = opened(qtbot, settings, path)
    first.controls.function_combo.setCurrentText("double")
    assert first.controls.arguments_edit.text() == "v=float32[300] w=float32[300]"
    first.close()
    path.write_text(TWO.replace("def double(", "def twice("))
    second = restarted(qtbot, settings, first)
    controls = second.controls
    assert controls.function_combo.currentText() == "saxpy"
    assert controls.arguments_edit.text().startswith("x=float32[1000]")
    assert second.status.currentMessage() == "double is no longer in two.py: saxpy is chosen instead"
    controls.backend_combo.setCurrentText("cpu")
    second.run_action.trigger()
    assert second.session.current is not None and second.session.current.request.kernel == "saxpy"


def test_a_row_of_a_kernel_file_shown_again_announces_no_launch_of_its_file(window):
    """The row's own launch is shown; the file's ('launch 4 x 64: from the
    file, line 22') was announced, then replaced."""
    controls = window.controls
    assert window.controller.open_kernel_file(str(ROOT / "examples" / "saxpy.py"))
    controls.grid_edit.setText("2")
    controls.block_edit.setText("64")
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    choose(controls.kernel_combo, "builtin:grid-stride")
    small_shape(controls)
    window.run_action.trigger()
    messages = told(window)
    window.session.show(window.session.results[0])
    assert (controls.grid_edit.text(), controls.block_edit.text()) == ("2", "64")
    assert not any(m.startswith("launch") for m in messages)


def ran_a_copy_of_saxpy(window, tmp_path):
    """A copy of the saxpy example opened and run (on the CPU): its path, and
    the Run panel."""
    path = tmp_path / "saxpy.py"
    path.write_text(SAXPY)
    controls = window.controls
    assert window.controller.open_kernel_file(str(path))
    controls.backend_combo.setCurrentText("cpu")
    window.run_action.trigger()
    return path, controls


def test_a_save_keeps_what_was_typed_and_not_yet_run(window, tmp_path):
    """Follow the file reruns the shown run; Arguments and a launch typed
    since stay in the Run panel (they were replaced by the rerun's)."""
    path, controls = ran_a_copy_of_saxpy(window, tmp_path)
    typed = "x=float32[512] y=float32[512] out=float32[512] n=512 alpha=2.5"
    controls.arguments_edit.setText(typed)
    controls.grid_edit.setText("8")
    controls.block_edit.setText("32")
    path.write_text(SAXPY.replace("alpha * x[i] + y[i]", "alpha * x[i] + y[i] + 0.0"))
    window.controller._look_at_the_file()
    assert window.results_view.results.rowCount() == 2
    assert window.session.current.request.shape_label.startswith("x=float32[1000]")
    assert (controls.arguments_edit.text(), controls.grid_edit.text(),
            controls.block_edit.text()) == (typed, "8", "32")


def test_a_save_that_renames_and_adds_kernels_lists_them(window, tmp_path):
    path, controls = ran_a_copy_of_saxpy(window, tmp_path)
    path.write_text(SAXPY.replace("def saxpy(", "def saxpy_v2(")
                    + "\n\n@cuda.jit\ndef other(x, y, out, n, alpha):\n    pass\n")
    window.controller._look_at_the_file()
    names = [controls.function_combo.itemText(i) for i in range(controls.function_combo.count())]
    assert names == ["saxpy_v2", "other"] and controls.function_combo.isVisibleTo(window)
    assert "no kernel named 'saxpy' (found: saxpy_v2, other)" in \
        window.maps_view.error_label.text()
    window.run_action.trigger()
    assert window.session.current.request.kernel == "saxpy_v2"


def test_a_launch_past_cudas_limits_is_said_as_it_is_typed(window):
    """'1 block x 2,000 threads' in plain text until Run refused it: the
    line under Launch says the limit, in red, as it is typed."""
    controls = window.controls
    controls.grid_edit.setText("1")
    controls.block_edit.setText("2000")
    assert controls.launch_info.text() == "block x = 2,000 is past CUDA's limit of 1,024"
    assert "c62828" in controls.launch_info.styleSheet()
    controls.block_edit.setText("32x64")
    assert "2,048 threads is past CUDA's limit of 1,024 threads per block" in \
        controls.launch_info.text()
    controls.grid_edit.setText("70000x70000")
    controls.block_edit.setText("256")
    assert controls.launch_info.text() == "grid y = 70,000 is past CUDA's limit of 65,535"
    controls.grid_edit.setText("4")
    assert controls.launch_info.text().startswith("4 blocks x 256 threads = 1,024 threads")
    assert controls.launch_info.styleSheet() == ""


def test_a_file_that_no_longer_describes_its_arrays_comes_back_as_c_equals_a_at_b(
        qtbot, settings, tmp_path):
    """Run as it is (its B did not fit C = A @ B), then THREADMAP_ARGS
    dropped between sessions: the restart shows M, K and N, not empty
    Arguments that Run would refuse."""
    from tests.test_arguments import MATMUL
    path = tmp_path / "matmul.py"
    path.write_text(MATMUL.replace('"float32[20, 36]"', '"float32[21, 36]"'))
    first = opened(qtbot, settings, path)
    assert first.controls.described
    first.close()
    path.write_text(MATMUL.split("THREADMAP_ARGS")[0] + MATMUL.split("\n\n\n", 1)[1])
    second = restarted(qtbot, settings, first)
    controls = second.controls
    assert not controls.described and controls.m_spin.isVisibleTo(second)
    small_shape(controls)
    controls.backend_combo.setCurrentText("cpu")
    second.run_action.trigger()
    assert second.session.current is not None and second.session.current.verdict.passed
