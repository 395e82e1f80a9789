"""threadmap check: many kernel files, shapes and launches; one report."""
import csv
import json
import shutil
import time
from pathlib import Path

import pytest

from tests.test_hunt import HANGS, SEED

ROOT = Path(__file__).resolve().parents[1]


def threadmap(*args):
    from app.launcher import main
    return main(list(args))


@pytest.fixture
def course(tmp_path):
    """Submissions of one exercise: right, wrong, broken and one that hangs."""
    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    shutil.copy(ROOT / "kernels" / "sources" / "builtin" / "grid_stride.py",
                folder / "alice" / "grid_stride.py")
    (folder / "bob.py").write_text(SEED)
    (folder / "carol.py").write_text("from numba import cuda\n\ndef matmul(A, B, C:\n")
    (folder / "dave.py").write_text(HANGS)
    (folder / "notes.txt").write_text("not a kernel")
    return folder


def rows_of(out):
    with open(out / "report.csv") as handle:
        return list(csv.DictReader(handle))


def test_a_folder_of_submissions_gives_one_report_and_never_stops(course, tmp_path, capsys):
    out = tmp_path / "report"
    assert threadmap("check", str(course), "--shapes", "33x7x20,16x16x16",
                     "--launches", "file,1:64", "--out", str(out), "--time-limit", "8") == 0
    rows = rows_of(out)
    by_file = {}
    for row in rows:
        by_file.setdefault(Path(row["file"]).name, []).append(row)
    assert set(by_file) == {"grid_stride.py", "bob.py", "carol.py", "dave.py"}
    assert [r["verdict"] for r in by_file["grid_stride.py"]] == ["PASS"] * 4
    # no launch in the file: the one used is said to be guessed, and how
    guessed = [r for r in by_file["grid_stride.py"] if r["shape"] == "33x7x20"][0]
    assert guessed["launch"] == "guessed: 3:256"
    assert guessed["launch_source"] == ("guessed: 1-D kernel, one thread per element of C in "
                                        "blocks of 256")
    assert all(r["verdict"] == "FAIL" for r in by_file["bob.py"])  # the seed's kernel
    assert any("more than one thread" in r["reasons"] for r in by_file["bob.py"])
    [carol] = by_file["carol.py"]  # does not parse: one failed row, with its line
    assert carol["verdict"] == "ERROR" and "carol.py:3" in carol["reasons"]
    dave = by_file["dave.py"]  # hangs: a failed row, and its other cases are not run
    assert dave[0]["verdict"] == "ERROR" and "time limit" in dave[0]["reasons"]
    assert all(r["reasons"].startswith("not run") for r in dave[1:])
    report = json.loads((out / "report.json").read_text())
    assert len(report["rows"]) == len(rows) == 4 + 4 + 1 + 4
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 8  # a count map per case that ran
    assert "carol.py" in page and "time limit" in page
    assert "guessed: 3:256" in page  # in the case's cell
    assert "13 cases: 4 PASS, 4 FAIL, 5 ERROR" in capsys.readouterr().out


def test_dask_gives_the_same_report_as_the_local_pool(course, tmp_path):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is an optional "
                                      "extra (pip install 'threadmap[dask]')")
    from kernels.check import parse_launches, parse_shapes, run_check

    paths = [course / "alice", course / "bob.py", course / "carol.py"]
    shapes, launches = parse_shapes("20x5x9"), parse_launches("file,2:32")
    local = run_check(paths, shapes, launches, workers=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        on_dask = run_check(paths, shapes, launches, scheduler=cluster.scheduler_address)

    def same(rows):  # (times differ from run to run; nothing else may)
        return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]

    assert same(on_dask) == same(local) and len(local) == 2 + 2 + 1


def test_a_folder_without_kernels_is_an_error_and_an_empty_report(tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "helpers.py").write_text("def add(a, b):\n    return a + b\n")
    out = tmp_path / "report"
    assert threadmap("check", str(folder), "--out", str(out)) == 2
    assert "no kernels" in capsys.readouterr().err
    assert rows_of(out) == [] and json.loads((out / "report.json").read_text()) == {"rows": []}


def test_an_unreachable_scheduler_is_named_within_ten_seconds(course, tmp_path, capsys):
    pytest.importorskip("distributed", reason="Dask distributed is an optional extra")
    started = time.monotonic()
    assert threadmap("check", str(course / "bob.py"), "--out", str(tmp_path / "r"),
                     "--scheduler", "tcp://127.0.0.1:9") == 2
    assert time.monotonic() - started < 10
    assert "tcp://127.0.0.1:9" in capsys.readouterr().err


@pytest.mark.parametrize("option, value, message", [
    ("--launches", "4-256", "GRID:BLOCK"), ("--shapes", "4x4", "MxKxN"),
    ("--workers", "0", "--workers"), ("--time-limit", "-3", "--time-limit")])
def test_bad_options_are_refused(course, tmp_path, capsys, option, value, message):
    assert threadmap("check", str(course / "bob.py"), "--out", str(tmp_path / "r"),
                     option, value) == 2
    assert message in capsys.readouterr().err


WRONG_REDUCE = '''from numba import cuda, float32


@cuda.jit
def block_sum(x, partial):
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * 128 + t]
    cuda.syncthreads()
    if t == 0:
        acc = 0.0
        for j in range(127):  # the last element left out
            acc += s[j]
        partial[cuda.blockIdx.x] = acc
'''


