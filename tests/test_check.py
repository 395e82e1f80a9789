"""threadmap check: many kernel files, shapes and launches; one report."""
import csv
import json
import os
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
    err = capsys.readouterr().err
    assert "no kernels" in err and len(err.strip().splitlines()) == 1  # (one line: why)
    assert rows_of(out) == [] and json.loads((out / "report.json").read_text()) == {
        "rows": [], "skipped": [{"file": str(folder / "helpers.py"),
                                 "why": "no @cuda.jit kernel"}]}


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


EXAMPLES = ROOT / "examples"
#: The course's kernel files: every .py of examples/ but its references.
EXAMPLE_KERNELS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "references.py")


def test_the_course_passes_at_its_own_launches_against_its_own_references(tmp_path, capsys):
    """``check examples --reference examples/references.py``: each example at
    the launch its host code states and on its THREADMAP_ARGS, held to the
    function named after it, PASS; references.py is skipped, not a row.
    (Before: 1:1024 and 4:256 besides, which overrun a reduction's shared
    array of 128, and one --reference FILE:FUNCTION for every file.)"""
    out = tmp_path / "report"
    assert threadmap("check", str(EXAMPLES), "--reference", str(EXAMPLES / "references.py"),
                     "--out", str(out)) == 0
    rows = rows_of(out)
    assert len(EXAMPLE_KERNELS) == 18
    assert sorted(Path(r["file"]).name for r in rows) == EXAMPLE_KERNELS  # one row each
    assert [r["verdict"] for r in rows] == ["PASS"] * len(EXAMPLE_KERNELS), \
        [(r["file"], r["verdict"], r["reasons"]) for r in rows]
    for row in rows:
        assert row["launch"].startswith("file: ") and \
            row["launch_source"].startswith("from the file, line "), row
    by_file = {Path(r["file"]).name: r for r in rows}
    # reduce_sequential.py: reduce_sequential[BLOCKS, TPB] with BLOCKS = 8, TPB = 128
    assert by_file["reduce_sequential.py"]["launch"] == "file: 8:128"
    assert by_file["reduce_sequential.py"]["shape"] == "x=float32[1024], partial=float32[8]"
    captured = capsys.readouterr()
    assert "18 cases: 18 PASS, 0 FAIL, 0 ERROR; 1 file skipped" in captured.out
    assert f"skipped {EXAMPLES / 'references.py'}: your --reference" in captured.err
    assert json.loads((out / "report.json").read_text())["skipped"] == [
        {"file": str(EXAMPLES / "references.py"),
         "why": "your --reference: host code, not graded"}]
    assert "Not graded" in (out / "report.html").read_text()


def test_other_launches_run_only_when_asked_and_each_row_says_whose(tmp_path):
    path = EXAMPLES / "reduce_sequential.py"
    out = tmp_path / "report"
    assert threadmap("check", str(path), "--out", str(out)) == 0
    [row] = rows_of(out)  # (before: 3 rows, at file, 1:1024 and 4:256)
    assert (row["launch"], row["verdict"]) == ("file: 8:128", "CHECKED"), row
    assert threadmap("check", str(path), "--launches", "file,4:256", "--out", str(out)) == 0
    own, given = rows_of(out)
    assert own["launch_source"] == "from the file, line 31"
    assert (given["launch"], given["launch_source"]) == ("4:256", "given: --launches 4:256")
    # (blocks of 256 overrun its shared array of 128: a FAIL the file's launch never has)
    assert given["verdict"] == "FAIL" and "out-of-bounds" in given["reasons"]


VECTOR_ADD = (EXAMPLES / "vector_add.py").read_text()


@pytest.fixture
def week(tmp_path):
    """A course folder: kernels, a helper without a kernel, and the
    teacher's references.py at its top."""
    folder = tmp_path / "week1"
    folder.mkdir()
    shutil.copy(EXAMPLES / "vector_add.py", folder / "vector_add.py")  # found by its kernel
    (folder / "add_twice.py").write_text(VECTOR_ADD)  # found by the file's name
    (folder / "saxpy.py").write_text((EXAMPLES / "saxpy.py").read_text())  # none for it
    (folder / "helpers.py").write_text("def clamp(x, top):\n    return min(x, top)\n")
    (folder / "references.py").write_text(
        "def vector_add(x, y):\n    return x + y\n\n\n"
        "def add_twice(x, y):\n    return 2 * (x + y)\n")
    return folder


