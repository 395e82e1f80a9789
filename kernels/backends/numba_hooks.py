"""The one place where ThreadMap reaches into numba's private classes.

numba has no public hook for these, so each is patched here, for the length
of one run, and undone after; a numba without the class degrades to no
progress rather than failing.  Everything else uses numba's public API.

* ``numba.cuda.simulator.kernel.BlockManager.run``: the simulator runs blocks
  one after another and reports nothing until the launch ends; wrapping this
  method gives progress after each block and a cancel between blocks.

One private *option* is used elsewhere, not patched: ``_nrt=False`` in the
emulation's ``njit`` options (``codegen._CPU_OPTIONS``), which numba's own
library uses for allocation-free functions; with reference counting on, the
recording loop runs 47-57x slower (see docs/benchmarks.md).
"""
from __future__ import annotations

import contextlib

from .common import KernelJob


@contextlib.contextmanager
def simulator_progress(job: KernelJob, lo: float, hi: float, phase: str):
    """Report progress after each simulated block (the simulator runs blocks in
    sequence) and honour cancel between blocks."""
    try:
        from numba.cuda.simulator.kernel import BlockManager
    except ImportError:  # a future numba: no per-block progress, still correct
        yield
        return
    original = BlockManager.run
    total = job.request.blocks
    done = [0]

    def run(self, grid_point, *args):
        job.check_cancel()
        result = original(self, grid_point, *args)
        done[0] += 1
        job.progress(lo + (hi - lo) * done[0] / total, f"{phase}: block {done[0]:,} of {total:,}")
        return result

    BlockManager.run = run
    try:
        yield
    finally:
        BlockManager.run = original
