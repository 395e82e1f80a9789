"""``threadmap run``: the headless command line writes result.json and maps.npz."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels.maps_file import load_maps

ROOT = Path(__file__).resolve().parents[1]


def threadmap(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "app.launcher", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_run_writes_result_and_maps(tmp_path):
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel", "one-block-chunks", "--shape", "5x3x7", "--grid", "1",
                     "--block", "8", "--backend", "cpu", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    assert summary["verdict"] == "FAIL"
    assert summary["counts"]["unwritten"] == 0
    assert summary["counts"]["out_of_bounds"] == 20
    assert summary["request"]["grid"] == [1] and summary["request"]["block"] == [8]
    assert summary["backend"] == "cpu"
    assert "not a GPU time" in summary["backend_label"]
    kernel_timings = [t for t in summary["timings"] if t["backend"].startswith("cpu")]
    assert kernel_timings and not any(t["is_gpu_time"] for t in kernel_timings)
    maps = load_maps(out / "maps.npz", summary["maps"])
    for name in ("count", "min_writer", "max_writer", "iteration", "stores_per_thread",
                 "oob_per_thread", "reads_a", "reads_b", "C"):
        assert name in maps
    np.testing.assert_array_equal(maps["count"], 1)
    np.testing.assert_array_equal(maps["oob_per_thread"], [0] * 7 + [20])
    assert maps["C"].shape == (5, 7)
    assert "FAIL" in proc.stdout


def test_run_uses_the_kernel_preset_launch(tmp_path):
    proc = threadmap("run", "--kernel", "naive-2d", "--shape", "40x8x33", "--backend", "cpu",
                     "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "result.json").read_text())
    assert summary["request"]["grid"] == [3, 3] and summary["request"]["block"] == [16, 16]
    assert summary["verdict"] == "PASS"


@pytest.mark.parametrize("args,message", [
    (["--shape", "0x4x4"], "M must be at least 1"),
    (["--block", "2048"], "past CUDA's limit of 1,024"),
    (["--grid", "1x70000"], "grid y = 70,000 is past CUDA's limit of 65,535"),
    (["--kernel", "nope"], "unknown kernel 'nope'"),
    (["--shape", "4x4"], "three numbers"),
    (["--grid", "two"], "--grid must be N or NxM"),
    # (int() took "4_4" as 44, and other scripts' digits)
    (["--shape", "4_4x4x4"], "shape must be MxKxN with whole numbers, not '4_4x4x4'"),
    (["--grid", "\u0663"], "--grid must be N or NxM with whole numbers"),
    # (past 64 bits it had crashed the run: "OverflowError: Python int too large")
    (["--scalar", "n=99999999999999999999999"],
     "--scalar n: 99,999,999,999,999,999,999,999 does not fit a 64-bit integer"),
    (["--scalar", "n=5", "--scalar", "n=7"], "--scalar n is given twice"),
    (["--scalar", "n=4_4"], "--scalar n needs a number, not '4_4'"),
    (["--scalar", "n=" + "9" * 5000], "--scalar n: a 5,000-digit number does not fit"),
    # (ignored without a word)
    (["--map", "writer"], "--map is for an image, and none is drawn: give --png or --svg"),
    (["--map", "writer", "--size", "640x480"], "--map and --size are for an image, and none"),
])
def test_bad_input_exits_nonzero_with_one_line(tmp_path, args, message):
    proc = threadmap("run", "--out", str(tmp_path / "o"), "--backend", "cpu", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not (tmp_path / "o" / "result.json").exists()


def test_kernels_lists_the_catalogue():
    proc = threadmap("kernels")
    assert proc.returncode == 0
    for name in ("grid-stride", "naive-2d", "tiled", "one-block-chunks", "tid-rows",
                 "grid-stride-colmajor"):
        assert name in proc.stdout


def test_run_exports_png_and_svg(tmp_path):
    png, svg = tmp_path / "c.png", tmp_path / "c.svg"
    proc = threadmap("run", "--kernel", "tid-rows", "--shape", "16x8x16", "--block", "32",
                     "--backend", "cpu", "--out", str(tmp_path / "o"), "--png", str(png),
                     "--svg", str(svg), "--size", "640x480", "--map", "writer")
    assert proc.returncode == 0, proc.stderr
    from PySide6.QtGui import QImage
    image = QImage(str(png))
    assert (image.width(), image.height()) == (640, 480)
    import xml.etree.ElementTree as ET
    assert ET.parse(svg).getroot().tag.endswith("svg")


def test_sweep_writes_summaries_and_images(tmp_path):
    out = tmp_path / "sweep"
    proc = threadmap("sweep", "--kernel", "grid-stride", "--shape", "20x4x30", "--grids", "1,2",
                     "--blocks", "32,64", "--backend", "cpu", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["configurations"]
    assert [(r["blocks"], r["threads_per_block"], r["verdict"]) for r in rows] == [
        (1, 32, "PASS"), (1, 64, "PASS"), (2, 32, "PASS"), (2, 64, "PASS")]
    assert rows[0]["kernel_time_is_gpu"] is False
    for stem in ("grid1_block32", "grid2_block64"):
        assert (out / f"{stem}.npz").exists() and (out / f"{stem}.png").exists()
    assert (out / "contact_sheet.png").exists()
    header = (out / "summary.csv").read_text().splitlines()[0]
    assert header.startswith("grid,block,blocks,threads_per_block,total_threads,verdict")


def test_sweep_refuses_a_bad_list(tmp_path):
    proc = threadmap("sweep", "--grids", "1,x", "--backend", "cpu", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--grids: 'x' is not N or NxM" in proc.stderr


def test_a_2d_kernel_sweeps_2d_launches_by_default(tmp_path):
    out = tmp_path / "sweep"
    # tiled fixes 16 x 16 blocks (its shared tiles): only the grids vary; a
    # repeated grid runs once
    proc = threadmap("sweep", "--kernel", "tiled", "--shape", "40x16x24", "--backend", "cpu",
                     "--no-images", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["configurations"]
    assert [(r["grid"], r["block"], r["verdict"]) for r in rows] == [
        ("1x1", "16x16", "FAIL"), ("2x2", "16x16", "FAIL"), ("4x4", "16x16", "PASS"),
        ("8x8", "16x16", "PASS"), ("16x16", "16x16", "PASS")]
    assert (out / "grid2x2_block16x16.npz").exists()
    assert "2x2 x 16x16 FAIL" in " ".join(proc.stdout.split())
    proc = threadmap("sweep", "--kernel", "naive-2d", "--shape", "20x4x30", "--grids",
                     "2x2,1,2x2", "--blocks", "16x16,32x8", "--backend", "cpu", "--no-images",
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["configurations"]
    assert [(r["grid"], r["block"]) for r in rows] == [
        ("2x2", "16x16"), ("2x2", "32x8"), ("1", "16x16"), ("1", "32x8")]


@pytest.mark.parametrize("args,message", [
    (["--map", "bogus", "--png", "x.png"], "--map must be one of"),
    (["--png", "picture"], "--png needs a file name ending in .png"),
    (["--svg", "x.png"], "--svg needs a file name ending in .svg"),
    (["--size", "8x8", "--png", "x.png"], "--size takes WxH in pixels, 16 to 16384"),
])
def test_bad_export_options_are_refused_before_running(tmp_path, args, message):
    proc = threadmap("run", "--backend", "cpu", "--out", str(tmp_path / "o"), *args,
                     cwd=str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_unwritable_output_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = threadmap("run", "--shape", "4x4x4", "--block", "32", "--backend", "cpu",
                     "--out", str(blocker / "out"))
    # Refused before the run, naming what is in the way.
    assert proc.returncode == 2 and f"{blocker} is a file, not a folder" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


FLAT = """from numba import cuda


