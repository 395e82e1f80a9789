"""Messages that point the right way: undefined names, progress, sweep lines,
child start-up, a kernel's own prints, warnings, and division by zero on
every backend (issue 9, point 8)."""
import io
import json
import subprocess
import sys
import textwrap

import pytest

from kernels.cli.progress import CommandLineProgress
from kernels.result import BACKEND_LABELS
from kernels.errors import ThreadMapError
from kernels.request import RunRequest
from kernels.sources.loader import load_plan


def threadmap(*args):
    return subprocess.run([sys.executable, "-m", "app.launcher", *args], capture_output=True,
                          text=True, timeout=600)


def kernel_file(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(text))
    return path


HEAD = "from numba import cuda\nimport math\n\n"


def plan_error(path) -> str:
    request = RunRequest(m=8, k=8, n=8, kernel_file=str(path), kernel="matmul")
    with pytest.raises(ThreadMapError) as caught:
        load_plan(request)
    return str(caught.value)


def test_a_name_defined_nowhere_is_not_said_to_be_defined(tmp_path):
    path = kernel_file(tmp_path, "undefined.py", """\
    @cuda.jit
    def matmul(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            C[i, j] = A[i, 0] * B[0, j] * TILE
    """)
    message = plan_error(path)
    assert "name 'TILE' is not defined" in message
    assert "defined in the file" not in message and "defines it" not in message
    assert "anywhere in the file" in message


def test_a_name_the_file_computes_is_said_to_be_defined_at_its_line(tmp_path):
    path = kernel_file(tmp_path, "computed.py", """\
    def size():
        return 16

    TILE = size()

    @cuda.jit
    def matmul(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            C[i, j] = A[i, 0] * B[0, j] * TILE
    """)
    message = plan_error(path)
    assert "'TILE' (line 7) is not a constant a kernel can use: it calls size()" in message


def test_progress_is_silent_for_short_runs_and_shown_for_long_ones():
    stream = io.StringIO()
    quiet = CommandLineProgress(stream, quiet_seconds=60)
    quiet(0.5, "half")
    assert stream.getvalue() == ""
    shown = CommandLineProgress(stream, quiet_seconds=0, interval=0)
    shown(0.25, "instrumented kernel (simulator)")
    shown(0.5, "kernel (simulator)")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "[ 25%] instrumented kernel (simulator)" in lines[0]
    assert "[ 50%]" in lines[1]


def test_a_long_command_line_run_shows_progress(tmp_path):
    # The simulator on 4 blocks of 64 threads takes a few seconds: past the 2 s
    # of silence, a line appears (not a terminal: one every 10 s at most).
    proc = threadmap("run", "--kernel", "grid-stride", "--shape", "64x32x64", "--grid", "4",
                     "--block", "64", "--backend", "sim", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "%]" in proc.stderr and "simulator" in proc.stderr, proc.stderr


def test_sweep_prints_each_verdict_with_its_time_and_backend(tmp_path):
    proc = threadmap("sweep", "--kernel", "tid-rows", "--shape", "16x8x16", "--grids", "1,2",
                     "--blocks", "32,64", "--backend", "cpu", "--no-images", "--out",
                     str(tmp_path / "sweep"))
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if " x " in line]
    assert len(rows) == 4, proc.stdout
    for row in rows:
        assert ("PASS" in row or "FAIL" in row) and "[CPU emulation]" in row, row
        assert " kernel " in row or "instrumented kernel" in row, row


PRINTING = """\
    @cuda.jit
    def matmul(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = 0.
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp
            if i == 1 and j < 2:
                print("row", i, "column", j)
    """


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_kernel_prints_appear_once_labelled(tmp_path, backend):
    path = kernel_file(tmp_path, "printing.py", PRINTING)
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "8x8x8", "--backend",
                     backend, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    printed = [line for line in proc.stdout.splitlines() if "row 1 column" in line]
    assert sorted(printed) == ["  | row 1 column 0", "  | row 1 column 1"], proc.stdout
    lines = proc.stdout.splitlines()
    label = next(i for i, line in enumerate(lines) if line.startswith("  kernel output (2 lines"))
    assert all(line.startswith("  | ") for line in lines[label + 1:label + 3])
    summary = json.loads((out / "result.json").read_text())
    assert sorted(summary["kernel_output"]["text"].splitlines()) == [
        "row 1 column 0", "row 1 column 1"]


def test_a_child_process_start_up_is_a_timing_of_its_own(tmp_path):
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel", "grid-stride", "--shape", "16x8x16", "--backend", "cpu",
                     "--time-limit", "120", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    timings = json.loads((out / "result.json").read_text())["timings"]
    start_up = [t for t in timings if t["what"] == "child process start-up"]
    assert len(start_up) == 1 and start_up[0]["seconds"] > 0.05
    assert "not part of the other times" in start_up[0]["method"]
    assert "child process start-up" in proc.stdout


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_the_backend_label_and_the_start_up_name_the_tier_that_ran(tmp_path, tier):
    # The instant tier is numpy lockstep, with no compile: its run, and the
    # start-up of the child it ran in, never say "compiled numba loop".
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel", "grid-stride", "--shape", "16x8x16", "--backend", "cpu",
                     "--tier", tier, "--time-limit", "120", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    assert summary["tier"] == tier
    key = "cpu-instant" if tier == "instant" else "cpu"
    assert summary["backend_label"] == BACKEND_LABELS[key]
    (start_up,) = [t for t in summary["timings"] if t["what"] == "child process start-up"]
    assert (start_up["backend"], start_up["label"]) == (key, BACKEND_LABELS[key])
    said = "compiled numba loop" in summary["backend_label"] + start_up["label"]
    assert said == (tier == "compiled")


def test_a_warning_in_the_simulator_points_at_the_users_line(tmp_path):
    path = kernel_file(tmp_path, "warns.py", """\
    @cuda.jit
    def matmul(A, B, C):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = 0.
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp * 1e38 * 1e38
    """)
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "8x8x8", "--backend", "sim",
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "tm_gen" not in proc.stderr + proc.stdout
    notes = json.loads((out / "result.json").read_text())["notes"]
    assert any(note.startswith(f"RuntimeWarning at {path}:11: overflow encountered") for note in notes), \
        notes


DIVIDING = """\
    @cuda.jit
    def matmul(A, B, C, n):
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = 0.
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp + (j // n) * (i % n)
    """


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_integer_division_by_zero_is_reported_the_same_on_every_backend(tmp_path, backend):
    path = kernel_file(tmp_path, "dividing.py", DIVIDING)
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "8x8x8", "--backend",
                     backend, "--scalar", "n=0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    assert summary["verdict"] == "FAIL"
    divisions = summary["divisions_by_zero"]
    # 64 threads write C, each dividing once by n with // and once with %.
    assert [(d["line"], d["text"], d["count"], d["first_thread"]) for d in divisions] == [
        (11, "j // n", 64, 0), (11, "i % n", 64, 0)]
    assert any("64 divisions by zero at line 11 (j // n" in r for r in summary["reasons"])
    # With n = 0 a GPU gives 0 for both, so C is still A @ B: only the
    # divisions fail the run.
    assert summary["errors"]["wrong"] == 0 and summary["errors"]["non_finite"] == 0


def test_a_nonzero_divisor_passes(tmp_path):
    path = kernel_file(tmp_path, "dividing.py", DIVIDING)
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "8x8x8", "--backend", "cpu",
                     "--scalar", "n=100", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    assert summary["divisions_by_zero"] == [] and summary["verdict"] == "PASS"
