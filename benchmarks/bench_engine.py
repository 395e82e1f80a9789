"""Engine benchmark: every ratio is measured side by side in one run.

    .venv/bin/python benchmarks/bench_engine.py            # everything (several minutes)
    .venv/bin/python benchmarks/bench_engine.py --quick    # skip the 262k-thread simulator run

Sections
1. CPU emulation vs CUDA simulator on the same request (grid-stride, C 128 x 256,
   K = 128; launches 1 x 1024 and 1024 x 256).
2. The emulation on C 2048 x 2048 and 4096 x 4096 maps (K = 16): the recording
   run alone, the plain run, and the whole ``run()`` end to end; 1 core vs 2.
3. First-call compile times: the emulation (cold cache, warm cache in a new
   process) and ``compile_ptx`` for every built-in kernel.
4. Why the emulation disables NRT: the same recording loop with and without it.
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
    from kernels.catalogue import CATALOGUE
    from kernels.codegen import load_module
    from kernels.loader import _builtin_plan
    from kernels.ptx import compile_ptx_for

    out: dict = {"emulator": {}, "ptx": {}}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, THREADMAP_CACHE_DIR=cache)
        for name in CATALOGUE:
            plan = _builtin_plan(name)
            if not plan.emulable:
                continue
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

    from kernels.codegen import _CPU_OPTIONS, load_module
    from kernels.inputs import make_inputs
    from kernels.loader import _builtin_plan
    from kernels.records import allocate_records
    from kernels.transform import access_sites, array_slots

    plan = _builtin_plan("grid-stride")
    m = k = n = 256
    a, b = make_inputs("random", m, k, n, "float32")
    out = {}
    for label, options in (("NRT off (ThreadMap)", _CPU_OPTIONS),
                           ("NRT on (numba default)", _CPU_OPTIONS.replace("_nrt=False",
                                                                          "_nrt=True"))):
        gen = load_module(plan, "cpu", "float32", cpu_options=options)
        driver = gen.function("_tm_run_record")
        times = []
        for _ in range(3):
            records = allocate_records((m, n), ((m, k), (k, n)), len(array_slots(plan)), 1024,
                                       n_sites=len(access_sites(plan)))
            c = np.full((m, n), np.nan, np.float32)
            started = time.perf_counter()
            driver(a, b, c, *records, 1, 1, 1024, 1, 0, 1024)
            times.append(time.perf_counter() - started)
        best = min(times[1:])
        out[label] = {"seconds": best, "ns_per_inner_iteration": best / (m * n * k) * 1e9}
        print(f"  {label:24s}: {best:.3f} s = {out[label]['ns_per_inner_iteration']:.1f} ns per "
              "inner iteration (recording grid-stride, 256^3, 1 x 1024, 1 core)", flush=True)
    labels = list(out)
    out["slowdown_with_nrt"] = out[labels[1]]["seconds"] / out[labels[0]]["seconds"]
    print(f"  NRT on is {out['slowdown_with_nrt']:.1f}x slower", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1024 x 256 simulator run")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    figures = {}
    print("1. emulator vs simulator, grid-stride, C 128 x 256, K = 128", flush=True)
    figures["emulator_vs_simulator"] = emulator_vs_simulator(args.quick)
    print("2. emulation of large maps", flush=True)
    figures["large_maps"] = large_maps()
    print("3. compile times", flush=True)
    figures["compile"] = compile_times()
    print("4. NRT ablation", flush=True)
    figures["nrt"] = nrt_ablation()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