@pytest.fixture
def reductions(tmp_path):
    """An assignment's submissions: two right block sums, one wrong, and one
    whose parameters are another exercise's."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("reduce_interleaved.py", "reduce_sequential.py", "saxpy.py"):
        shutil.copy(ROOT / "examples" / name, folder / name)
    (folder / "eve.py").write_text(WRONG_REDUCE)
    return folder


def test_the_teachers_description_and_reference_grade_every_submission(
        reductions, tmp_path, capsys):
    out = tmp_path / "report"
    assert threadmap("check", str(reductions), "--arg", "x=float32[2048]",
                     "--arg", "partial=float32[16]", "--launches", "16:128",
                     "--reference", f"{ROOT / 'examples' / 'references.py'}:block_sums",
                     "--out", str(out)) == 0
    rows = {Path(r["file"]).name: r for r in rows_of(out)}
    for right in ("reduce_interleaved.py", "reduce_sequential.py"):
        # (PASS, not CHECKED: held to the reference; on --arg's 2,048, not the file's 1,024)
        assert rows[right]["verdict"] == "PASS", rows[right]
        assert rows[right]["shape"] == "x=float32[2048], partial=float32[16]"
    assert rows["eve.py"]["verdict"] == "FAIL"
    assert "16 elements off by more than" in rows["eve.py"]["reasons"]
    assert rows["saxpy.py"]["verdict"] == "ERROR"
    assert "kernel 'saxpy' has no parameter 'partial'" in rows["saxpy.py"]["reasons"]
    assert "4 cases: 2 PASS, 1 FAIL, 1 ERROR" in capsys.readouterr().out


def test_without_a_reference_the_description_gives_checks_only(reductions, tmp_path):
    out = tmp_path / "report"
    assert threadmap("check", str(reductions / "eve.py"), "--arg", "x=float32[1024]",
                     "--arg", "partial=float32[8]", "--launches", "8:128",
                     "--out", str(out)) == 0
    [row] = rows_of(out)
    assert row["verdict"] == "CHECKED"  # (its wrong sums are not seen without a reference)


@pytest.mark.parametrize("extra, message", [
    (("--reference", "{folder}/mine.py:block_sums"), "is among the files checked"),
    (("--shapes", "4x4x4"), "--shapes and --arg arrays"),
    (("--arg", "x=float32[4096"), "--arg x"),
])
def test_check_refuses_a_submitted_reference_and_clashing_shapes(
        reductions, tmp_path, capsys, extra, message):
    shutil.copy(ROOT / "examples" / "references.py", reductions / "mine.py")
    out = tmp_path / "report"
    extra = tuple(e.format(folder=reductions) for e in extra)
    assert threadmap("check", str(reductions), "--arg", "partial=float32[8]", *extra,
                     "--out", str(out)) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # (nothing half-written)


def test_scalars_alone_in_arg_keep_the_shapes_and_a_failing_reference_is_an_error(
        reductions, tmp_path):
    (reductions / "scaled.py").write_text(
        "from numba import cuda\n\n\n@cuda.jit\ndef scaled(A, B, C, alpha):\n"
        "    i, j = cuda.grid(2)\n    if i < C.shape[0] and j < C.shape[1]:\n"
        "        acc = 0.0\n        for k in range(A.shape[1]):\n"
        "            acc += A[i, k] * B[k, j]\n        C[i, j] = alpha * acc\n")
    out = tmp_path / "report"
    # a scalar alone: the matmul runs on --shapes' 8x8x8 with it (not on defaults)
    assert threadmap("check", str(reductions / "scaled.py"), "--shapes", "8x8x8",
                     "--launches", "1x1:8x8", "--arg", "alpha=1", "--out", str(out)) == 0
    [row] = rows_of(out)
    assert (row["shape"], row["verdict"]) == ("8x8x8", "PASS"), row
    refs = tmp_path / "refs.py"
    refs.write_text("def broken(x):\n    raise KeyError('oops')\n")
    assert threadmap("check", str(reductions / "reduce_sequential.py"), "--launches", "8:128",
                     "--reference", f"{refs}:broken", "--out", str(out)) == 0
    [row] = rows_of(out)
    # (the teacher's reference failed: not a grade, neither PASS nor CHECKED)
    assert row["verdict"] == "ERROR" and "raised KeyError" in row["reasons"]


def test_a_file_name_that_is_not_utf8_is_written_in_every_report(tmp_path):
    """A submission named with bytes that are not UTF-8 (Python holds them as
    surrogates) is graded, and every report format shows its name with the
    bytes escaped: writing report.csv had failed after every case ran."""
    import os

    folder = tmp_path / "submissions"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/caf\xe9.py"  # (latin-1 bytes, not UTF-8)
    with open(raw, "wb") as handle:
        handle.write((ROOT / "kernels" / "sources" / "builtin" / "grid_stride.py").read_bytes())
    out = tmp_path / "report"
    assert threadmap("check", str(folder), "--shapes", "16x8x16", "--launches", "1:64",
                     "--out", str(out)) == 0
    (row,) = rows_of(out)
    assert row["file"].endswith("caf\\xe9.py") and row["verdict"] == "PASS"
    assert "caf\\\\xe9.py" in (out / "report.json").read_text()
    assert "caf\\xe9.py" in (out / "report.html").read_text(encoding="utf-8")
