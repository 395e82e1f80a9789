"""Engine benchmark: every ratio is measured side by side in one run.

    .venv/bin/python benchmarks/bench_engine.py            # everything (15+ minutes)
    .venv/bin/python benchmarks/bench_engine.py --quick    # skip the 262k-thread simulator run
    .venv/bin/python benchmarks/bench_engine.py --baseline /tmp/before   # and section 7

Sections
1. CPU emulation vs CUDA simulator on the same request (grid-stride, C 128 x 256,
   K = 128; launches 1 x 1024 and 1024 x 256).
2. The emulation on C 2048 x 2048 and 4096 x 4096 maps (K = 16): the recording
   run alone, the plain run, and the whole ``run()`` end to end; 1 core vs 2.
3. First-call compile times: the emulation (cold cache, warm cache in a new
   process) and ``compile_ptx`` for every built-in kernel.
4. Why the emulation disables NRT: the same recording loop with and without it.
5. Shared memory: ``tiled`` at 128^3 in the block-lockstep emulation vs the
   simulator, same request, kernel times in the process that ran them.
6. ``tiled`` at 1024^3: the whole ``threadmap run`` command, in a new process
   (numba's cache warm, as after a first run).
7. With ``--baseline DIR`` (a checkout of an earlier commit, its own venv not
   needed): grid-stride 4096 x 16 x 4096 at 2048 x 256 in both trees,
   alternating, 1 core and 2: the recording and plain runs.
8. Lean runs (``--lean`` runs this section alone): the whole ``threadmap run``
   of grid-stride 4096 x 16 x 4096 at 2048 x 256, and ``threadmap sweep`` of
   grid-stride 512 x 64 x 512 over 8 grids x 8 blocks (images included), each
   in a new process with numba's cache warm: wall time and bytes written;
   with ``--baseline DIR``, the same commands in that tree, alternating.
9. What trust costs (``--trust`` runs this section alone; issue 18): a kernel
   file's whole ``threadmap run`` (a sandboxed child), ``threadmap check`` of
   the files of tests/hostile/, each in a new process with numba's cache
   warm (the run against ``--baseline``); and in this process, the parse and plan of
   a kernel file (the allow-list's checks), the child's sandbox (limits and
   Landlock), and ``result.json`` + ``maps.npz`` of a 4096 x 4096 run written
   whole (temporary files, fsync, renames) against plain writes.
10. Any kernel (``--any`` runs this section alone; issue 22): the whole ``threadmap
   run`` of the naive transpose at 4096 x 4096 and of Harris's reduction 4 over
   2^24 elements into 65,536 block sums, compiled tier, with their references,
   each in a new process with numba's cache warm; with ``--baseline DIR``, the
   same commands in that tree, alternating.  Then an in-place kernel over 2^20
   elements (``in_place_scale.py``), whose array this tree checks for races in
   global memory: against a tree without that check, the ratio is its cost.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernels import RunRequest, run  # noqa: E402


def kernel_seconds(result, what: str) -> float | None:
    timing = result.timing(what)
    return timing.seconds if timing else None


def emulator_vs_simulator(quick: bool) -> list[dict]:
    rows = []
    launches = [((1,), (1024,))] + ([] if quick else [((1024,), (256,))])
    for grid, block in launches:
        request = RunRequest(kernel="grid-stride", m=128, k=128, n=256, grid=grid, block=block,
                             repeats=1)
        cpu = run(request.with_(backend="cpu"))
        cpu = run(request.with_(backend="cpu"))  # compiled and cached: time the run itself
        started = time.perf_counter()
        sim = run(request.with_(backend="sim"))
        sim_wall = time.perf_counter() - started
        row = {"launch": f"{grid[0]} x {block[0]}"}
        for what in ("instrumented kernel", "kernel"):
            c, s = kernel_seconds(cpu, what), kernel_seconds(sim, what)
            row[what] = {"emulator_s": c, "simulator_s": s, "ratio": s / c}
        row["simulator_run_wall_s"] = sim_wall
        row["maps_identical"] = bool((cpu.maps.count == sim.maps.count).all()
                                     and (cpu.maps.min_writer == sim.maps.min_writer).all())
        rows.append(row)
        print(f"  {row['launch']:>11}: instrumented emulator {row['instrumented kernel']['emulator_s']:.4f} s"
              f" vs simulator {row['instrumented kernel']['simulator_s']:.1f} s "
              f"= {row['instrumented kernel']['ratio']:.0f}x; plain {row['kernel']['emulator_s']:.4f} s"
              f" vs {row['kernel']['simulator_s']:.1f} s = {row['kernel']['ratio']:.0f}x;"
              f" maps identical: {row['maps_identical']}", flush=True)
    return rows


def large_maps() -> list[dict]:
    rows = []
    for n, grid, block in ((2048, (2048,), (256,)), (4096, (2048,), (256,)), (4096, (1,), (1024,))):
        request = RunRequest(kernel="grid-stride", m=n, k=16, n=n, grid=grid, block=block,
                             backend="cpu", repeats=1)
        for workers in ("1", "2"):
            os.environ["THREADMAP_EMULATION_WORKERS"] = workers
            for attempt in ("first", "second"):
                started = time.perf_counter()
                result = run(request)
                wall = time.perf_counter() - started
                row = {"C": f"{n} x {n}", "K": 16, "launch": f"{grid[0]} x {block[0]}",
                       "workers": int(workers), "attempt": attempt,
                       "recording_s": kernel_seconds(result, "instrumented kernel"),
                       "plain_s": kernel_seconds(result, "kernel"), "run_wall_s": wall,
                       "verdict": result.verdict.word}
                rows.append(row)
                print(f"  C {row['C']}, {row['launch']}, {workers} core(s), {attempt} run: "
                      f"recording {row['recording_s']:.3f} s, plain {row['plain_s']:.3f} s, "
                      f"whole run() {wall:.2f} s, {row['verdict']}", flush=True)
                del result
    os.environ.pop("THREADMAP_EMULATION_WORKERS", None)
    return rows


_COMPILE_PROBE = """
import sys, time
sys.path.insert(0, {root!r})
from kernels import RunRequest, run
result = run(RunRequest(kernel={kernel!r}, m=8, k=8, n=8, grid=(1,), block=(32,), backend="cpu"))
print(result.timing("compile").seconds)
"""


def compile_times() -> dict:
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.catalogue import CATALOGUE
    from kernels.sources.loader import _builtin_plan

    out: dict = {"emulator": {}, "ptx": {}}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, THREADMAP_CACHE_DIR=cache)
        for name in CATALOGUE:
            seconds = []
            for _ in ("cold", "warm"):
                probe = _COMPILE_PROBE.format(root=str(ROOT), kernel=name)
                proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                                      text=True, check=True)
                seconds.append(float(proc.stdout.strip().splitlines()[-1]))
            out["emulator"][name] = {"cold_s": seconds[0], "warm_cache_s": seconds[1]}
            print(f"  emulation {name:22s}: first call {seconds[0]:.2f} s cold cache, "
                  f"{seconds[1]:.2f} s from numba's cache in a new process", flush=True)
    for name in CATALOGUE:
        plan = _builtin_plan(name)
        gen = load_module(plan, "cuda", "float32")
        times = {}
        for label, function, recording in (("kernel", plan.name, False),
                                           ("recording", f"{plan.name}__tm_record", True)):
            started = time.perf_counter()
            compile_ptx_for(plan, gen.function(function), "float32", recording, cc=(9, 0))
            times[label] = time.perf_counter() - started
        out["ptx"][name] = times
        print(f"  compile_ptx sm_90 {name:22s}: kernel {times['kernel']:.2f} s, "
              f"recording kernel {times['recording']:.2f} s", flush=True)
    return out


def nrt_ablation() -> dict:
    import numpy as np

    from kernels.backends import cpu
    from kernels.backends.common import KernelJob
    from kernels.derived.codegen import _CPU_OPTIONS, load_module
    from kernels.derived.local_types import kernel_types
    from kernels.inputs import make_inputs
    from kernels.sources.loader import _builtin_plan

    plan = _builtin_plan("grid-stride")
    m = k = n = 256
    request = RunRequest(kernel="grid-stride", m=m, k=k, n=n, grid=(1,), block=(1024,),
                         backend="cpu")
    a, b = make_inputs("random", m, k, n, "float32")
    job = KernelJob(request, plan, (a, b), (), False)
    types = kernel_types(plan, "float32", ())
    control = np.zeros(2, np.int64)
    out = {}
    for label, options in (("NRT off (ThreadMap)", _CPU_OPTIONS),
                           ("NRT on (numba default)", _CPU_OPTIONS.replace("_nrt=False",
                                                                          "_nrt=True"))):
        gen = load_module(plan, "cpu", "float32", types, cpu_options=options)
        driver = gen.function("_tm_run_record")
        times = []
        for _ in range(3):
            worker = cpu._make_worker(gen, job, control, True, job.fresh_records(),
                                      cpu._lockstep_records(gen.layout, job))
            started = time.perf_counter()
            units = gen.layout.units(request.blocks, request.threads_per_block)
            driver(*cpu._call_args(worker, gen.layout, job, "record", 0, units, 0))
            times.append(time.perf_counter() - started)
        best = min(times[1:])
        out[label] = {"seconds": best, "ns_per_inner_iteration": best / (m * n * k) * 1e9}
        print(f"  {label:24s}: {best:.3f} s = {out[label]['ns_per_inner_iteration']:.1f} ns per "
              "inner iteration (recording grid-stride, 256^3, 1 x 1024, 1 core)", flush=True)
    labels = list(out)
    out["slowdown_with_nrt"] = out[labels[1]]["seconds"] / out[labels[0]]["seconds"]
    print(f"  NRT on is {out['slowdown_with_nrt']:.1f}x slower", flush=True)
    return out


def shared_memory_vs_simulator() -> dict:
    request = RunRequest(kernel="tiled", m=128, k=128, n=128, grid=(8, 8), block=(16, 16),
                         repeats=1)
    run(request.with_(backend="cpu"))  # compiled and cached: time the runs themselves
    cpu = run(request.with_(backend="cpu"))
    started = time.perf_counter()
    sim = run(request.with_(backend="sim"))
    sim_wall = time.perf_counter() - started
    row = {"request": "tiled 128^3, 8 x 8 blocks of 16 x 16"}
    for what in ("instrumented kernel", "kernel"):
        c, s = kernel_seconds(cpu, what), kernel_seconds(sim, what)
        row[what] = {"emulator_s": c, "simulator_s": s, "ratio": s / c}
    row["simulator_run_wall_s"] = sim_wall
    row["maps_identical"] = all(
        bool((getattr(cpu.maps, f) == getattr(sim.maps, f)).all())
        for f in ("count", "min_writer", "max_writer", "iteration", "reads_a", "reads_b"))
    print(f"  tiled 128^3: instrumented emulation {row['instrumented kernel']['emulator_s']:.4f} s"
          f" vs simulator {row['instrumented kernel']['simulator_s']:.1f} s = "
          f"{row['instrumented kernel']['ratio']:,.0f}x; plain {row['kernel']['emulator_s']:.4f} s"
          f" vs {row['kernel']['simulator_s']:.1f} s = {row['kernel']['ratio']:,.0f}x; maps "
          f"identical: {row['maps_identical']}", flush=True)
    return row


def tiled_whole_command() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as out:
        # The installed command, as a user types it.
        command = [str(Path(sys.executable).with_name("threadmap")), "run", "--kernel", "tiled",
                   "--shape", "1024x1024x1024", "--backend", "cpu", "--out", out]
        for attempt in ("first", "second"):
            started = time.perf_counter()
            proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - started
            result = json.loads((Path(out) / "result.json").read_text())
            timings = {t["what"]: t["seconds"] for t in result["timings"]}
            row = {"attempt": attempt, "wall_s": wall, "verdict": result["verdict"],
                   "exit": proc.returncode, "compile_s": timings.get("compile"),
                   "recording_s": timings.get("instrumented kernel"),
                   "plain_s": timings.get("kernel")}
            rows.append(row)
            print(f"  threadmap run tiled 1024^3 ({attempt}): {wall:.2f} s whole command; "
                  f"compile {row['compile_s']:.2f} s, recording {row['recording_s']:.2f} s, "
                  f"plain {row['plain_s']:.2f} s, {row['verdict']}", flush=True)
    return rows


_GRID_STRIDE_PROBE = """
import sys
sys.path.insert(0, {root!r})
from kernels import RunRequest, run
request = RunRequest(kernel="grid-stride", m=4096, k=16, n=4096, grid=(2048,), block=(256,),
                     backend="cpu", repeats=1)