@cuda.jit
def flat(A, B, C, n):
    idx = cuda.grid(1)
    row = idx // n
    col = idx % n
    if row < n and col < n:
        s = 0.
        for k in range(n):
            s += A[row * n + k] * B[k * n + col]
        C[row * n + col] = s
"""

THREE_D = """from numba import cuda


@cuda.jit
def mm(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, 0] * B[0, j]


def host(a, b, c):
    mm[(2, 2, 2), (8, 8, 1)](a, b, c)
"""


def one_line_refusal(proc, *expected):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("threadmap: error:"), proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("value", ["16.5", "nan"])
def test_a_fraction_for_an_integer_scalar_is_refused_with_its_line(tmp_path, value):
    path = tmp_path / "flat.py"
    path.write_text(FLAT)
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "16x16x16", "--scalar",
                     f"n={value}", "--backend", "cpu", "--out", str(tmp_path / "out"))
    one_line_refusal(proc, "scalar n", "not a whole number", f"{path}:12")
    assert not (tmp_path / "out").exists()


def test_arrays_past_the_memory_are_not_blamed_on_the_files_launch(tmp_path):
    """It said 'the file's own launch of histogram (16 x 256) cannot run: ...
    memory ...; give --grid and --block', which would not have helped."""
    proc = threadmap("run", "--kernel-file", str(ROOT / "examples" / "histogram.py"), "--arg",
                     "bins=int32[1073741824]", "--backend", "cpu", "--out", str(tmp_path / "o"))
    line = one_line_refusal(proc, "this run would need about")
    assert "own launch" not in line and "--grid" not in line


