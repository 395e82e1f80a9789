"""GPU check, prepared to run in one go on a machine with a CUDA device.

    .venv/bin/python benchmarks/gpu_check.py                 # on a GPU machine
    .venv/bin/python benchmarks/gpu_check.py --dry-run       # no GPU: CPU emulation, small sizes

1. Every built-in kernel on random inputs, at its preset launch, on the GPU:
   its verdict, and its recording maps compared with the CPU emulation's
   (block lockstep, shared memory included) element by element: all maps for
   race-free kernels; counts and out-of-bounds tallies for colliding ones.
2. Kernel times of grid-stride / naive-2d / tiled against cuBLAS (CuPy, if
   installed) at 4096^3 float32, with CUDA events, median of repeated launches.
3. The warp-level kernels of tests/kernels/warp_ops.py (shuffles, votes,
   syncwarp, lane queries) on the GPU against the CPU emulation: the probe's
   C value for value (each lane's result of each operation), and the
   reductions' verdicts and maps element by element.

Prints a short table; ``--json FILE`` keeps the figures.
"""
from __future__ import annotations

import argparse
import json
import sys
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: run the same checks on the CPU emulation, small sizes")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    target = "cpu" if args.dry_run else "gpu"
    started = time.perf_counter()
    figures: dict = {"maps": [], "timings": []}
    print(f"{'kernel':22s} {'shape':12s} {'launch':22s} {'verdict':40s} maps vs")
    for kernel in CATALOGUE:
        shape = (40, 24, 36) if kernel == "tiled" else (
            (16, 8, 16) if kernel == "tid-rows" else (193, 67, 201))
        row = compare_maps(kernel, shape, target)
        figures["maps"].append(row)
        status = "equal" if row["maps_equal"] else f"DIFFER: {', '.join(row['mismatched'])}"
        print(f"{kernel:22s} {row['shape']:12s} {row['launch']:22s} {row['verdict'][:40]:40s} "
              f"{row['compared_with']}: {status}", flush=True)
    print("\nwarp-level kernels (tests/kernels/warp_ops.py) against the CPU emulation")
    for row in compare_warp_kernels(target):
        figures["maps"].append(row)
        status = "equal" if row["maps_equal"] else f"DIFFER: {', '.join(row['mismatched'])}"
        print(f"  {row['kernel']:26s} {row['verdict'][:40]:40s} cpu: {status}", flush=True)
    size = 256 if args.dry_run else args.size
    rows = time_kernels(size, args.repeats, args.dry_run)
    figures["timings"] = rows
    if rows:
        print(f"\nplain kernels at {size}^3 float32 (CUDA events, median of {args.repeats})")
        for row in rows:
            ms = f"{row['ms']:.2f} ms" if row["ms"] is not None else "-"
            gf = f"{row['gflops']:.0f} GFLOP/s" if row["gflops"] is not None else ""
            err = f"rel err {row['rel_error']:.1e}" if row["rel_error"] is not None else ""
            print(f"  {row['kernel']:16s} {row['launch']:32s} {ms:>12s} {gf:>16s} {err}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if all(r["maps_equal"] for r in figures["maps"]) else 1


if __name__ == "__main__":
    sys.exit(main())
