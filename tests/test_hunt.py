"""threadmap hunt: the smallest failing (shape, launch) of a kernel file."""
import json
import shutil
from pathlib import Path

import pytest

from kernels import RunRequest

ROOT = Path(__file__).resolve().parents[1]

#: the seed's kernel (the built-in tid-rows), as a student would hand it in
SEED = (ROOT / "kernels" / "sources" / "builtin" / "tid_rows.py").read_text()

HANGS = '''from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i = cuda.grid(1)
    while i >= 0:
        i += 0
    C[0, 0] = A[0, 0] * B[0, 0]
'''


def threadmap(*args):
    from app.launcher import main
    return main(list(args))


def test_the_seed_kernel_fails_at_its_smallest_case(tmp_path, capsys):
    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "smallest failing case" in printed
    report = json.loads((out / "hunt.json").read_text())
    failing = report["failing"]
    assert failing["verdict"] == "FAIL" and failing["shape"] == [1, 1, 1]
    # the smallest: no case before it fails, and it is the last one tried
    assert report["cases"][-1] == failing
    assert all(c["verdict"] in ("PASS", "skipped") for c in report["cases"][:-1])
    assert any("more than one thread" in r for r in failing["reasons"])
    assert {p.name for p in out.iterdir()} == {"hunt.json", "result.json", "maps.npz"}
    result = json.loads((out / "result.json").read_text())
    assert result["request"]["m"] == 1 and "hunt" in result["request"]["launch_source"]


def test_a_grid_stride_kernel_passes_every_case(tmp_path, capsys):
    kernel = tmp_path / "grid_stride.py"
    shutil.copy(ROOT / "kernels" / "sources" / "builtin" / "grid_stride.py", kernel)
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(out),
                     "--budget", "120") == 0
    report = json.loads((out / "hunt.json").read_text())
    assert report["failing"] is None and report["stopped"] is None
    tried = [c for c in report["cases"] if c["verdict"] != "skipped"]
    assert len(tried) >= 40 and all(c["verdict"] == "PASS" for c in tried)
    shapes = {tuple(c["shape"]) for c in tried}
    assert (1, 1, 1) in shapes and (100, 37, 90) in shapes  # ones, ragged
    assert f"no failing case: {len(tried)} cases tried" in capsys.readouterr().out
    assert [p.name for p in out.iterdir()] == ["hunt.json"]


def test_a_naive_kernel_fails_where_the_launch_does_not_cover_c(tmp_path):
    from kernels.search import hunt
    kernel = tmp_path / "naive.py"
    shutil.copy(ROOT / "kernels" / "sources" / "builtin" / "naive_2d.py", kernel)
    report = hunt(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"), budget=120)
    assert report.failing is not None and "fewer threads than elements" in report.failing.why
    assert "grid-stride loop" in report.hint


def test_a_kernel_that_hangs_is_a_failed_case_not_a_hung_search(tmp_path, monkeypatch):
    from kernels import search
    monkeypatch.setattr(search, "CASE_LIMIT", 4.0)
    kernel = tmp_path / "hangs.py"
    kernel.write_text(HANGS)
    report = search.hunt(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"),
                               budget=60)
    assert report.failing is not None
    assert "did not finish" in report.failing.reasons[0]
    assert report.seconds < 40


def test_bad_hunts_are_refused(tmp_path, capsys):
    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(tmp_path / "o"),
                     "--budget", "-1") == 2
    broken = tmp_path / "broken.py"
    broken.write_text("from numba import cuda\n\n@cuda.jit\ndef k(A, B, C):\n    C[0, 0 = 1\n")
    assert threadmap("hunt", "--kernel-file", str(broken), "--out", str(tmp_path / "o")) == 2
    assert "broken.py" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("shape", [(1, 1, 1), (100, 37, 90)])
def test_the_cases_cover_the_shapes_the_issue_names(shape):
    from kernels.search import SHAPES
    assert shape in SHAPES
    assert any(1 in s for s in SHAPES) and any(s[0] != s[2] for s in SHAPES)


def test_the_app_s_button_finds_the_failing_case_and_opens_it(qtbot, tmp_path):
    from app.main_window import MainWindow
    from app.settings import Settings

    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    window = MainWindow(synchronous=True, settings=Settings(str(tmp_path / "s.ini")),
                        confirm=lambda title, text: True)
    qtbot.addWidget(window)
    assert window.controller.open_kernel_file(str(kernel))
    window.controls.hunt_button.click()
    shown = window.session.current
    assert shown is not None and not shown.verdict.passed
    assert (shown.request.m, shown.request.k, shown.request.n) == (1, 1, 1)
    assert "hunt" in shown.request.launch_source
    assert window.tabs.currentWidget() is window.maps_view
    assert window.status.currentMessage().startswith("smallest failing case")
    assert window.controls.hunt_button.isEnabled()


def test_hunt_labels_are_true_respect_the_kernel_s_block_and_can_be_pinned():
    """(issue 20: 1x1x1 on a block of 32 was called "fewer threads than
    elements", and the search tried 8x8 blocks on a kernel of 16x16 tiles)"""
    from kernels.search import hunt_cases

    for case in hunt_cases(RunRequest(kernel="grid-stride")):
        m, _, n = case.shape
        fewer = case.threads < m * n
        assert ("fewer threads than elements" in case.why) == fewer, case.label()
        assert ("more threads than elements" in case.why) == (case.threads > m * n)
    tiled = hunt_cases(RunRequest(kernel="tiled"))
    assert {case.block for case in tiled} == {(16, 16)}  # its TPB x TPB shared tiles
    pinned = hunt_cases(RunRequest(kernel="naive-2d"), (2, 3), (8, 4))
    assert {(case.grid, case.block) for case in pinned} == {((2, 3), (8, 4))}
    assert len(pinned) == len({case.shape for case in pinned}) > 5