def test_an_infinite_scalar_is_refused_where_result_json_could_not_hold_it(tmp_path):
    """--scalar alpha=1e400 is infinity; result.json then held Infinity, which
    is not JSON (THREADMAP_ARGS's was refused already)."""
    path = tmp_path / "scaled.py"
    path.write_text(FLAT.replace("def flat(A, B, C, n):", "def flat(A, B, C, n, alpha):")
                    .replace("C[row * n + col] = s", "C[row * n + col] = s * alpha"))
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "16x16x16", "--scalar",
                     "alpha=1e400", "--backend", "cpu", "--out", str(tmp_path / "out"))
    one_line_refusal(proc, "scalar alpha = inf is not a finite number")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,text", [
    (("--time-limit", "-1"), "--time-limit must be a positive number"),
    (("--time-limit", "nan"), "--time-limit must be a positive number"),
    (("--registers", "-5"), "--registers must be between 1 and 255"),
])
def test_numbers_that_mean_nothing_are_refused(tmp_path, args, text):
    proc = threadmap("run", "--shape", "8x8x8", "--backend", "cpu", "--out",
                     str(tmp_path / "out"), *args)
    one_line_refusal(proc, text)


def test_a_3d_launch_in_a_file_names_its_line(tmp_path):
    path = tmp_path / "three_d.py"
    path.write_text(THREE_D)
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "16x16x16", "--backend",
                     "cpu", "--out", str(tmp_path / "out"))
    one_line_refusal(proc, f"{path}:12", "3-D grid", "--grid and --block")


