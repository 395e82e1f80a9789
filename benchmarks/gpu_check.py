"""GPU check of the whole product, prepared to run in one go on a machine with a CUDA device.

    python benchmarks/gpu_check.py --json gpu.json        # on a GPU machine (about 4-6 min)
    python benchmarks/gpu_check.py --dry-run --json x.json  # no GPU: the same cases on the CPU

It needs only the engine's dependencies (numpy, numba, numba-cuda, landlockpy,
isal, pillow, threadpoolctl; no PySide6, no pytest): on a GPU machine without
the test extras, see the README, "On a machine with a GPU".  Every section
runs the same cases on the target (the GPU, or in ``--dry-run`` the CPU
emulation) and on the CPU emulation, and compares them:

1. ``builtin``: every built-in kernel at its preset launch, in this process:
   verdicts, and the recording maps element by element (all maps for
   race-free kernels; counts and out-of-bounds tallies for colliding ones).
2. ``warp``: the warp-level kernels of tests/kernels/warp_ops.py: the probe's
   C value for value, the reductions' verdicts and maps.
3. ``files``: kernel files through ``threadmap run --kernel-file`` (each a
   command of its own, sandboxed child included): verdict, out-of-bounds
   tallies, C within the dtype's tolerance, and the maps (all of them where
   the run found no race between threads).
4. ``course``: the described kernels of examples/ with their references,
   through ``threadmap run``: the same comparison.
5. ``api``: ``threadmap(kernel, args=..., reference=...)`` in a fresh process,
   twice (the second call warm).
6. ``check``: ``threadmap check`` of three files on two shapes and two
   launches: every row's verdict.
7. ``hunt``: ``threadmap hunt`` of the seed's kernel: the smallest failing case.
8. ``sandbox``: what a kernel file's child reports: its CUDA context made
   before it entered its sandbox, and Landlock.
9. ``commands``: whole-command times (issue 40's table).
10. ``goals``: issue 40's three goals (first map of a new kernel file on auto,
    a warm --backend gpu command, the GPU's figures after the first map).
11. ``plain``: plain kernels at size^3 float32 against cuBLAS (CuPy, if
    installed), CUDA events around the kernel only (GPU only).

The JSON file is rewritten whole (temporary file, then rename) after every
section, so a run stopped by its time limit keeps what it measured.  Exit 0
when every comparison agreed, 1 when one differed, 2 when a section failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernels import RunRequest, run  # noqa: E402
from kernels.sources.catalogue import CATALOGUE  # noqa: E402

RACE_FREE = {"grid-stride", "naive-2d", "grid-stride-colmajor", "tiled"}
ALL_MAPS = ("count", "atomics", "min_writer", "max_writer", "iteration", "stores_per_thread",
            "oob_per_thread", "reads_a", "reads_b")


def compare_maps(kernel: str, shape: tuple[int, int, int], target: str) -> dict:
    m, k, n = shape
    launch = CATALOGUE[kernel].default_launch(m, k, n)
    request = RunRequest(kernel=kernel, m=m, k=k, n=n, grid=launch.grid, block=launch.block)
    device = run(request.with_(backend=target))
    baseline_backend = "cpu"
    baseline = run(request.with_(backend=baseline_backend))
    fields = ALL_MAPS if kernel in RACE_FREE else ("count", "oob_per_thread")
    mismatched = [f for f in fields
                  if not np.array_equal(getattr(device.maps, f), getattr(baseline.maps, f))]
    if device.maps.out_of_bounds != baseline.maps.out_of_bounds:
        mismatched.append("out_of_bounds")
    kernel_time = device.kernel_timing
    return {
        "kernel": kernel, "shape": "x".join(map(str, shape)), "launch": str(launch),
        "backend": device.backend, "verdict": device.verdict.summary(),
        "rel_error": device.verdict.errors.rel_error,
        "compared_with": baseline_backend, "maps_equal": not mismatched,
        "mismatched": mismatched,
        "kernel_ms": kernel_time.seconds * 1e3 if kernel_time else None,
    }


WARP_FILE = ROOT / "tests" / "kernels" / "warp_ops.py"
#: (kernel, shape, grid, block): race-free, so their maps are the same on any device
WARP_CASES = (("probe", (32, 4, 11), (1,), (32,)),
              ("matmul_warp_dot", (37, 70, 29), (8,), (64,)),
              ("matmul_butterfly", (37, 70, 29), (3,), (96,)),
              ("matmul_warp_tree_synced", (9, 40, 7), (32,), (64,)))


def compare_warp_kernels(target: str) -> list[dict]:
    rows = []
    for kernel, (m, k, n), grid, block in WARP_CASES:
        request = RunRequest(kernel=kernel, kernel_file=str(WARP_FILE), m=m, k=k, n=n,
                             grid=grid, block=block)
        device = run(request.with_(backend=target))
        baseline = run(request.with_(backend="cpu"))
        mismatched = [f for f in ("count", "min_writer", "max_writer", "iteration")
                      if not np.array_equal(getattr(device.maps, f), getattr(baseline.maps, f))]
        if kernel == "probe" and not np.array_equal(device.c, baseline.c, equal_nan=True):
            mismatched.append("C")
        if device.verdict.word != baseline.verdict.word:
            mismatched.append("verdict")
        rows.append({"kernel": kernel, "backend": device.backend,
                     "verdict": device.verdict.summary(), "compared_with": "cpu",
                     "maps_equal": not mismatched, "mismatched": mismatched})
    return rows


def time_kernels(size: int, repeats: int, dry_run: bool) -> list[dict]:
    """Plain kernels at size^3 float32, CUDA events around the kernel only."""
    rows = []
    if dry_run:
        return rows
    from numba import cuda

    from kernels.derived.codegen import load_module
    from kernels.inputs import make_inputs
    from kernels.sources.loader import _builtin_plan

    a, b = make_inputs("random", size, size, size, "float32")
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((size, size), np.float32)
    flops = 2.0 * size**3
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    configs = [
        ("grid-stride", (sms * 8,), (256,), f"{sms * 8} x 256 (8 blocks per SM)"),
        ("grid-stride", (size * size // 256,), (256,), "one thread per element"),
        ("naive-2d", (size // 16, size // 16), (16, 16), "preset 16 x 16 blocks"),
        ("tiled", (size // 16, size // 16), (16, 16), "preset 16 x 16 blocks"),
    ]
    for kernel, grid, block, label in configs:
        plan = _builtin_plan(kernel)
        function = load_module(plan, "cuda", "float32").function(plan.name)
        function[grid, block](d_a, d_b, d_c)  # warm-up and compile
        cuda.synchronize()
        times = []
        for _ in range(repeats):
            start, stop = cuda.event(), cuda.event()
            start.record()
            function[grid, block](d_a, d_b, d_c)
            stop.record()
            stop.synchronize()
            times.append(cuda.event_elapsed_time(start, stop) / 1e3)
        seconds = float(np.median(times))
        c = d_c.copy_to_host()
        error = float(np.linalg.norm(c - a.astype(np.float64) @ b) /
                      np.linalg.norm(a.astype(np.float64) @ b))
        rows.append({"kernel": kernel, "launch": label, "ms": seconds * 1e3,
                     "gflops": flops / seconds / 1e9, "rel_error": error})
    from kernels.engine import time_reference

    reference = time_reference(a, b, on_gpu=True)
    if reference.backend == "cublas":
        rows.append({"kernel": "cuBLAS (CuPy)", "launch": "sgemm", "ms": reference.seconds * 1e3,
                     "gflops": reference.gflops, "rel_error": None})
    else:
        rows.append({"kernel": "cuBLAS (CuPy)", "launch": "CuPy not installed", "ms": None,
                     "gflops": None, "rel_error": None})
    return rows


def threadmap_command(*args: str, timeout: float = 600) -> tuple[float, subprocess.CompletedProcess]:
    """``threadmap ARGS`` as a whole process, as a user types it; its wall time."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernels", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - started, done