run(request.with_(m=64, n=64))
import time
started = time.perf_counter()
result = run(request)
wall = time.perf_counter() - started
print(result.timing("instrumented kernel").seconds, result.timing("kernel").seconds, wall)
"""


def against_baseline(baseline: Path, rounds: int = 3) -> dict:
    out: dict = {}
    for workers in ("1", "2"):
        env = dict(os.environ, THREADMAP_EMULATION_WORKERS=workers)
        samples: dict = {"baseline": [], "this": []}
        for _ in range(rounds):
            for label, root in (("baseline", baseline), ("this", ROOT)):
                probe = _GRID_STRIDE_PROBE.format(root=str(root))
                proc = subprocess.run([sys.executable, "-c", probe], env=env,
                                      capture_output=True, text=True, check=True)
                recording, plain, wall = map(float, proc.stdout.split()[-3:])
                samples[label].append((recording, plain, wall))
        row = {}
        for label, values in samples.items():
            recording = sorted(v[0] for v in values)
            plain = sorted(v[1] for v in values)
            wall = sorted(v[2] for v in values)
            row[label] = {"recording_s": recording, "plain_s": plain, "run_s": wall}
        row["recording_ratio_of_medians"] = (row["this"]["recording_s"][rounds // 2]
                                             / row["baseline"]["recording_s"][rounds // 2])
        row["plain_ratio_of_medians"] = (row["this"]["plain_s"][rounds // 2]
                                         / row["baseline"]["plain_s"][rounds // 2])
        row["run_ratio_of_medians"] = (row["this"]["run_s"][rounds // 2]
                                       / row["baseline"]["run_s"][rounds // 2])
        out[f"{workers} core(s)"] = row
        print(f"  grid-stride 4096 x 16 x 4096, 2048 x 256, {workers} core(s): recording "
              f"{fmt(row['this']['recording_s'])} s vs baseline "
              f"{fmt(row['baseline']['recording_s'])} s (median ratio "
              f"{row['recording_ratio_of_medians']:.2f}); plain {fmt(row['this']['plain_s'])} "
              f"vs {fmt(row['baseline']['plain_s'])} (ratio "
              f"{row['plain_ratio_of_medians']:.2f}); whole run() {fmt(row['this']['run_s'])} vs "
              f"{fmt(row['baseline']['run_s'])} (ratio {row['run_ratio_of_medians']:.2f})",
              flush=True)
    return out


LEAN_RUN = ["run", "--kernel", "grid-stride", "--shape", "4096x16x4096", "--grid", "2048",
            "--block", "256", "--backend", "cpu"]
LEAN_SWEEP = ["sweep", "--kernel", "grid-stride", "--shape", "512x64x512", "--grids",
              "1,2,4,8,16,32,64,128", "--blocks", "32,64,96,128,160,256,512,1024",
              "--backend", "cpu"]


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _whole_commands(arguments: list[str], trees: list[tuple[str, Path]],
                    rounds: int) -> tuple[dict, dict]:
    """``threadmap ARGUMENTS --out TMP`` in a new process per tree, alternating,
    ``rounds`` times after one unmeasured round (it warms numba's cache):
    the sorted wall times and the bytes written, by tree.  Each tree has a
    cache of its own: files one version keeps (native drivers made for its
    record types) must not decide another's route."""
    samples: dict = {label: [] for label, _ in trees}
    sizes: dict = {}
    with contextlib.ExitStack() as stack:
        caches = {label: stack.enter_context(tempfile.TemporaryDirectory(
            prefix=f"threadmap-bench-{label}-")) for label, _ in trees}
        for round_ in range(rounds + 1):
            _round(arguments, trees, caches, samples, sizes, measured=round_ > 0)
    return {label: sorted(values) for label, values in samples.items()}, sizes


def _round(arguments: list[str], trees: list[tuple[str, Path]], caches: dict, samples: dict,
           sizes: dict, measured: bool) -> None:
    for label, root in trees:
        with tempfile.TemporaryDirectory() as out:
            command = [sys.executable, "-m", "app.launcher", *arguments, "--out", out]
            started = time.perf_counter()
            proc = subprocess.run(command, cwd=root, capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONPATH=str(root),
                                           THREADMAP_CACHE_DIR=caches[label]))
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                raise RuntimeError(f"{label}: {proc.stderr[-2000:]}")
            if measured:
                samples[label].append(wall)
                sizes[label] = _folder_bytes(Path(out))


