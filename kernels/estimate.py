"""How long a run will take, before it starts: the CUDA simulator can take
hours, the CPU emulation minutes.

Figures measured on a 2-core machine.  Without barriers (benchmarks/
bench_engine.py): a simulated CUDA thread costs ~340 us to create and run;
an inner-loop iteration ~30 us in the recording kernel (its helpers are
device functions, each call taking the simulator's lock) and ~2.5 us in the
plain kernel.  With barriers the simulator cannot run a thread to its end
before the next starts, and a barrier costs each block ~60 ms + 0.22 ms per
thread, recording and plain runs together (fitted to a shared-memory tiled
kernel on 8x8, 16x16 and 32x32 tiles, 1,024 and 4,096 threads, 32^3 and
64^3: 1.9-92 s measured; the fit is within 5% on the four smaller tiles and
up to 45% high on 32x32).  A correct matmul does M x N x K iterations; buggy
kernels may do many more, so these are lower bounds.
"""
from __future__ import annotations

import math
import os

from .request import RunRequest

SECONDS_PER_THREAD = 340e-6
SECONDS_PER_RECORDED_ITERATION = 30e-6
SECONDS_PER_PLAIN_ITERATION = 2.5e-6
#: With barriers: per thread (both runs), and per barrier each block reaches.
SECONDS_PER_THREAD_WITH_BARRIERS = 1.05e-3
SECONDS_PER_BLOCK_BARRIER = 60e-3
SECONDS_PER_BLOCK_BARRIER_PER_THREAD = 0.22e-3
#: Ask before a simulator run expected to take longer than this.
SLOW_SIMULATOR_SECONDS = 20.0
#: The command line runs nothing estimated longer without --yes.
COMMAND_LINE_SECONDS = 60.0
#: A kernel file's run ends after this long (a kernel that never finishes).
KERNEL_FILE_TIME_LIMIT = 300.0
#: What each configuration of a sweep costs besides its run: its reference
#: comparison, maps and files (the 64-configuration sweep of
#: benchmarks/results/lean.txt: 9 s, ~0.14 s a configuration, on 2 cores).
SECONDS_PER_CONFIGURATION = 0.1


def barriers_per_block(request: RunRequest, plan) -> int:
    """Barriers each block reaches: one for each outside a loop, and for each
    inside one, one per tile along K (a tile being a block's width)."""
    tiles = -(-request.k // max(request.block2[0], 1))
    return plan.barriers_outside_loops + plan.barriers_in_loops * tiles


def simulator_seconds(request: RunRequest, plan=None) -> float:
    """Lower bound of a simulator run's time (recording plus plain kernel);
    with the kernel's ``plan``, its barriers counted."""
    iterations = request.m * request.n * request.k
    work = iterations * (SECONDS_PER_RECORDED_ITERATION + SECONDS_PER_PLAIN_ITERATION)
    if plan is not None and plan.barrier_lines:
        per_barrier = (SECONDS_PER_BLOCK_BARRIER
                       + SECONDS_PER_BLOCK_BARRIER_PER_THREAD * request.threads_per_block)
        return (request.total_threads * SECONDS_PER_THREAD_WITH_BARRIERS + work
                + request.blocks * barriers_per_block(request, plan) * per_barrier)
    return 2 * request.total_threads * SECONDS_PER_THREAD + work


def run_seconds(request: RunRequest, plan, backend: str) -> float:
    """Rough time of ``request`` on ``backend`` (already resolved)."""
    if backend == "sim":
        return simulator_seconds(request, plan)
    if backend == "cpu":
        cores = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else (os.cpu_count() or 1), 8)
        return emulation_seconds(request) / max(1, min(cores, request.blocks))
    return 0.0  # a GPU


def describe_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 5400:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


#: The CPU emulation's cost per inner-loop iteration and per thread, recording
#: and plain runs together, on one core (benchmarks/bench_engine.py).
EMULATION_SECONDS_PER_ITERATION = 12e-9
EMULATION_SECONDS_PER_THREAD = 0.3e-6
#: A GPU run skips the emulation's figures when they would take longer.
ANALYSIS_SECONDS_LIMIT = 60.0


def emulation_seconds(request: RunRequest) -> float:
    """Rough time of the CPU emulation of a correct matmul (one core)."""
    iterations = request.m * request.n * request.k
    return (iterations * EMULATION_SECONDS_PER_ITERATION
            + request.total_threads * EMULATION_SECONDS_PER_THREAD)