def last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


#: Largest difference of C between two backends, relative to the largest
#: |C|: float32 sums of up to a few hundred products differ in their last
#: bits by summation order and fused multiply-adds (eps 1.2e-7 x terms).
C_TOLERANCE = {"float32": 1e-4, "float64": 1e-12}
#: maps.npz entries that are not maps of the kernel's behaviour
NOT_COMPARED = {"reference"}


def compare_folders(target: Path, baseline: Path) -> list[str]:
    """What differs between two ``threadmap run`` outputs: the verdict, the
    out-of-bounds tallies, C beyond its dtype's tolerance, and the maps (only
    the write counts and out-of-bounds counts where a race between threads
    was found: which thread wins a race is the schedule's)."""
    ours = json.loads((target / "result.json").read_text())
    theirs = json.loads((baseline / "result.json").read_text())
    mismatched = []
    if ours["verdict"] != theirs["verdict"]:
        mismatched.append(f"verdict {ours['verdict']} vs {theirs['verdict']}")
    if ours["out_of_bounds"] != theirs["out_of_bounds"]:
        mismatched.append("out_of_bounds")
    raced = bool(theirs["global_races"]["elements"] or theirs["shared_races"]["count"])
    with np.load(target / "maps.npz") as a, np.load(baseline / "maps.npz") as b:
        for name in sorted(set(a.files) & set(b.files) - NOT_COMPARED):
            x, y = a[name], b[name]
            if name == "C":
                tolerance = C_TOLERANCE.get(str(y.dtype), 0.0)
                scale = float(np.nanmax(np.abs(y))) if y.size and np.isfinite(y).any() else 1.0
                same = x.shape == y.shape and np.array_equal(np.isnan(x), np.isnan(y)) and \
                    float(np.nanmax(np.abs(x - y), initial=0.0)) <= tolerance * max(scale, 1e-30)
            elif raced and name not in ("count", "oob_per_thread"):
                continue
            else:  # (NaN: no request reached that cell, on both)
                same = np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
            if not same:
                mismatched.append(name)
    return mismatched


