"""The edit loop (issue 19): how soon a new or edited kernel shows its first map.

    .venv/bin/python benchmarks/bench_edit_loop.py              # everything
    .venv/bin/python benchmarks/bench_edit_loop.py --quick      # no simulator at 128x256x128
    .venv/bin/python benchmarks/bench_edit_loop.py --baseline /tmp/before   # and section 6

Every figure is measured in this one run, side by side, with cold caches: each
case gets an empty ``THREADMAP_CACHE_DIR`` and ``NUMBA_CACHE_DIR``, as on a new
user's first day.  "In-process" means a process that has already imported
ThreadMap and run one other kernel (the app, or a Python session using the
API); "whole command" is a new ``threadmap`` process.

1. A new kernel file (the naive 2-D matmul), 64x64x64 on 4x4 blocks of 16x16:
   the first complete result (maps, analyses, verdict), in-process (through
   the kernel file's sandboxed child, as the app and ``threadmap()`` run it)
   and as a whole ``threadmap run``; then the same after a one-line edit; and
   the compiled tier (``--tier compiled``) the same way, for comparison.
2. ``tiled`` at 64x64x64, cold, in-process.
3. ``threadmap hunt`` on a kernel whose bug shows at 1x1x1: when the failing
   case is found.
4. ``threadmap check`` on 20 small kernel files x 2 shapes x 2 launches:
   wall time, and rows that are not PASS / FAIL.
5. Instant tier against numba's simulator, the same request, in-process:
   naive-2d at 64^3 and 128x256x128 (with ``--quick``, only 64^3).
7. A new kernel file with a warp-shuffle reduction (tests/kernels/warp_ops.py's
   matmul_warp_dot), 37x70x29 on 8 blocks of 64: the first complete result,
   whole ``threadmap run`` commands with cold caches, --tier auto (the instant
   tier: warp operations in numpy) against --tier compiled.
8. The Start here walk (kernels/tour.py), caches cold, in-process: each
   step's first complete result (goal: under 2 s each on 2 cores).  Then the
   seed's kernel where it does 1,024x a matmul's work (tid-rows 8x1024x8 on
   1 x 1024), as a whole ``threadmap run``, cold, --tier auto: the instant
   tier's trip-count probe hands it over at once; with ``--baseline DIR``
   (the commit before the probe), that tree's command alternates with this
   one's, 3 rounds, each with its own cold caches.
6. With ``--baseline DIR`` (a checkout of the commit before the tiers): the
   large launches on the compiled tier (grid-stride 4096x16x4096 at
   2048 x 256, ``tiled`` 1024^3), whole ``threadmap run`` commands with
   numba's cache warm, alternating between the trees, 3 rounds.
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

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

NAIVE = '''from numba import cuda


@cuda.jit
def matmul(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[row, k] * B[k, col]
        C[row, col] = tmp
'''
#: A bug that shows at 1x1x1: the loop stops one short of K.
BUG_AT_ONE = NAIVE.replace("range(A.shape[1])", "range(A.shape[1] - 1)")


def cold_env(folder: Path) -> dict:
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(folder / "tm-cache"),
               NUMBA_CACHE_DIR=str(folder / "numba-cache"))
    env.pop("THREADMAP_EMULATION_WORKERS", None)
    return env


def whole_command(arguments: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "app.launcher"] + arguments, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{arguments}: {done.stderr[-2000:]}")
    return seconds, done.stdout


#: Run in a new process: import ThreadMap, run one other kernel (the process is
#: "started"), then time the cases given as JSON on the command line.
IN_PROCESS = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from kernels import RunRequest, run
import kernels.api
if hasattr(kernels.api, "compile_files_in_children"):  # (as the app: a file typed in its child)
    kernels.api.compile_files_in_children()
cases = json.loads(sys.argv[2])
run(RunRequest(kernel="grid-stride", m=8, k=8, n=8, grid=(1,), block=(32,), backend="cpu",
               tier="instant"))
out = []
for case in cases:
    edit = case.pop("edit", None)
    if edit:
        open(edit[0], "w").write(edit[1])
    isolate = case.pop("isolate", False)
    request = RunRequest(**{k: tuple(v) if isinstance(v, list) else v for k, v in case.items()})
    began = time.perf_counter()
    result = run(request, isolate=isolate, time_limit=600 if isolate else None)
    seconds = time.perf_counter() - began
    out.append({"seconds": seconds, "verdict": result.verdict.word,
                "note": result.backend_note,
                "timings": [(t.what, t.seconds) for t in result.timings]})
print(json.dumps(out))
'''


def in_process(cases: list[dict], env: dict) -> list[dict]:
    done = subprocess.run([PYTHON, "-c", IN_PROCESS, str(ROOT), json.dumps(cases)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def edit_loop(work: Path) -> dict:
    figures = {}
    for tier in ("auto", "compiled"):
        folder = work / f"loop-{tier}"
        folder.mkdir()
        env = cold_env(folder)
        kernel = folder / "matmul.py"
        kernel.write_text(NAIVE)
        edited = NAIVE.replace("tmp = 0.0", "tmp = 0.0  # edited")
        base = dict(kernel=None, kernel_file=str(kernel), m=64, k=64, n=64, grid=[4, 4],
                    block=[16, 16], backend="cpu", tier=tier, isolate=True)
        new, after_edit = in_process([dict(base), dict(base, edit=[str(kernel), edited])], env)
        # The whole commands, with caches cold again (a new folder, a new file).
        folder2 = work / f"command-{tier}"
        folder2.mkdir()
        env2 = cold_env(folder2)
        kernel2 = folder2 / "matmul.py"
        kernel2.write_text(NAIVE)
        arguments = ["run", "--kernel-file", str(kernel2), "--shape", "64x64x64", "--grid",
                     "4x4", "--block", "16x16", "--backend", "cpu", "--tier", tier, "--out",
                     str(folder2 / "out")]
        first, _ = whole_command(arguments, env2, folder2)
        kernel2.write_text(edited)
        edit, _ = whole_command(arguments, env2, folder2)
        figures[tier] = {"in_process_new_s": new["seconds"],
                         "in_process_edit_s": after_edit["seconds"],
                         "command_new_s": first, "command_edit_s": edit,
                         "note": new["note"], "verdicts": (new["verdict"], after_edit["verdict"])}
        print(f"1. new kernel file 64^3, --tier {tier}: in-process {new['seconds']:.2f} s "
              f"(after a one-line edit {after_edit['seconds']:.2f} s); whole command "
              f"{first:.2f} s (after the edit {edit:.2f} s); {new['verdict']}", flush=True)
    return figures


def tiled_cold(work: Path) -> dict:
    folder = work / "tiled"
    folder.mkdir()
    row, = in_process([dict(kernel="tiled", m=64, k=64, n=64, grid=[4, 4], block=[16, 16],
                            backend="cpu")], cold_env(folder))
    print(f"2. tiled 64^3, cold, in-process: {row['seconds']:.2f} s, {row['verdict']} "
          f"({row['note']})", flush=True)
    return row


def hunt_case(work: Path) -> dict:
    folder = work / "hunt"
    folder.mkdir()
    kernel = folder / "bug.py"
    kernel.write_text(BUG_AT_ONE)
    began = time.perf_counter()
    process = subprocess.Popen([PYTHON, "-m", "app.launcher", "hunt", "--kernel-file",
                                str(kernel), "--out", str(folder / "out")], cwd=ROOT,
                               env=cold_env(folder), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate(timeout=600)
    total = time.perf_counter() - began
    report = json.loads((folder / "out" / "hunt.json").read_text())
    failing = report.get("failing") or {}
    print(f"3. hunt, bug at 1x1x1: whole command {total:.2f} s; failing case "
          f"{failing.get('shape')} {failing.get('grid')}x{failing.get('block')} "
          f"after {report.get('seconds', float('nan')):.2f} s of search", flush=True)
    return {"command_s": total, "search_s": report.get("seconds"), "failing": failing}


def check_case(work: Path) -> dict:
    folder = work / "check"
    subs = folder / "submissions"
    subs.mkdir(parents=True)
    for i in range(20):
        text = NAIVE if i % 4 else BUG_AT_ONE
        (subs / f"student{i:02d}.py").write_text(text.replace("tmp = 0.0", f"tmp = 0.0 * {i}"))
    began = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "app.launcher", "check", str(subs), "--shapes",
                           "32x16x32,17x9x23", "--launches", "2x2:16x16,4x4:8x8", "--out",
                           str(folder / "out")], cwd=ROOT, env=cold_env(folder),
                          capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - began
    rows = json.loads((folder / "out" / "report.json").read_text())["rows"]
    words = [r["verdict"] for r in rows]
    errors = [r for r in rows if r["verdict"] == "ERROR"]
    print(f"4. check, 20 files x 2 shapes x 2 launches: {seconds:.1f} s, {len(rows)} rows: "
          f"{words.count('PASS')} PASS, {words.count('FAIL')} FAIL, {len(errors)} ERROR"
          + (f" (first: {errors[0]['reasons']})" if errors else ""), flush=True)
    return {"seconds": seconds, "rows": len(rows), "errors": len(errors),
            "returncode": done.returncode}


def against_simulator(quick: bool) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from kernels import RunRequest, run

    out = []
    shapes = [(64, 64, 64)] + ([] if quick else [(128, 256, 128)])
    for m, k, n in shapes:
        base = RunRequest(kernel="naive-2d", m=m, k=k, n=n, grid=(-(-n // 16), -(-m // 16)),
                          block=(16, 16), backend="cpu", tier="instant")
        run(base.with_(m=16, k=16, n=16, grid=(1, 1)))  # numba's typing warm, as in-process
        began = time.perf_counter()
        instant = run(base)
        instant_s = time.perf_counter() - began
        began = time.perf_counter()
        sim = run(base.with_(backend="sim"))
        sim_s = time.perf_counter() - began
        same = all((getattr(instant.maps, f) == getattr(sim.maps, f)).all()
                   for f in ("count", "min_writer", "max_writer", "reads_a", "reads_b"))
        print(f"5. naive-2d {m}x{k}x{n}: instant tier {instant_s:.2f} s, simulator {sim_s:.1f} s"
              f" = {sim_s / instant_s:,.0f}x; maps identical: {same}", flush=True)
        out.append({"shape": (m, k, n), "instant_s": instant_s, "sim_s": sim_s,
                    "ratio": sim_s / instant_s, "maps_identical": bool(same)})
    return out


def large_launches(baseline: Path, work: Path, rounds: int = 3) -> list[dict]:
    cases = [["--kernel", "grid-stride", "--shape", "4096x16x4096", "--grid", "2048",
              "--block", "256"],
             ["--kernel", "tiled", "--shape", "1024x1024x1024", "--grid", "64x64",
              "--block", "16x16"]]
    out = []
    for case in cases:
        samples: dict = {"this": [], "baseline": []}
        for tree in (ROOT, baseline):  # warm numba's cache in each tree first
            subprocess.run([PYTHON, "-m", "app.launcher", "run", *case, "--backend", "cpu",
                            "--yes", "--out", str(work / "warm")], cwd=tree,
                           capture_output=True, timeout=1200)
        for _ in range(rounds):
            for label, tree in (("baseline", baseline), ("this", ROOT)):
                began = time.perf_counter()
                done = subprocess.run([PYTHON, "-m", "app.launcher", "run", *case, "--backend",
                                       "cpu", "--yes", "--out", str(work / label)], cwd=tree,
                                      capture_output=True, text=True, timeout=1200)
                samples[label].append(time.perf_counter() - began)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr[-2000:])
        this, base = sorted(samples["this"]), sorted(samples["baseline"])
        ratio = this[rounds // 2] / base[rounds // 2]
        print(f"6. {' '.join(case)}: this {', '.join(f'{s:.2f}' for s in samples['this'])} s, "
              f"baseline {', '.join(f'{s:.2f}' for s in samples['baseline'])} s "
              f"(median ratio {ratio:.2f})", flush=True)
        out.append({"case": case, "samples": samples, "ratio_of_medians": ratio})
    return out


#: Section 8: each step of the walk run in a process that has started (as the app has).
TOUR = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from kernels import RunRequest, run, seed_tour
run(RunRequest(kernel="grid-stride", m=8, k=8, n=8, grid=(1,), block=(32,), backend="cpu",
               tier="instant"))
out = []
for step in seed_tour():
    began = time.perf_counter()
    result = run(step.request.with_(backend="auto"))
    out.append({"step": step.title, "seconds": time.perf_counter() - began,
                "verdict": result.verdict.word, "tier": result.tier})
print(json.dumps(out))
'''


def seed_walk(work: Path, baseline: Path | None, rounds: int = 3) -> dict:
    folder = work / "tour"
    folder.mkdir()
    done = subprocess.run([PYTHON, "-c", TOUR, str(ROOT)], cwd=ROOT, env=cold_env(folder),
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    for step in steps:
        print(f"8. walk, {step['step']}: {step['seconds']:.2f} s, {step['verdict']} "
              f"({step['tier']} tier)", flush=True)
    arguments = ["run", "--kernel", "tid-rows", "--shape", "8x1024x8", "--grid", "1",
                 "--block", "1024", "--backend", "cpu"]
    samples: dict = {"this": []}
    trees = [("this", ROOT)]
    if baseline is not None:
        samples["baseline"] = []
        trees.insert(0, ("baseline", baseline))
    for turn in range(rounds):
        for label, tree in trees:
            cold = work / f"seed-{label}-{turn}"
            cold.mkdir()
            began = time.perf_counter()
            ran = subprocess.run([PYTHON, "-m", "app.launcher", *arguments, "--out",
                                  str(cold / "out")], cwd=tree, env=cold_env(cold),
                                 capture_output=True, text=True, timeout=1200)
            samples[label].append(time.perf_counter() - began)
            if ran.returncode not in (0, 1):  # (1: the kernel FAILs, as it should)
                raise RuntimeError(ran.stderr[-2000:])
    line = ", ".join(f"{s:.2f}" for s in samples["this"])
    if baseline is not None:
        this, base = sorted(samples["this"]), sorted(samples["baseline"])
        line += (f" s; baseline {', '.join(f'{s:.2f}' for s in samples['baseline'])} s "
                 f"(median ratio {this[rounds // 2] / base[rounds // 2]:.2f})")
    else:
        line += " s"
    print(f"8. tid-rows 8x1024x8 on 1 x 1024, cold whole command: {line}", flush=True)
    return {"steps": steps, "seed_command": samples}


WARP_FILE = ROOT / "tests" / "kernels" / "warp_ops.py"


def warp_kernel(work: Path) -> dict:
    """Section 7: a new warp-shuffle kernel, cold, as a whole command per tier."""
    figures = {}
    for tier in ("auto", "compiled"):
        folder = work / f"warp-{tier}"
        folder.mkdir()
        kernel = folder / "warp_dot.py"
        kernel.write_text(WARP_FILE.read_text())
        seconds, out = whole_command(
            ["run", "--kernel-file", str(kernel), "--kernel", "matmul_warp_dot", "--shape",
             "37x70x29", "--grid", "8", "--block", "64", "--backend", "cpu", "--tier", tier,
             "--out", str(folder / "out")], cold_env(folder), folder)
        verdict = out.split()[0] if out else "?"
        figures[tier] = {"command_s": seconds, "verdict": verdict}
        print(f"7. new warp-shuffle kernel 37x70x29, --tier {tier}: whole command "
              f"{seconds:.2f} s, {verdict}", flush=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--only", type=int, action="append",
                        help="run only this section (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {cores} cores, Python {sys.version.split()[0]}", flush=True)
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="tm-edit-loop-") as tmp:
        work = Path(tmp)
        sections = {1: ("edit_loop", lambda: edit_loop(work)),
                    2: ("tiled_cold", lambda: tiled_cold(work)),
                    3: ("hunt", lambda: hunt_case(work)),
                    4: ("check", lambda: check_case(work)),
                    5: ("against_simulator", lambda: against_simulator(args.quick)),
                    7: ("warp_kernel", lambda: warp_kernel(work)),
                    8: ("seed_walk", lambda: seed_walk(work, args.baseline))}
        if args.baseline:
            sections[6] = ("large_launches", lambda: large_launches(args.baseline, work))
        for number, (key, section) in sections.items():
            if args.only and number not in args.only:
                continue
            figures[key] = section()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
