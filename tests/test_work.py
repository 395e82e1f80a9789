"""work.py follows a kernel's index arithmetic to count what its threads
execute, for the estimates of kernels that are not a matmul.  Its counts are
checked here against what the instant tier itself does (its access calls,
``VectorRuntime.calls``), within 5%: block 0's path stands for every
block's, and a stencil's edge blocks load one halo element fewer.  Timing is
the benchmark's business (benchmarks/bench_estimates.py); counting is not."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernels.backends import instant
from kernels.backends.common import deals_by_block
from kernels.engine import prepare, run
from kernels.presets import default_launch
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request
from kernels.work import block_work

ROOT = Path(__file__).resolve().parent.parent
#: reductions, scans, row sums and others, each with its own launch
KERNELS = ["examples/reduce_sequential.py", "examples/reduce_interleaved.py",
           "examples/scan_hillis_steele.py", "examples/scan_blelloch.py",
           "examples/softmax_rows.py", "examples/stencil_1d.py", "examples/vector_add.py",
           "tests/wild/row_sums_block_per_row.py", "tests/wild/row_sums_row_view.py",
           "tests/wild/row_sums_tiled.py", "tests/wild/reduce_gridstride_atomic_total.py"]


def _described(path: Path) -> RunRequest:
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), backend="cpu",
                                          repeats=1, tier="instant"),
                               as_it_is_unless_matmul=True)
    return default_launch(request)


@pytest.fixture
def runtimes(monkeypatch):
    made = []
    original = instant.VectorRuntime.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(instant.VectorRuntime, "__init__", keep)
    return made


@pytest.mark.parametrize("name", KERNELS)
def test_the_counted_accesses_are_the_instant_tiers_own(name, runtimes):
    request = _described(ROOT / name)
    resolved, plan, _ = prepare(request, False)
    work = block_work(resolved, plan)
    assert work.complete
    run(request)
    per_block = work.vector_accesses + work.lane_accesses
    if deals_by_block(plan):  # (one unit a block, each block's path alike)
        assert runtimes[-1].calls == pytest.approx(per_block * request.blocks, rel=0.05)
    else:  # (the grid in one chunk of lanes at these sizes)
        assert request.total_threads <= instant.CHUNK_LANES
        assert runtimes[-1].calls == pytest.approx(per_block, rel=0.05)


def test_a_reduction_is_counted_by_its_loops_not_by_its_output(runtimes):
    """The reduction's output is one element a block; its work is the tree
    over the block's 128 elements: log2(128) = 7 rounds, each a statement
    that reads and writes shared memory, run lane after lane by the lanes
    still adding (64 + 32 + ... + 1 = 127 of them)."""
    request = _described(ROOT / "examples/reduce_sequential.py")
    _, plan, _ = prepare(request, False)
    work = block_work(request, plan)
    assert work.lane_statements == 127
    assert work.lane_accesses == 3 * 127  # (partial[t] += partial[t + s]: two reads, a write)


def test_a_loop_bounded_by_an_array_value_is_a_lower_bound(tmp_path):
    kernel = tmp_path / "csr.py"
    kernel.write_text(
        "from numba import cuda\n\n"
        'THREADMAP_ARGS = {"starts": "int32[65]", "values": "float32[4096]", '
        '"out": "float32[64]"}\n\n\n'
        "@cuda.jit\n"
        "def row_sums(starts, values, out):\n"
        "    row = cuda.grid(1)\n"
        "    if row < out.shape[0]:\n"
        "        s = 0.0\n"
        "        for e in range(starts[row], starts[row + 1]):\n"
        "            s += values[e]\n"
        "        out[row] = s\n")
    request = describe_request(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu",
                                          grid=(1,), block=(64,)),
                               as_it_is_unless_matmul=True)
    _, plan, _ = prepare(request, False)
    assert not block_work(request, plan).complete
