"""Diagnoses (issue 21): a rule fires only where its source pattern and the
run's evidence both hold, and says the cause word for word in the kernel's
names and the run's numbers (worked out by hand in each test)."""
import json
from pathlib import Path

import pytest

from kernels import Diagnosis, RunRequest, run

KERNELS = Path(__file__).parent / "kernels"


def _run(file: str, kernel: str, shape, grid, block):
    m, k, n = shape
    return run(RunRequest(kernel=kernel, kernel_file=str(KERNELS / file), m=m, k=k, n=n,
                          grid=grid, block=block, backend="cpu"))


def test_an_and_guard_is_named_with_its_first_thread_and_the_or_that_fixes_it():
    # C is 33 x 19; 5 x 3 blocks of 8 x 8 threads: x (rows) 0..39, y (columns) 0..23.
    # Past `if x >= 33 and y >= 19: return` go 7 x 19 threads with x >= 33 and
    # 33 x 5 with y >= 19: 133 + 165 = 298 stores outside C.  The lowest global
    # id among them: block (4, 0) (blocks 0-3 hold x < 32, y < 8), thread
    # (1, 0): x = 33, y = 0, global 4 x 64 + 1 = 257.
    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    assert result.verdict.reasons == ("298 out-of-bounds writes of C (first: thread 257 at "
                                      "[33, 0])",)
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "and-guard", (29,),
        "the guard at line 29 returns only when `x >= C.shape[0]` and `y >= C.shape[1]` both "
        "hold, so a thread with one coordinate inside C and the other outside goes on and "
        "stores outside C (33 x 19)",
        "298 out-of-bounds writes of C; the first by block (4, 0), thread (1, 0) (global 257) "
        "at [33, 0]",
        "line 29: `if x >= C.shape[0] or y >= C.shape[1]:` (return when any coordinate is out "
        "of range)")
    source_line = (KERNELS / "and_guard.py").read_text().splitlines()[28]
    assert source_line.strip() == "if x >= C.shape[0] and y >= C.shape[1]:"


def test_work_indexed_by_thread_alone_names_the_blocks_that_repeat_it():
    # 40 x 30 = 1,200 elements; range(tx, C.size, 1024) with tx 0..255 stores
    # elements 0..255 and 1,024..1,199 (tx < 176): 432 elements, each by the
    # same thread of all 4 blocks; the first, [0, 0], by blocks 0 and 3.
    result = _run("thread_index_only.py", "matmul_1024", (40, 8, 30), (4,), (256,))
    assert "768 of 1,200 elements of C never written" in result.verdict.reasons
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "thread-index-only", (17,),
        "C[row, col] at line 17 is indexed from cuda.threadIdx but never cuda.blockIdx, so "
        "each of the 4 blocks computes the same elements as block 0",
        "432 elements of C written by threads of more than one block; the first, [0, 0], by "
        "blocks (0, 0) and (3, 0)",
        "index with the global thread id, `cuda.grid(1)` (blockIdx * blockDim + threadIdx), "
        "and share the work among the whole grid's threads, `cuda.gridsize(1)`, not the "
        "block's")


def test_the_builtin_chunked_kernel_on_two_blocks_is_diagnosed():
    result = run(RunRequest(kernel="one-block-chunks", m=40, k=8, n=30, grid=(2,),
                            block=(256,), backend="cpu"))
    assert [d.rule for d in result.diagnoses] == ["thread-index-only"]
    assert result.diagnoses[0].evidence.startswith("1,200 elements of C written by threads "
                                                   "of more than one block")


@pytest.mark.parametrize("file, kernel, shape, grid, block", [
    # the `and` return is there, but a correct guard keeps every store inside C
    ("and_guard_inner_guard.py", "guarded_twice", (33, 17, 19), (5, 3), (8, 8)),
    # blockDim chunks placed by blockIdx: no block repeats another's elements
    ("block_chunks.py", "block_chunks", (40, 8, 30), (5,), (256,)),
])
def test_near_misses_that_fail_for_another_reason_get_no_diagnosis(file, kernel, shape, grid,
                                                                    block):
    result = _run(file, kernel, shape, grid, block)
    assert not result.verdict.passed  # (they fail: the rules had a chance to fire)
    assert result.diagnoses == ()


def test_the_pattern_without_its_evidence_stays_silent():
    # threadIdx alone on one block of 1,024 threads: right, and nothing to diagnose
    result = _run("thread_index_only.py", "matmul_1024", (40, 8, 30), (1,), (1024,))
    assert result.verdict.passed and result.diagnoses == ()


