"""How close the estimates come on kernels whose work is not M x N x K
(issue 43): reductions, scans, row sums and others from examples/ and
tests/wild/, each at its own size and at a larger one (a copy with its
arrays and launch made larger), run on the instant tier, which is what
``auto`` picks for a described kernel whose compiled code is not ready.

    .venv/bin/python benchmarks/bench_estimates.py [--quick]

Prints, per kernel: the estimate before (a matmul's work, the output's size
times K = 1), the estimate now (work.py's counts: the statements and accesses
its threads execute), the run's time, and now / measured.  ``--quick``: the
small sizes only.  ``tests/test_work.py`` checks the counts the estimate is
made of against the instant tier's own; timing is measured only here.
"""
from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernels.engine import prepare, run  # noqa: E402
from kernels.estimate import instant_seconds  # noqa: E402
from kernels.presets import default_launch  # noqa: E402
from kernels.request import RunRequest  # noqa: E402
from kernels.sources.arguments import describe_request  # noqa: E402

EXAMPLES, WILD = ROOT / "examples", ROOT / "tests" / "wild"
#: (file, [(text, larger text)]): each kernel as it is, then made larger
KERNELS = [
    (EXAMPLES / "reduce_sequential.py",
     [('"float32[1024]", "partial": "float32[8]"', '"float32[65536]", "partial": "float32[512]"'),
      ("reduce_sequential[8, TPB]", "reduce_sequential[512, TPB]")]),
    (EXAMPLES / "reduce_interleaved.py",
     [('"float32[1024]", "partial": "float32[8]"', '"float32[32768]", "partial": "float32[256]"'),
      ("reduce_interleaved[8, TPB]", "reduce_interleaved[256, TPB]")]),
    (EXAMPLES / "reduce_shuffle.py",
     [("BLOCKS = 2", "BLOCKS = 32"),
      ('"float32[4096]", "partial": "float32[2]"', '"float32[262144]", "partial": "float32[32]"')]),
    (WILD / "reduce_gridstride_atomic_total.py",
     [('"float32[2000]"', '"float32[262144]"'), ("array_sum[4, TPB]", "array_sum[16, TPB]")]),
    (EXAMPLES / "scan_hillis_steele.py",
     [("N = 256", "N = 1024"),
      ('"float32[256]", "out": "float32[256]"', '"float32[1024]", "out": "float32[1024]"')]),
    (EXAMPLES / "scan_blelloch.py",
     [("N = 256", "N = 1024"),
      ('"float32[256]", "out": "float32[256]"', '"float32[1024]", "out": "float32[1024]"')]),
    (WILD / "row_sums_block_per_row.py",
     [('"float32[32, 200]", "out": "float32[32]"', '"float32[256, 2000]", "out": "float32[256]"'),
      ("row_sums[32, TPB]", "row_sums[256, TPB]")]),
    (WILD / "row_sums_row_view.py",
     [('"float32[40, 40]", "out": "float32[40]"', '"float32[2000, 500]", "out": "float32[2000]"'),
      ("row_sums[2, 32]", "row_sums[8, 256]")]),
    (WILD / "row_sums_tiled.py",
     [('"float32[4, 300]", "out": "float32[4]"', '"float32[64, 3000]", "out": "float32[64]"'),
      ("row_sums[4, TPB]", "row_sums[64, TPB]")]),
    (EXAMPLES / "softmax_rows.py",
     [('"float32[64, 100]", "out": "float32[64, 100]"',
       '"float32[1024, 300]", "out": "float32[1024, 300]"'),
      ("softmax_rows[2, 32]", "softmax_rows[4, 256]")]),
    (EXAMPLES / "stencil_1d.py",
     [('"float32[256]", "out": "float32[256]"', '"float32[65536]", "out": "float32[65536]"'),
      ("stencil_1d[8, TPB]", "stencil_1d[2048, TPB]")]),
    (EXAMPLES / "vector_add.py",
     [('"float32[4096]", "y": "float32[4096]", "out": "float32[4096]"',
       '"float32[1048576]", "y": "float32[1048576]", "out": "float32[1048576]"'),
      ("vector_add[16, 256]", "vector_add[1024, 256]")]),
]


def request_for(path: Path) -> RunRequest:
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), backend="cpu",
                                          repeats=1, tier="instant"),
                               as_it_is_unless_matmul=True)
    return default_launch(request)


def larger(path: Path, replacements: list[tuple[str, str]], folder: Path) -> Path:
    text = path.read_text()
    for old, new in replacements:
        if old not in text:
            raise SystemExit(f"{path.name}: {old!r} is no longer in it; update the benchmark")
        text = text.replace(old, new)
    copy = folder / f"{path.stem}_larger.py"
    copy.write_text(text)
    return copy


def measure(path: Path) -> tuple[str, float, float, float]:
    request = request_for(path)
    resolved, plan, _ = prepare(request, False)
    before = instant_seconds(resolved.with_(arguments=()), plan)  # (M x N x K, as it was)
    now = instant_seconds(resolved, plan)
    run(request)  # (a first run: imports and the numpy form written)
    began = time.perf_counter()
    run(request)
    took = time.perf_counter() - began
    elements = sum(math.prod(a.shape) for a in request.arguments if hasattr(a, "shape"))
    return f"{path.stem} ({elements:,} elements)", before, now, took


def main() -> int:
    quick = "--quick" in sys.argv
    print(f"{'kernel':46s} {'before':>10s} {'now':>10s} {'measured':>10s} {'now/measured':>13s}")
    worst = 1.0
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for path, replacements in KERNELS:
            paths.append(path)
            if not quick:
                paths.append(larger(path, replacements, Path(folder)))
        for path in paths:
            name, before, now, took = measure(path)
            ratio = now / took
            worst = max(worst, ratio, 1 / ratio)
            print(f"{name:46s} {before:9.4f}s {now:9.3f}s {took:9.3f}s {ratio:12.2f}x", flush=True)
    print(f"\nworst: {worst:.2f}x off (now against measured, either way)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