def test_a_reference_module_holds_each_kernel_to_the_function_named_after_it(week, tmp_path,
                                                                               capsys):
    out = tmp_path / "report"
    assert threadmap("check", str(week), "--reference", str(week / "references.py"),
                     "--out", str(out)) == 0
    rows = {Path(r["file"]).name: r for r in rows_of(out)}
    assert set(rows) == {"vector_add.py", "add_twice.py", "saxpy.py"}  # (helpers.py: no row)
    assert rows["vector_add.py"]["verdict"] == "PASS"
    # add_twice.py's kernel is vector_add: the kernel's name comes first (x + y, not twice it)
    assert rows["add_twice.py"]["verdict"] == "PASS"
    saxpy = rows["saxpy.py"]
    assert saxpy["verdict"] == "CHECKED"
    assert saxpy["reasons"].startswith(f"no reference: {week / 'references.py'} has no "
                                       "function 'saxpy'")
    skipped = json.loads((out / "report.json").read_text())["skipped"]
    assert skipped == [
        {"file": str(week / "helpers.py"), "why": "no @cuda.jit kernel"},
        {"file": str(week / "references.py"), "why": "your --reference: host code, not graded"}]
    assert f"skipped {week / 'helpers.py'}: no @cuda.jit kernel" in capsys.readouterr().err


def test_a_file_of_one_kernel_falls_back_on_the_function_named_after_the_file(week, tmp_path):
    (week / "references.py").write_text("def add_twice(x, y):\n    return x + y\n")
    out = tmp_path / "report"
    assert threadmap("check", str(week / "add_twice.py"), "--reference",
                     str(week / "references.py"), "--out", str(out)) == 0
    [row] = rows_of(out)
    assert row["verdict"] == "PASS", row  # (add_twice, its kernel vector_add not found)
    (week / "references.py").write_text("def add_twice(x, y):\n    return 2 * (x + y)\n")
    assert threadmap("check", str(week / "add_twice.py"), "--reference",
                     str(week / "references.py"), "--out", str(out)) == 0
    [row] = rows_of(out)
    assert row["verdict"] == "FAIL", row  # (held to it: not checks only)


def test_the_course_passes_with_no_flag_its_references_found_beside_it(tmp_path, capsys):
    """``threadmap check examples``, nothing more: the course's
    references.py at the top of the folder checked holds each kernel to the
    function named after it, and every example passes."""
    out = tmp_path / "report"
    assert threadmap("check", str(EXAMPLES), "--out", str(out)) == 0
    rows = rows_of(out)
    assert [r["verdict"] for r in rows] == ["PASS"] * len(EXAMPLE_KERNELS), \
        [(r["file"], r["verdict"], r["reasons"]) for r in rows]
    assert all("run in the sandbox" in r["reference"] for r in rows)
    err = capsys.readouterr().err
    assert f"skipped {EXAMPLES / 'references.py'}: the course's references" in err


def test_a_course_references_py_runs_in_the_kernels_sandbox_never_in_check(week):
    """references.py at the top of the folder is among the files checked,
    so it is not the teacher's by being there: it is imported and called in
    each kernel's sandboxed child, never in check's own process (here, the
    test's: its reference answers wrongly in this process only)."""
    from kernels.check import (
        Launch,
        check_kernel,
        course_references,
        find_submissions,
        tasks,
        with_course_references,
    )

    (week / "references.py").write_text(
        "import os\n\n\n"
        "def vector_add(x, y):\n"
        f"    return x - y if os.getpid() == {os.getpid()} else x + y\n")
    courses = course_references([week])
    assert courses == {str(week / "references.py"): frozenset({"vector_add"})}
    work = with_course_references(tasks(find_submissions([week], False)), courses)
    task = next(t for t in work if t.file.endswith("vector_add.py"))
    assert task.reference_in_child and task.reference == f"{week / 'references.py'}:vector_add"
    [row] = check_kernel(task, shapes=[], launches=(Launch("file"),))
    assert row["verdict"] == "PASS", row  # (x - y, had it run here)