@pytest.mark.parametrize("kernel, shape, grid, block", [
    ("grid-stride", (37, 11, 29), (3,), (64,)),
    ("grid-stride-colmajor", (37, 11, 29), (3,), (64,)),
    ("naive-2d", (37, 11, 29), (3, 5), (16, 8)),
    ("tiled", (37, 11, 29), (2, 3), (16, 16)),
])
def test_no_diagnosis_on_the_correct_builtin_kernels(kernel, shape, grid, block):
    m, k, n = shape
    result = run(RunRequest(kernel=kernel, m=m, k=k, n=n, grid=grid, block=block,
                            backend="cpu"))
    assert result.verdict.passed and result.diagnoses == ()


def test_diagnoses_reach_result_json_the_summary_and_the_check_report(tmp_path, capsys):
    from kernels.cli import main

    kernel = str(KERNELS / "thread_index_only.py")
    main(["run", "--kernel-file", kernel, "--shape", "40x8x30", "--grid", "4", "--block", "256",
          "--backend", "cpu", "--out", str(tmp_path / "run")])
    printed = capsys.readouterr().out
    assert ("  why (thread-index-only): line 17: C[row, col] at line 17 is indexed from "
            "cuda.threadIdx but never cuda.blockIdx") in printed
    assert "    fix: index with the global thread id" in printed
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert [d["rule"] for d in saved["diagnoses"]] == ["thread-index-only"]
    assert saved["diagnoses"][0]["lines"] == [17]
    assert set(saved["diagnoses"][0]) == {"rule", "lines", "message", "evidence", "fix"}

    main(["check", kernel, "--shapes", "40x8x30", "--launches", "4:256",
          "--out", str(tmp_path / "check")])
    capsys.readouterr()
    csv_text = (tmp_path / "check" / "report.csv").read_text()
    assert "diagnoses" in csv_text.splitlines()[0].split(",")
    assert "line 17: C[row, col] at line 17 is indexed from cuda.threadIdx" in csv_text
    assert "why:" in (tmp_path / "check" / "report.html").read_text()


def test_the_python_api_and_the_source_findings_put_the_cause_first():
    from kernels import line_findings
    from kernels.live import ThreadMapResult

    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    found = [f for f in line_findings(result) if f.line == 29]
    assert found and found[0].kind == "cause" and found[0].fault
    assert "Fix: line 29: `if x >= C.shape[0] or y >= C.shape[1]:`" in found[0].text
    wrapped = ThreadMapResult(result, str(KERNELS / "and_guard.py"))
    assert wrapped.diagnoses == result.diagnoses and wrapped.diagnoses[0].rule == "and-guard"


def test_the_app_lists_the_cause_first_on_the_source_page_and_beside_the_verdict(qtbot):
    from app.models.session import Session
    from app.views.maps_view import MapsView

    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    session = Session()
    view = MapsView(session)
    qtbot.addWidget(view)
    try:
        session.add_result(result)
        first = view.source_view.list.item(0).text()
        assert first.startswith("line 29, cause: the guard at line 29 returns only when")
        assert "Fix: line 29: `if x >= C.shape[0] or y >= C.shape[1]:`" in first
        row = view.source_view.row_of_line(29)
        assert view.source_view.table.item(row, 0).text() == "29!"
        assert "<b>why</b>, line 29: the guard at line 29 returns only when" in \
            view.verdict_label.text()
    finally:
        session.close()


def test_the_failing_case_that_hunt_finds_carries_its_diagnosis():
    from kernels.search import hunt

    # Its smallest failing case: 1x1x1 on 4 blocks of 64, the one element of C
    # stored by thread 0 of each block.
    report = hunt(RunRequest(kernel="matmul_1024",
                             kernel_file=str(KERNELS / "thread_index_only.py"), backend="cpu"),
                  budget=120)
    assert report.failing is not None and report.failing.shape == (1, 1, 1)
    assert (report.failing.grid, report.failing.block) == ((4,), (64,))
    assert [d.rule for d in report.diagnoses] == ["thread-index-only"]
    assert ("\n  why (thread-index-only): line 17: C[row, col] at line 17 is indexed from "
            "cuda.threadIdx but never cuda.blockIdx, so each of the 4 blocks computes the same "
            "elements as block 0\n    evidence: 1 element of C written by threads of more than "
            "one block; the first, [0, 0], by blocks (0, 0) and (3, 0)") in report.summary()
    assert report.to_json()["diagnoses"][0]["rule"] == "thread-index-only"
