"""How long a run will take where that can be slow: the CUDA simulator.

Figures measured on a 2-core machine (benchmarks/bench_engine.py): a
simulated CUDA thread costs ~340 us to create and run; an inner-loop iteration ~30 us in the
recording kernel (its helpers are device functions, each call taking the
simulator's lock) and ~2.5 us in the plain kernel.  A correct matmul does
M x N x K iterations; buggy kernels may do many more, so this is a lower
bound.
"""
from __future__ import annotations

from .request import RunRequest

SECONDS_PER_THREAD = 340e-6
SECONDS_PER_RECORDED_ITERATION = 30e-6
SECONDS_PER_PLAIN_ITERATION = 2.5e-6
#: Ask before a simulator run expected to take longer than this.
SLOW_SIMULATOR_SECONDS = 20.0


def simulator_seconds(request: RunRequest) -> float:
    """Lower bound of a simulator run's time (recording plus plain kernel)."""
    iterations = request.m * request.n * request.k
    return (2 * request.total_threads * SECONDS_PER_THREAD
            + iterations * (SECONDS_PER_RECORDED_ITERATION + SECONDS_PER_PLAIN_ITERATION))


def describe_seconds(seconds: float) -> str:
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