def run_on_both(target: str, work: Path, label: str, row: dict, *args: str) -> dict:
    """``threadmap run ARGS`` on the target and on the CPU emulation (twice on
    the CPU in --dry-run), compared: ``row`` with the times, the verdict and
    what differs, or the error."""
    outs = {}
    for backend in (target, "cpu") if target != "cpu" else ("cpu", "cpu-again"):
        out = work / f"{label}-{backend}"
        seconds, done = threadmap_command("run", *args, "--backend",
                                          backend.replace("-again", ""), "--out", str(out))
        row[f"{backend}_seconds"] = seconds
        if done.returncode not in (0, 1) or not (out / "result.json").exists():
            row["error"] = f"{backend}: {last_line(done)}"
            return row
        outs[backend] = out
    first, second = outs.values()
    row["verdict"] = json.loads((first / "result.json").read_text())["verdict"]
    row["mismatched"] = compare_folders(first, second)
    row["maps_equal"] = not row["mismatched"]
    return row


def section_files(target: str, work: Path, shape: str) -> list[dict]:
    """Kernel files through ``threadmap run``, on the target and the CPU."""
    return [run_on_both(target, work, f"files-{name}",
                        {"file": f"tests/kernels/{name}", "shape": shape},
                        "--kernel-file", str(ROOT / "tests" / "kernels" / name), "--shape", shape)
            for name in FILES]


def section_course(target: str, work: Path) -> list[dict]:
    """The described kernels of examples/, each against its reference: each
    must PASS, and agree."""
    rows = []
    for name in COURSE:
        row = run_on_both(target, work, f"course-{name}", {"file": f"examples/{name}.py"},
                          "--kernel-file", str(ROOT / "examples" / f"{name}.py"), "--reference",
                          f"{ROOT / 'examples' / 'references.py'}:{name}")
        if "maps_equal" in row:
            row["maps_equal"] = row["maps_equal"] and row["verdict"] == "PASS"
        rows.append(row)
    return rows