def test_a_references_py_below_the_folder_checked_or_a_link_is_not_used(week, tmp_path,
                                                                          capsys):
    """Only references.py at the top of a folder given is found on its own,
    and only a regular file: one in a student's folder, or a link at the
    top, holds nothing (its kernels are CHECKED, and it never runs)."""
    from kernels.check import course_references

    marker = tmp_path / "marker"
    body = f"open({str(marker)!r}, 'w').close()\n\n\ndef vector_add(x, y):\n    return x\n"
    (week / "alice").mkdir()
    (week / "alice" / "references.py").write_text(body)
    shutil.copy(EXAMPLES / "vector_add.py", week / "alice" / "vector_add.py")
    (week / "references.py").unlink()
    (week / "references.py").symlink_to(week / "alice" / "references.py")
    assert course_references([week]) == {}
    out = tmp_path / "report"
    assert threadmap("check", str(week), "--out", str(out)) == 0
    rows = {r["file"]: r for r in rows_of(out)}
    link = rows.pop(str(week / "references.py"))  # (a link is an ERROR row, as any link)
    assert link["verdict"] == "ERROR" and "a symbolic link" in link["reasons"]
    assert {r["verdict"] for r in rows.values()} == {"CHECKED"}
    assert not marker.exists()
    assert "references beside kernels in a folder below" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["alice/references.py", "notes.py", "link"])
def test_no_other_file_among_the_submissions_is_taken_as_a_reference(week, tmp_path, capsys,
                                                                      where):
    """Only references.py at the top of a folder given may be named: one in
    a student's folder, any other name, or a link there to a student's file
    is refused as today, and nothing runs."""
    marker = tmp_path / "marker"
    body = f"open({str(marker)!r}, 'w').close()\n"
    (week / "alice").mkdir()
    (week / "alice" / "references.py").write_text(body)
    (week / "notes.py").write_text(body)
    named = week / where
    if where == "link":
        (week / "references.py").unlink()
        (week / "references.py").symlink_to(week / "alice" / "references.py")
        named = week / "references.py"
    out = tmp_path / "report"
    assert threadmap("check", str(week), "--reference", str(named), "--out", str(out)) == 2
    assert "is among the files checked" in capsys.readouterr().err
    assert not marker.exists() and not out.exists()