def test_outputs_that_cannot_be_written_are_refused_before_the_run(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for args, text in ((("--png", str(a_file / "x.png")), "is a file, not a folder"),
                       (("--svg", str(tmp_path / "folder.svg")), "is a folder"),
                       (("--out", str(a_file)), "is a file; give a folder")):
        if "folder.svg" in args[1]:
            (tmp_path / "folder.svg").mkdir()
        out = args[1] if args[0] == "--out" else str(tmp_path / "out")
        extra = () if args[0] == "--out" else args
        proc = threadmap("run", "--shape", "8x8x8", "--backend", "cpu", "--out", out, *extra)
        one_line_refusal(proc, text)
        assert not (tmp_path / "out").exists()


def test_ctrl_c_ends_with_one_line_status_130_and_no_child_left(tmp_path):
    import signal
    import time
    # A simulator run lives in a child process: Ctrl-C must end both.
    proc = subprocess.Popen([sys.executable, "-m", "app.launcher", "run", "--kernel",
                             "grid-stride", "--shape", "64x64x64", "--grid", "64", "--block",
                             "256", "--backend", "sim", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = []
    deadline = time.monotonic() + 60
    while not children and time.monotonic() < deadline:
        time.sleep(0.2)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                  text=True).stdout.split()
    assert children, "the simulator's child process never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert [line for line in stderr.splitlines() if line.strip()] == [
        "threadmap: stopped by Ctrl-C; child processes ended, earlier outputs kept"]
    for pid in children:
        assert subprocess.run(["kill", "-0", pid], capture_output=True).returncode != 0, pid


def test_ctrl_c_during_a_sweep_ends_it_with_one_line_and_status_130(tmp_path):
    """A sweep runs its configurations on a thread of its own while the main
    thread writes files: Ctrl-C still ends the whole command at once."""
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "app.launcher", "sweep", "--kernel",
                             "grid-stride", "--shape", "256x64x256", "--grids", "1,2,4,8,16,32",
                             "--blocks", "32,64,128,256,512,1024", "--backend", "cpu",
                             "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # the first configuration is done: the next ones run
    assert "PASS" in first
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert time.monotonic() - sent < 10
    assert [line for line in stderr.splitlines()
            if line.strip() and not line.startswith("  [")] == [
        "threadmap: stopped by Ctrl-C; child processes ended, earlier outputs kept"]
    assert "wrote" not in out
    assert len(out.splitlines()) < 35  # of 36 configurations


HUGE_LAUNCH = """from numba import cuda


@cuda.jit
def mm(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[i, k] * B[k, j]
        C[i, j] = s


def host(a, b, c):
    mm[(50, 50), (32, 32)](a, b, c)
"""


def test_a_run_estimated_over_a_minute_needs_yes_and_gets_a_smaller_launch(tmp_path):
    # The file's own launch: 50 x 50 blocks of 32 x 32 = 2.56M simulated threads.
    path = tmp_path / "huge.py"
    path.write_text(HUGE_LAUNCH)
    proc = threadmap("run", "--kernel-file", str(path), "--shape", "128x128x128", "--backend",
                     "sim", "--out", str(tmp_path / "out"))
    line = one_line_refusal(proc, "would take about", "minutes on the simulator",
                            "add --yes", "or try --shape")
    # What it offers runs within a minute by the same estimate.
    assert "(about" in line and "minutes)" not in line.split("or try")[1]


def test_kernel_files_get_a_default_time_limit_on_the_command_line():
    from kernels import RunRequest
    from kernels.cli.options import time_limit
    from kernels.cli.parser import build_parser
    args = build_parser().parse_args(["run", "--out", "x"])
    assert time_limit(args, RunRequest(kernel=None, kernel_file="k.py")) == 300
    assert time_limit(args, RunRequest(kernel="tiled")) is None
    args = build_parser().parse_args(["run", "--out", "x", "--time-limit", "5"])
    assert time_limit(args, RunRequest(kernel=None, kernel_file="k.py")) == 5


def test_run_watch_runs_again_at_each_save_and_keeps_the_last_good_outputs(tmp_path):
    import signal
    import time

    from tests.test_tiers import NAIVE
    kernel = tmp_path / "k.py"
    kernel.write_text(NAIVE.format(extra=""))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                             str(kernel), "--shape", "20x12x24", "--grid", "2x2", "--block",
                             "16x16", "--out", str(out), "--watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []

        def until(word: str) -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                lines.append(line)
                if word in line:
                    return
            raise AssertionError(lines)

        until("watching")
        assert lines[0].startswith("PASS")
        kernel.write_text(NAIVE.format(extra=" * 2"))  # a bug, saved
        until("before this save: PASS")
        assert any(line.startswith("FAIL") for line in lines)
        assert json.loads((out / "result.json").read_text())["verdict"] == "FAIL"
        kernel.write_text("def broken(:\n")  # a save that does not parse
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            if (out / "result.json").exists():
                break
        time.sleep(2.0)
        assert proc.poll() is None  # still watching
        assert json.loads((out / "result.json").read_text())["verdict"] == "FAIL"
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "the file does not parse" in stderr and "last good outputs are kept" in stderr


def test_the_summary_is_printed_to_stdout_as_it_is_at_each_call(monkeypatch):
    # A default of sys.stdout bound at import kept pytest's first captured
    # stream, closed by a later test: "I/O operation on closed file".
    import io

    from kernels import RunRequest, run
    from kernels.cli.printing import print_summary

    result = run(RunRequest(kernel="grid-stride", m=8, k=4, n=8, grid=(1,), block=(32,),
                            backend="cpu", repeats=1))
    now = io.StringIO()
    monkeypatch.setattr("sys.stdout", now)
    print_summary(result)
    assert now.getvalue().startswith("PASS  grid-stride  8x4x8 float32")
