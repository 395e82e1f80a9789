"""What writing the emulation's runtime once would cost the instant tier (issue 44).

    .venv/bin/python benchmarks/bench_one_runtime.py [--rounds 3]

The emulation's semantics are written in two forms: numba, one lane at a time
(``derived/record_runtime.py`` and the lockstep emitter, for the compiled
tier), and numpy, every lane at once (``VectorRuntime`` and the vector
emitter, for the instant tier).  Keeping only the numba form, the instant tier
would run that form without compiling it: which is the compiled tier's own
generated module under ``NUMBA_DISABLE_JIT=1``.  This times, side by side and
alternating, whole ``threadmap run`` commands on the edit loop's kernel (the
naive 2-D matmul, 64^3, 4x4 blocks of 16x16), caches cold each time:

* the instant tier as it is (numpy over the lanes);
* the numba form interpreted (``--tier compiled`` with ``NUMBA_DISABLE_JIT=1``);

and reads each one's instrumented run from its result.json.  Both runs'
maps are compared element by element, so the two forms are known to be the
same semantics where they are timed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_edit_loop import NAIVE  # noqa: E402

CASES = {
    "instant tier (numpy over the lanes)": ("instant", "0"),
    "numba form, interpreted (NUMBA_DISABLE_JIT=1)": ("compiled", "1"),
}


def one_run(work: Path, tier: str, disable_jit: str, kernel: Path) -> tuple[float, float, Path]:
    """(wall seconds of the command, seconds of its instrumented run, its output folder)."""
    folder = Path(tempfile.mkdtemp(dir=work))
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(folder / "tm-cache"),
               NUMBA_CACHE_DIR=str(folder / "numba-cache"), NUMBA_DISABLE_JIT=disable_jit)
    env.pop("THREADMAP_EMULATION_WORKERS", None)
    out = folder / "out"
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(kernel), "--shape", "64x64x64", "--grid", "4x4", "--block",
                           "16x16", "--backend", "cpu", "--tier", tier, "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"--tier {tier} failed:\n{done.stdout}\n{done.stderr}")
    timings = json.loads((out / "result.json").read_text())["timings"]
    instrumented = next(t["seconds"] for t in timings if t["what"] == "instrumented kernel")
    return wall, instrumented, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        kernel = work / "matmul.py"
        kernel.write_text(NAIVE)
        figures = {label: ([], []) for label in CASES}
        outputs = {}
        for _ in range(rounds):
            for label, (tier, disable_jit) in CASES.items():
                wall, instrumented, out = one_run(work, tier, disable_jit, kernel)
                figures[label][0].append(wall)
                figures[label][1].append(instrumented)
                outputs[label] = out
        maps = [np.load(out / "maps.npz") for out in outputs.values()]
        # (C itself differs in its last bits: compiled code may fuse a
        # multiply-add that the interpreter rounds twice; the maps are exact)
        names = [name for name in maps[0].files if name != "C"]
        same = all(np.array_equal(maps[0][n], maps[1][n], equal_nan=True) for n in names)
        print(f"naive 2-D matmul 64^3, 4x4 blocks of 16x16, {rounds} alternating rounds, "
              f"caches cold; medians:")
        for label, (walls, runs) in figures.items():
            print(f"  {label}: instrumented run {statistics.median(runs) * 1e3:.0f} ms, "
                  f"whole command {statistics.median(walls):.2f} s")
        (instant_runs, numba_runs) = (figures[label][1] for label in CASES)
        print(f"  the numba form interpreted / the instant tier, instrumented run: "
              f"{statistics.median(numba_runs) / statistics.median(instant_runs):.0f}x")
        print(f"  their {len(names)} maps equal element by element: {same}")


if __name__ == "__main__":
    main()