API_SCRIPT = '''
import importlib.util, json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from kernels import threadmap

spec = importlib.util.spec_from_file_location("saxpy_example", sys.argv[1] + "/examples/saxpy.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)  # (its host code is under __main__: not run)
rng = np.random.default_rng(7)
x, y = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
out = np.zeros(1000, np.float32)
rows = []
for backend in (sys.argv[2], sys.argv[2], "cpu"):
    started = time.perf_counter()
    r = threadmap(module.saxpy, args=(x, y, out, 1000, 2.5), backend=backend, grid=4, block=256,
                  reference=lambda x, y, out, n, alpha: alpha * x + y)
    rows.append({"backend": r.result.backend, "seconds": time.perf_counter() - started,
                 "verdict": r.result.verdict.word, "count": r.result.maps.count.tolist(),
                 "min_writer": r.result.maps.min_writer.tolist(),
                 "c": np.asarray(r.result.c, np.float64).tolist()})
print(json.dumps(rows))
'''


def section_api(target: str) -> list[dict]:
    """``threadmap(kernel, args=...)`` twice on the target, then on the CPU."""
    done = subprocess.run([sys.executable, "-c", API_SCRIPT, str(ROOT), target], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return [{"error": last_line(done)}]
    first, second, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    mismatched = [what for what in ("verdict", "count", "min_writer") if first[what] != cpu[what]]
    if not np.allclose(first["c"], cpu["c"], rtol=C_TOLERANCE["float32"]):
        mismatched.append("C")
    return [{"call": "saxpy, args=(x, y, out, 1000, 2.5), 4 x 256", "backend": first["backend"],
             "first_seconds": first["seconds"], "second_seconds": second["seconds"],
             "cpu_seconds": cpu["seconds"], "verdict": first["verdict"],
             "mismatched": mismatched, "maps_equal": not mismatched}]


def section_check(target: str, work: Path) -> list[dict]:
    """``threadmap check`` of the same files on the target and on the CPU."""
    files = [str(ROOT / "tests" / "kernels" / n) for n in CHECKED]
    reports = {}
    rows = []
    for backend in (target, "cpu") if target != "cpu" else ("cpu", "cpu-again"):
        out = work / f"check-{backend}"
        seconds, done = threadmap_command("check", *files, "--shapes", "64x64x64,100x37x90",
                                          "--launches", "file,4:256", "--backend",
                                          backend.replace("-again", ""), "--out", str(out))
        if not (out / "report.json").exists():
            return [{"error": f"{backend}: {last_line(done)}"}]
        reports[backend] = json.loads((out / "report.json").read_text())["rows"]
        rows.append({"backend": backend, "seconds": seconds, "cases": len(reports[backend])})
    first, second = reports.values()

    def verdicts(report):
        return {(Path(r["file"]).name, r["shape"], r["launch"]): r["verdict"] for r in report}

    ours, theirs = verdicts(first), verdicts(second)
    differ = sorted(f"{k}: {ours.get(k)} vs {theirs.get(k)}" for k in set(ours) | set(theirs)
                    if ours.get(k) != theirs.get(k))
    tally = {}
    for verdict in ours.values():
        tally[verdict] = tally.get(verdict, 0) + 1
    rows.append({"verdicts": tally, "mismatched": differ, "maps_equal": not differ})
    return rows


def section_hunt(target: str, work: Path) -> list[dict]:
    """``threadmap hunt`` of the seed's kernel (one block of 1024, B[tid, col])."""
    seed = work / "seed.py"
    seed.write_text((ROOT / "kernels" / "sources" / "builtin" / "tid_rows.py").read_text())
    out = work / "hunt"
    seconds, done = threadmap_command("hunt", "--kernel-file", str(seed), "--backend", target,
                                      "--budget", "120", "--out", str(out))
    if not (out / "hunt.json").exists():
        return [{"error": last_line(done)}]
    failing = json.loads((out / "hunt.json").read_text())["failing"] or {}
    found = failing.get("shape")
    return [{"kernel": "tid-rows (the seed's)", "seconds": seconds, "failing_shape": found,
             "verdict": failing.get("verdict"), "mismatched": [] if found == [1, 1, 1] else
             [f"smallest failing shape {found}, expected [1, 1, 1]"],
             "maps_equal": found == [1, 1, 1]}]


GRID_STRIDE_FILE = '''
from numba import cuda


@cuda.jit
def grid_stride(A, B, C):
    start = cuda.grid(1)
    for e in range(start, C.shape[0] * C.shape[1], cuda.gridsize(1)):
        row, col = e // C.shape[1], e % C.shape[1]
        total = 0.0
        for k in range(A.shape[1]):
            total += A[row, k] * B[k, col]
        C[row, col] = total
'''


def section_sandbox(target: str, work: Path) -> list[dict]:
    """What a kernel file's sandboxed child reports for a run on the target."""
    from kernels.backends.child import runner

    path = work / "grid_stride_file.py"
    path.write_text(GRID_STRIDE_FILE)
    request = RunRequest(kernel=None, kernel_file=str(path), m=33, k=17, n=29, grid=(3,),
                         block=(64,), backend=target)
    result = run(request, isolate=True)
    child = runner(simulator=False, gpu=result.backend == "gpu")
    report = dict(child.sandbox or {})
    context = report.get("cuda_context")
    ordered = context is None or (context["made"] and context["at"] < report["entered_at"])
    return [{"backend": result.backend, "verdict": result.verdict.word,
             "landlock": report.get("landlock"), "landlock_missing": report.get("landlock_missing"),
             "limits": report.get("limits"), "cuda_context": context,
             "mismatched": [] if ordered and result.verdict.passed else
             ["the context was not made before the sandbox, or the run failed"],
             "maps_equal": ordered and result.verdict.passed}]


def section_commands(target: str, dry_run: bool) -> list[dict]:
    """Whole-command times of issue 40's table, on the target (three runs each)."""
    big = "512x16x512" if dry_run else "4096x16x4096"
    cube = "128x128x128" if dry_run else "1024x1024x1024"
    huge = ("256x256x256", "8", "256") if dry_run else ("4096x4096x4096", "1056", "256")
    cases = [
        ("run --kernel naive-2d --shape 128x256x128",
         ("run", "--kernel", "naive-2d", "--shape", "128x256x128")),
        ("run --kernel-file grid_chunks.py --shape 100x37x90",
         ("run", "--kernel-file", str(ROOT / "tests" / "kernels" / "grid_chunks.py"), "--shape",
          "100x37x90")),
        (f"run --kernel grid-stride --shape {big}",
         ("run", "--kernel", "grid-stride", "--shape", big)),
        (f"run --kernel tiled --shape {cube}", ("run", "--kernel", "tiled", "--shape", cube)),
        (f"run --kernel grid-stride --shape {huge[0]} --grid {huge[1]} --block {huge[2]}",
         ("run", "--kernel", "grid-stride", "--shape", huge[0], "--grid", huge[1], "--block",
          huge[2])),
    ]
    rows = []
    for label, args in cases:
        times, outcome = [], ""
        for _ in range(3):
            with tempfile.TemporaryDirectory() as out:
                seconds, done = threadmap_command(*args, "--backend", target, "--out", out)
            times.append(seconds)
            outcome = "ok" if done.returncode in (0, 1) else last_line(done)
        rows.append({"command": label, "backend": target, "seconds": times, "outcome": outcome})
    return rows


def timed_lines(*args: str, timeout: float = 600) -> tuple[float, list[tuple[float, str]], int]:
    """``threadmap ARGS`` as a whole process: its wall time, each line it
    printed with the seconds from the start when it came, and its status."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "kernels", *args], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append((time.perf_counter() - started, line.rstrip("\n")))
    process.wait(timeout=timeout)
    return time.perf_counter() - started, lines, process.returncode


def _when(lines: list[tuple[float, str]], text: str) -> float | None:
    return next((at for at, line in lines if text in line), None)


FIRST_MAP_SCRIPT = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from kernels import RunRequest, run

run(RunRequest(kernel="grid-stride", m=16, k=8, n=16, grid=(1,), block=(64,)), gpu_follows=True)
started = time.perf_counter()
result = run(RunRequest(kernel=None, kernel_file=sys.argv[2], m=64, k=64, n=64, grid=(4,),
                        block=(256,)), isolate=True, time_limit=60, gpu_follows=True)
print(json.dumps({"seconds": time.perf_counter() - started, "backend": result.backend,
                  "follows": result.follows, "verdict": result.verdict.word}))
'''


def section_goals(target: str, work: Path) -> list[dict]:
    """Issue 40's goals on one H200: the first complete map of a new kernel
    file on auto (< 1 s), the same kernel again on --backend gpu with warm
    caches (< 1.5 s), and the GPU's figures after a built-in's first map
    (< 2 s).  In --dry-run (no GPU) auto is the CPU emulation and nothing follows."""
    rows = []
    fresh = work / "fresh_kernel.py"
    fresh.write_text(GRID_STRIDE_FILE + f"\n# {time.time_ns()}: a kernel no cache has seen\n")
    # As bench_edit_loop.py's "in-process": the app, or a Python session, that
    # has imported ThreadMap and run one other kernel, then gets a new file.
    done = subprocess.run([sys.executable, "-c", FIRST_MAP_SCRIPT, str(ROOT), str(fresh)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return [{"error": last_line(done)}]
    first = json.loads(done.stdout.strip().splitlines()[-1])
    fresh.write_text(GRID_STRIDE_FILE + f"\n# {time.time_ns()}: another new kernel\n")
    seconds, lines, code = timed_lines("run", "--kernel-file", str(fresh), "--shape", "64x64x64",
                                       "--out", str(work / "goals-new"))
    rows.append({"goal": "auto, new kernel file 64^3: first complete map (in-process)",
                 "limit_s": 1.0, "seconds": first["seconds"], "backend": first["backend"],
                 "follows": first["follows"], "verdict": first["verdict"],
                 "whole_command_first_map_s": _when(lines, "wrote "),
                 "whole_command_s": seconds, "status": code, "met": first["seconds"] < 1.0})
    again = [timed_lines("run", "--kernel-file", str(fresh), "--shape", "64x64x64", "--backend",
                         target, "--out", str(work / "goals-again")) for _ in range(2)]
    rows.append({"goal": f"--backend {target}, the same kernel again (warm): whole command",
                 "limit_s": 1.5, "seconds": again[-1][0], "status": again[-1][2],
                 "met": again[-1][0] < 1.5})
    seconds, lines, code = timed_lines("run", "--kernel", "naive-2d", "--shape", "128x256x128",
                                       "--out", str(work / "goals-follow"))
    first_map, gpu = _when(lines, "wrote "), _when(lines, "GPU: ")
    follow = None if first_map is None or gpu is None else gpu - first_map
    rows.append({"goal": "auto, built-in 128x256x128: the GPU's figures after the first map",
                 "limit_s": 2.0, "seconds": follow, "first_map_s": first_map,
                 "whole_command_s": seconds, "status": code,
                 "met": follow is not None and follow < 2.0 if target == "gpu" else None})
    return rows


#: kernel files of tests/kernels run through the command line: race-free,
#: out of bounds, colliding, shared memory with barriers, a global race
FILES = ("grid_chunks.py", "thread_index_only.py", "doc_style_tiled.py", "missing_barrier.py",
         "accumulate_in_c.py")
#: the course's described kernels (examples/), each with its reference
COURSE = ("vector_add", "saxpy", "transpose_tiled", "reduce_sequential", "reduce_shuffle",
          "histogram", "scan_blelloch", "softmax_rows")
#: files that ``check`` grades
CHECKED = ("grid_chunks.py", "thread_index_only.py", "fixed_constant.py")


def write_json(path: str, figures: dict) -> None:
    """Whole or not at all: a temporary file beside it, then a rename."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(dir=target.parent or ".", prefix=target.name + ".")
    with os.fdopen(handle, "w") as file:
        json.dump(figures, file, indent=2, default=str)
    os.replace(temporary, target)


def print_rows(name: str, rows: list[dict]) -> None:
    for row in rows:
        if "error" in row:
            status = f"ERROR: {row['error']}"
        elif "maps_equal" in row:
            status = "agree" if row["maps_equal"] else f"DIFFER: {', '.join(row['mismatched'])}"
        else:
            status = ""
        what = row.get("kernel") or row.get("file") or row.get("command") or row.get("call") \
            or row.get("goal") or row.get("backend", "")
        extra = ""
        if "seconds" in row and isinstance(row["seconds"], list):
            extra = " ".join(f"{s:.2f}" for s in row["seconds"]) + " s"
        elif "goal" in row:
            figure = "-" if row["seconds"] is None else f"{row['seconds']:.2f} s"
            extra = f"{figure} (goal < {row['limit_s']:g} s: " \
                    f"{ {True: 'met', False: 'NOT met', None: 'no GPU'}[row['met']]})"
        elif "verdict" in row:
            extra = str(row["verdict"])[:40]
        print(f"  {name:9s} {str(what)[:48]:48s} {extra:40s} {status}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: run the same checks on the CPU emulation, small sizes")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("--only", help="sections to run, separated by commas (default: all)")
    args = parser.parse_args()
    target = "cpu" if args.dry_run else "gpu"
    if not args.dry_run:
        from kernels.backends.device import gpu_available, gpu_status

        if not gpu_available():
            print(f"no usable GPU here: {gpu_status()} (--dry-run runs the checks on the CPU)")
            return 2
    started = time.perf_counter()
    figures: dict = {"target": target, "sections": {}, "seconds": {}, "errors": {}}
    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))

    def builtin() -> list[dict]:
        rows = []
        for kernel in CATALOGUE:
            shape = (40, 24, 36) if kernel == "tiled" else (
                (16, 8, 16) if kernel == "tid-rows" else (193, 67, 201))
            rows.append(compare_maps(kernel, shape, target))
        return rows

    size = 256 if args.dry_run else args.size
    sections = {
        "builtin": builtin,
        "warp": lambda: compare_warp_kernels(target),
        "files": lambda: section_files(target, work, "100x37x90"),
        "course": lambda: section_course(target, work),
        "api": lambda: section_api(target),
        "check": lambda: section_check(target, work),
        "hunt": lambda: section_hunt(target, work),
        "sandbox": lambda: section_sandbox(target, work),
        "commands": lambda: section_commands(target, args.dry_run),
        "goals": lambda: section_goals(target, work),
        "plain": lambda: time_kernels(size, args.repeats, args.dry_run),
    }
    chosen = args.only.split(",") if args.only else list(sections)
    for name in chosen:
        began = time.perf_counter()
        try:
            rows = sections[name]()
        except Exception as exc:  # (one section's failure is reported; the others still run)
            figures["errors"][name] = f"{type(exc).__name__}: {exc}"
            print(f"  {name:9s} FAILED: {type(exc).__name__}: {exc}", flush=True)
            rows = []
        figures["sections"][name] = rows
        figures["seconds"][name] = time.perf_counter() - began
        print_rows(name, rows)
        print(f"  {name:9s} ({figures['seconds'][name]:.1f} s)", flush=True)
        if args.json:
            write_json(args.json, figures)
    figures["seconds"]["total"] = time.perf_counter() - started
    if args.json:
        write_json(args.json, figures)
    print(f"\ntotal {figures['seconds']['total']:.0f} s")
    compared = [r for rows in figures["sections"].values() for r in rows]
    if figures["errors"] or any("error" in r for r in compared):
        return 2
    return 0 if all(r.get("maps_equal", True) for r in compared) else 1


if __name__ == "__main__":
    sys.exit(main())