def test_a_reference_module_that_fails_to_import_is_refused_up_front(week, tmp_path, capsys):
    (week / "references.py").write_text("import no_such_module_here\n")
    out = tmp_path / "report"
    assert threadmap("check", str(week), "--reference", str(week / "references.py"),
                     "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "importing it raised ModuleNotFoundError" in err
    assert not out.exists()


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


GRID_STRIDE = ROOT / "kernels" / "sources" / "builtin" / "grid_stride.py"


@pytest.fixture
def linked(tmp_path):
    """Submissions beside the teacher's own files: an honest file, a link to
    the teacher's solution and a linked folder, both outside the submissions."""
    teacher = tmp_path / "teacher"
    (teacher / "shared").mkdir(parents=True)
    shutil.copy(GRID_STRIDE, teacher / "solution.py")
    shutil.copy(GRID_STRIDE, teacher / "shared" / "inner.py")
    folder = tmp_path / "submissions"
    folder.mkdir()
    shutil.copy(GRID_STRIDE, folder / "honest.py")
    (folder / "mallory.py").symlink_to("../teacher/solution.py")
    (folder / "trudy").symlink_to(teacher / "shared")
    return folder


def opened_below(folder, monkeypatch, log):
    """Record in ``log`` every file that ``os.open`` opens below ``folder``
    (what read_source reads kernel files with), in this process and in the
    pool's workers, which fork from it."""
    import os

    real_open = os.open

    def spying_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        where = os.readlink(f"/proc/self/fd/{fd}")
        if where.startswith(str(folder)):
            line = real_open(str(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(line, (where + "\n").encode())
            os.close(line)
        return fd

    monkeypatch.setattr(os, "open", spying_open)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc/self/fd (Linux)")
def test_links_are_refused_by_default_and_what_they_name_is_never_opened(
        linked, tmp_path, monkeypatch):
    log = tmp_path / "opened.txt"
    opened_below(tmp_path / "teacher", monkeypatch, log)
    out = tmp_path / "report"
    assert threadmap("check", str(linked), "--shapes", "16x8x16", "--launches", "1:64",
                     "--out", str(out)) == 0
    rows = {Path(row["file"]).name: row for row in rows_of(out)}
    assert set(rows) == {"honest.py", "mallory.py", "trudy"}  # (solution.py, inner.py unseen)
    assert rows["honest.py"]["verdict"] == "PASS" and rows["honest.py"]["link"] == ""
    assert rows["mallory.py"]["verdict"] == "ERROR"
    assert rows["mallory.py"]["reasons"] == ("a symbolic link (to ../teacher/solution.py): not "
                                             "graded; --follow-links grades links")
    assert rows["mallory.py"]["link"] == f"{linked / 'mallory.py'} -> ../teacher/solution.py"
    assert rows["trudy"]["verdict"] == "ERROR"
    assert rows["trudy"]["reasons"] == (f"a symbolic link to a folder (to {tmp_path}/teacher/"
                                        "shared): not graded; --follow-links grades links")
    assert not log.exists(), log.read_text()
    report = json.loads((out / "report.json").read_text())
    assert [row["link"] is not None for row in report["rows"]] == [False, True, True]
    page = (out / "report.html").read_text()
    assert "not graded; --follow-links grades links" in page


def test_follow_links_grades_links_and_marks_them(linked, tmp_path):
    (linked / "again").symlink_to(".")  # a loop: walked once
    out = tmp_path / "report"
    assert threadmap("check", str(linked), "--follow-links", "--shapes", "16x8x16",
                     "--launches", "1:64", "--out", str(out)) == 0
    rows = {str(Path(row["file"]).relative_to(linked)): row for row in rows_of(out)}
    assert set(rows) == {"honest.py", "mallory.py", "trudy/inner.py"}
    assert all(row["verdict"] == "PASS" for row in rows.values())
    assert rows["honest.py"]["link"] == ""
    assert rows["mallory.py"]["link"] == f"{linked / 'mallory.py'} -> ../teacher/solution.py"
    assert rows["trudy/inner.py"]["link"] == f"{linked / 'trudy'} -> {tmp_path}/teacher/shared"
    report = json.loads((out / "report.json").read_text())
    assert report["rows"][1]["link"].endswith("mallory.py -> ../teacher/solution.py")
    page = (out / "report.html").read_text()
    assert page.count("a link: ") == 2 and "-&gt; ../teacher/solution.py" in page


@pytest.mark.parametrize("follow", [False, True])
def test_a_fifo_or_a_dangling_link_named_py_is_an_error_row(tmp_path, follow):
    """Neither a regular file nor a link to one: each had vanished from the
    report (no row, nothing skipped, nothing said)."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "vector_add.py", folder / "vector_add.py")
    os.mkfifo(folder / "student.py")
    (folder / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    out = tmp_path / "report"
    assert threadmap("check", str(folder), "--out", str(out),
                     *(["--follow-links"] if follow else [])) == 0
    rows = {Path(row["file"]).name: row for row in rows_of(out)}
    assert set(rows) == {"vector_add.py", "student.py", "dangling.py"}
    assert rows["vector_add.py"]["verdict"] == "CHECKED"
    assert rows["student.py"]["verdict"] == "ERROR"
    assert "not a regular file (a FIFO)" in rows["student.py"]["reasons"]
    assert rows["dangling.py"]["link"].endswith(f"dangling.py -> {tmp_path}/nowhere.py")
    assert rows["dangling.py"]["verdict"] == "ERROR"
    if follow:  # (a device through a link: said, never opened)
        (folder / "device.py").symlink_to("/dev/null")
        assert threadmap("check", str(folder), "--out", str(out), "--follow-links") == 0
        rows = {Path(row["file"]).name: row for row in rows_of(out)}
        assert rows["device.py"]["verdict"] == "ERROR"
        assert "not a regular file (a device)" in rows["device.py"]["reasons"]


def test_a_link_named_on_the_command_line_is_graded_and_marked(linked, tmp_path):
    # (the teacher named it: followed, as a folder named that is a link is)
    out = tmp_path / "report"
    assert threadmap("check", str(linked / "mallory.py"), "--shapes", "16x8x16",
                     "--launches", "1:64", "--out", str(out)) == 0
    [row] = rows_of(out)
    assert row["verdict"] == "PASS"
    assert row["link"] == f"{linked / 'mallory.py'} -> ../teacher/solution.py"


def test_a_file_made_a_link_after_the_listing_is_refused_where_it_is_read(linked, tmp_path):
    """A submission replaced by a link (or its folder by a linked folder)
    between the listing and the grading: refused by the worker, which opens
    the path without following links."""
    from kernels.check import check_kernel, find_submissions, parse_launches, tasks

    (linked / "alice").mkdir()
    shutil.copy(GRID_STRIDE, linked / "alice" / "k.py")
    found = find_submissions([linked])
    (linked / "honest.py").unlink()
    (linked / "honest.py").symlink_to("../teacher/solution.py")  # before the parent reads it
    work = {Path(task.file).name: task for task in tasks(found)}
    assert "a symbolic link (to ../teacher/solution.py)" in work["honest.py"].refused
    shutil.rmtree(linked / "alice")
    (linked / "alice").symlink_to(tmp_path / "teacher" / "shared")  # after
    [row] = check_kernel(work["k.py"], [(16, 8, 16)], parse_launches("1:64"))
    assert row["verdict"] == "ERROR", row
    assert row["reasons"] == (f"a symbolic link to a folder (to {tmp_path}/teacher/shared): "
                              "not graded; --follow-links grades links")


def test_a_failure_of_threadmap_on_one_submission_is_its_row_alone(course, tmp_path,
                                                                   monkeypatch):
    """ThreadMap raising something unexpected on one file (a bug, a
    RecursionError) is that file's ERROR row; the others are graded and the
    report is written.  (The pool's workers fork from this process: they
    run the patched functions.)"""
    import kernels.engine
    import kernels.sources.source
    from kernels.check import parse_launches, parse_shapes, run_check, write_report

    real_run, real_names = kernels.engine.run, kernels.sources.source.kernel_names

    def failing_run(request, **options):
        if request.kernel_file.endswith("bob.py"):
            raise RuntimeError("a bug\nof two lines " + "x" * 5000)
        return real_run(request, **options)

    def failing_names(path):
        if str(path).endswith("carol.py"):
            raise RecursionError("maximum recursion depth exceeded")
        return real_names(path)

    monkeypatch.setattr(kernels.engine, "run", failing_run)
    monkeypatch.setattr(kernels.sources.source, "kernel_names", failing_names)
    rows = run_check([course / "alice", course / "bob.py", course / "carol.py"],
                     parse_shapes("16x8x16"), parse_launches("1:64"), workers=1)
    by_file = {Path(row["file"]).name: row for row in rows}
    assert by_file["grid_stride.py"]["verdict"] == "PASS"
    bob, carol = by_file["bob.py"], by_file["carol.py"]
    assert bob["verdict"] == carol["verdict"] == "ERROR"
    assert bob["reasons"].startswith("ThreadMap failed on this case: RuntimeError: a bug of two "
                                     "lines xxx")
    assert bob["reasons"].endswith("— a bug in ThreadMap, please report it")
    assert "\n" not in bob["reasons"] and len(bob["reasons"]) < 320
    assert carol["reasons"] == ("ThreadMap failed on this case: RecursionError: maximum "
                                "recursion depth exceeded — a bug in ThreadMap, please report it")
    write_report(rows, tmp_path / "report")
    assert len(rows_of(tmp_path / "report")) == 3


DYING_WORKERS = '''
import json, os, signal, sys
import kernels.engine
from kernels.check import parse_launches, parse_shapes, run_check, write_report

real_run = kernels.engine.run


def dying_run(request, **options):
    if request.kernel_file.endswith("killed.py"):
        os.kill(os.getpid(), signal.SIGKILL)  # (as the OOM killer does)
    if request.kernel_file.endswith("exits.py"):
        os._exit(3)
    return real_run(request, **options)


kernels.engine.run = dying_run  # (the pool's workers fork after this)
rows = run_check([sys.argv[1]], parse_shapes("16x8x16"), parse_launches("1:64"), workers=2)
write_report(rows, sys.argv[2])
print(json.dumps([[row["file"], row["verdict"], row["reasons"]] for row in rows]))
'''


def test_a_worker_that_dies_is_its_submission_s_row_and_the_rest_is_graded(tmp_path):
    """A worker killed mid-task (SIGKILL, os._exit) had left the pool waiting
    on that task forever; now its task is an ERROR row that says how the
    worker ended, and a fresh worker takes the rest."""
    import subprocess
    import sys

    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("a.py", "exits.py", "killed.py", "z.py"):
        shutil.copy(GRID_STRIDE, folder / name)
    done = subprocess.run([sys.executable, "-c", DYING_WORKERS, str(folder),
                           str(tmp_path / "report")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {Path(file).name: (verdict, reasons)
            for file, verdict, reasons in json.loads(done.stdout)}
    assert rows["a.py"] == rows["z.py"] == ("PASS", "")
    assert rows["killed.py"][0] == rows["exits.py"][0] == "ERROR"
    assert rows["killed.py"][1].startswith("ThreadMap failed on this case: its worker process "
                                           "ended: killed (SIGKILL)")
    assert rows["exits.py"][1].startswith("ThreadMap failed on this case: its worker process "
                                          "ended: exit status 3")
    assert len(rows_of(tmp_path / "report")) == 4


def test_on_dask_a_failure_of_threadmap_is_its_row_alone(course, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is an optional "
                                      "extra (pip install 'threadmap[dask]')")
    import kernels.engine
    from kernels.check import parse_launches, parse_shapes, run_check

    real_run = kernels.engine.run

    def failing_run(request, **options):
        if request.kernel_file.endswith("bob.py"):
            raise KeyError("a bug")
        return real_run(request, **options)

    monkeypatch.setattr(kernels.engine, "run", failing_run)
    # (threads in this process: the workers run the patched function)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as cluster:
        rows = run_check([course / "alice", course / "bob.py"], parse_shapes("16x8x16"),
                         parse_launches("1:64"), scheduler=cluster.scheduler_address)
    assert [(Path(row["file"]).name, row["verdict"]) for row in rows] == [
        ("grid_stride.py", "PASS"), ("bob.py", "ERROR")]
    assert rows[1]["reasons"] == ("ThreadMap failed on this case: KeyError: 'a bug' — a bug in "
                                  "ThreadMap, please report it")


def test_a_kernel_file_read_while_links_are_refused_is_never_followed(tmp_path):
    """The last step of the race: what the engine reads (by path) is opened
    folder by folder with O_NOFOLLOW below the folder checked, so a file or
    folder swapped for a link between the last check and the read is a
    refusal there, not the link's target."""
    from kernels import KernelSourceError
    from kernels.sources.limits import read_source, refusing_links

    teacher = tmp_path / "teacher"
    teacher.mkdir()
    (teacher / "solution.py").write_text("# the teacher's\n")
    submissions = tmp_path / "submissions"
    (submissions / "bob").mkdir(parents=True)
    (submissions / "bob" / "own.py").write_text("# bob's own\n")
    (submissions / "mallory.py").symlink_to(teacher / "solution.py")
    (submissions / "eve").symlink_to(teacher, target_is_directory=True)
    with refusing_links(str(submissions)):
        assert read_source(str(submissions / "bob" / "own.py")) == "# bob's own\n"
        for linked in (submissions / "mallory.py", submissions / "eve" / "solution.py"):
            with pytest.raises(KernelSourceError, match="a symbolic link: not graded; "
                                                        "--follow-links grades links"):
                read_source(str(linked))
    assert read_source(str(submissions / "mallory.py")) == "# the teacher's\n"  # (followed)