def lean_commands(baseline: Path | None, rounds: int = 3) -> dict:
    """Whole commands, new process each, cache warm (one unmeasured run first)."""
    return _side_by_side((("run 4096x16x4096 2048x256", LEAN_RUN),
                          ("sweep 512x64x512 8x8", LEAN_SWEEP)), baseline, rounds)


def _side_by_side(commands, baseline: Path | None, rounds: int, goal: str = "") -> dict:
    """Each (name, arguments) as a whole command in this tree and, with
    ``baseline``, in that one, alternating: wall times, bytes written, the
    ratio of the medians; printed as they come."""
    trees = [("this", ROOT)] + ([("baseline", baseline)] if baseline else [])
    figures: dict = {}
    for name, arguments in commands:
        walls, sizes = _whole_commands(arguments, trees, rounds)
        row = {label: {"wall_s": values, "bytes": sizes[label]}
               for label, values in walls.items()}
        text = (f"  {name}: {fmt(row['this']['wall_s'])} s{goal}, "
                f"{row['this']['bytes'] / 1e6:.0f} MB written")
        if baseline:
            ratio = (row["this"]["wall_s"][rounds // 2]
                     / row["baseline"]["wall_s"][rounds // 2])
            row["wall_ratio_of_medians"] = ratio
            text += (f"; baseline {fmt(row['baseline']['wall_s'])} s, "
                     f"{row['baseline']['bytes'] / 1e6:.0f} MB (median ratio {ratio:.2f})")
        figures[name] = row
        print(text, flush=True)
    return figures


NAIVE_FILE = ROOT / "tests" / "hostile" / "host_code_never_runs.py"

#: issue 22's two runs, each to finish under 3 s as a whole command on 2 cores
ANY_TRANSPOSE = ["run", "--kernel-file", "examples/transpose_naive.py",
                 "--arg", "a=float32[4096,4096]", "--arg", "out=float32[4096,4096]",
                 "--grid", "128x128", "--block", "32x8", "--backend", "cpu",
                 "--tier", "compiled", "--reference", "examples/references.py:transpose"]
ANY_REDUCTION = ["run", "--kernel-file", "examples/reduce_first_add.py",
                 "--arg", "x=float32[16777216]", "--arg", "partial=float32[65536]",
                 "--grid", "65536", "--block", "128", "--backend", "cpu",
                 "--tier", "compiled", "--reference",
                 "examples/references.py:reduce_first_add"]


#: an in-place kernel over 2^20 elements: against a tree without the race
#: check in global memory, the ratio is what the check costs
ANY_IN_PLACE = ["run", "--kernel-file", str(ROOT / "benchmarks" / "in_place_scale.py"),
                "--grid", "4096", "--block", "256", "--backend", "cpu", "--tier", "compiled"]


def any_kernel_commands(baseline: Path | None, rounds: int = 3) -> dict:
    """The transpose and the reduction, whole commands, new process each; and
    an in-place kernel whose array is checked for races."""
    figures = _side_by_side((("transpose 4096 x 4096", ANY_TRANSPOSE),
                             ("reduction of 2^24", ANY_REDUCTION)), baseline, rounds,
                            " (goal 3 s)")
    figures.update(_side_by_side((("in place, 2^20, race-checked", ANY_IN_PLACE),),
                                 baseline, rounds))
    return figures


def trust_costs(baseline: Path | None, rounds: int = 3) -> dict:
    """Section 9: what the defences of issue 18 cost, side by side."""
    figures: dict = {}
    trees = [("this", ROOT)] + ([("baseline", baseline)] if baseline else [])
    with tempfile.TemporaryDirectory() as scratch:
        kernel = Path(scratch) / "naive.py"
        kernel.write_text(NAIVE_FILE.read_text().replace("MARKER", str(Path(scratch) / "m")))
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        for path in sorted((ROOT / "tests" / "hostile").glob("*.py")):
            (corpus / path.name).write_text(path.read_text().replace(
                "MARKER", str(Path(scratch) / "m")))
        commands = {
            "run of a kernel file (child process), 64x64x64": [
                "run", "--kernel-file", str(kernel), "--shape", "64x64x64"],
            f"check of tests/hostile ({len(list(corpus.iterdir()))} files)": [
                "check", str(corpus), "--shapes", "8x8x8", "--launches", "1x1:8x8"],
        }
        for name, arguments in commands.items():
            # (the earlier tree runs some of the corpus's code, and hangs on its chained
            # constants: the check is timed in this tree alone)
            here = trees if arguments[0] == "run" else trees[:1]
            row, _ = _whole_commands(arguments, here, rounds)
            text = f"  {name}: {fmt(row['this'])} s"
            if "baseline" in row:
                row["ratio_of_medians"] = row["this"][rounds // 2] / row["baseline"][rounds // 2]
                text += (f"; baseline {fmt(row['baseline'])} s (median ratio "
                         f"{row['ratio_of_medians']:.2f})")
            figures[name] = row
            print(text, flush=True)
    figures.update(_trust_in_process())
    return figures


def _trust_in_process() -> dict:
    import statistics

    from kernels.backends import sandbox  # noqa: F401  (imported as the child does)
    from kernels.maps_file import save_maps
    from kernels.outputs import OutputFolder
    from kernels.sources.plan import make_plan
    from kernels.sources.source import parse_module

    figures: dict = {}
    text = NAIVE_FILE.read_text()
    times = []
    for _ in range(20):
        started = time.perf_counter()
        module = parse_module(text, "naive.py")
        make_plan(module, module.kernel(None))
        times.append(time.perf_counter() - started)
    figures["parse and plan of a kernel file (ms)"] = 1e3 * statistics.median(times)
    probe = ("import time, sys; from pathlib import Path; from kernels.backends import sandbox; "
             "t = time.perf_counter(); a = sandbox.enter([Path(sys.argv[1])]); "
             "print(time.perf_counter() - t, a['landlock'])")
    with tempfile.TemporaryDirectory() as folder:
        entered = []
        for _ in range(5):
            proc = subprocess.run([sys.executable, "-c", probe, folder], cwd=ROOT,
                                  capture_output=True, text=True, check=True)
            seconds, landlock = proc.stdout.split()
            entered.append(float(seconds))
    figures["sandbox entered by a child (ms)"] = 1e3 * statistics.median(entered)
    figures["landlock"] = landlock == "True"
    result = run(RunRequest(kernel="grid-stride", m=4096, k=16, n=4096, grid=(2048,),
                            block=(256,), backend="cpu", repeats=1))
    arrays = result.maps_arrays()
    whole, plain = [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(3):
            started = time.perf_counter()
            save_maps(Path(folder) / "plain.npz", arrays, "float32")
            (Path(folder) / "plain.json").write_text(json.dumps(result.summary()))
            plain.append(time.perf_counter() - started)
            started = time.perf_counter()
            with OutputFolder(Path(folder) / "whole") as out:
                out.write("maps.npz", lambda path: save_maps(path, arrays, "float32",
                                                              run_id="x"))
                out.write_text("result.json", json.dumps(result.summary()))
                out.publish()
            whole.append(time.perf_counter() - started)
    figures["4096x4096 outputs written plainly (s)"] = sorted(plain)
    figures["4096x4096 outputs written whole, fsynced (s)"] = sorted(whole)
    for key, value in figures.items():
        print(f"  {key}: {fmt(value) if isinstance(value, list) else value}", flush=True)
    return figures


def fmt(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1024 x 256 simulator run")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of an earlier commit to compare grid-stride against")
    parser.add_argument("--lean", action="store_true", help="run section 8 alone")
    parser.add_argument("--trust", action="store_true", help="run section 9 alone")
    parser.add_argument("--any", action="store_true", help="run section 10 alone")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    figures = {}
    alone = [(key, title, section) for wanted, key, title, section in (
        (args.lean, "lean", "8. lean runs: whole commands", lean_commands),
        (args.trust, "trust", "9. what trust costs", trust_costs),
        (args.any, "any_kernel", "10. any kernel: whole commands", any_kernel_commands))
        if wanted]
    if alone:
        for key, title, section in alone:
            print(title, flush=True)
            figures[key] = section(args.baseline)
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2))
        return 0
    print("1. emulator vs simulator, grid-stride, C 128 x 256, K = 128", flush=True)
    figures["emulator_vs_simulator"] = emulator_vs_simulator(args.quick)
    print("2. emulation of large maps", flush=True)
    figures["large_maps"] = large_maps()
    print("3. compile times", flush=True)
    figures["compile"] = compile_times()
    print("4. NRT ablation", flush=True)
    figures["nrt"] = nrt_ablation()
    print("5. shared memory: emulation vs simulator", flush=True)
    figures["shared_memory"] = shared_memory_vs_simulator()
    print("6. tiled 1024^3, the whole command", flush=True)
    figures["tiled_1024"] = tiled_whole_command()
    if args.baseline:
        print(f"7. against {args.baseline}", flush=True)
        figures["baseline"] = against_baseline(args.baseline)
    print("8. lean runs: whole commands", flush=True)
    figures["lean"] = lean_commands(args.baseline)
    print("9. what trust costs", flush=True)
    figures["trust"] = trust_costs(args.baseline)
    print("10. any kernel: whole commands", flush=True)
    figures["any_kernel"] = any_kernel_commands(args.baseline)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
