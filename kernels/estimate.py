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

from .machine import emulation_cores
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


#: The simulator on a described kernel: per statement a thread executes
#: (work.py; fitted on a softmax, a row sum, a stencil and a reduction, warm:
#: within 2.1x of each, benchmarks/bench_estimates.py --simulator).
SIMULATOR_SECONDS_PER_LANE_STATEMENT = 8e-6


def simulator_seconds(request: RunRequest, plan=None) -> float:
    """Lower bound of a simulator run's time (recording plus plain kernel);
    with the kernel's ``plan``, its barriers counted.  A described kernel's
    work and barriers are what its threads execute (work.py), not M x N x K."""
    if plan is not None and request.arguments:
        from .work import block_work

        work = block_work(request, plan)
        seconds = request.blocks * work.lane_work * SIMULATOR_SECONDS_PER_LANE_STATEMENT
        if work.barriers:
            per_barrier = (SECONDS_PER_BLOCK_BARRIER
                           + SECONDS_PER_BLOCK_BARRIER_PER_THREAD * request.threads_per_block)
            return (seconds + request.total_threads * SECONDS_PER_THREAD_WITH_BARRIERS
                    + request.blocks * work.barriers * per_barrier)
        return seconds + 2 * request.total_threads * SECONDS_PER_THREAD
    iterations = request.m * request.n * request.k
    work = iterations * (SECONDS_PER_RECORDED_ITERATION + SECONDS_PER_PLAIN_ITERATION)
    if plan is not None and plan.barrier_lines:
        per_barrier = (SECONDS_PER_BLOCK_BARRIER
                       + SECONDS_PER_BLOCK_BARRIER_PER_THREAD * request.threads_per_block)
        return (request.total_threads * SECONDS_PER_THREAD_WITH_BARRIERS + work
                + request.blocks * barriers_per_block(request, plan) * per_barrier)
    return 2 * request.total_threads * SECONDS_PER_THREAD + work


def run_seconds(request: RunRequest, plan, backend: str, compiled_ready: bool = False) -> float:
    """Rough time of ``request`` on ``backend`` (already resolved); for the
    CPU emulation, on the tier ``request.tier`` picks (``compiled_ready``:
    numba's code for the kernel needs no compile), numba's compile included."""
    if backend == "sim":
        return simulator_seconds(request, plan) * machine_factor()
    if backend == "cpu":
        return min(tier_seconds(request, plan, compiled_ready).values())
    return 0.0  # a GPU


def requests_seconds(requests: list[RunRequest], plan, backend: str,
                     compiled_ready: bool = False) -> float:
    """Rough time of several runs of one kernel (a sweep): on the CPU
    emulation, numba compiles the kernel once for all of them."""
    if backend != "cpu":
        return sum(run_seconds(r, plan, backend) for r in requests)
    instant = compiled = 0.0
    for r in requests:
        seconds = tier_seconds(r, plan, compiled_ready=True)
        instant += seconds.get("instant", math.inf)
        compiled += seconds.get("compiled", math.inf)
    if not compiled_ready and math.isfinite(compiled):
        compiled += compile_seconds(plan) * machine_factor()
    return min(instant, compiled)


def tier_seconds(request: RunRequest, plan, compiled_ready: bool = False) -> dict[str, float]:
    """Rough time of each tier of the CPU emulation that ``request.tier``
    allows, by tier name, compile included."""
    seconds = {}
    if request.tier in ("auto", "instant"):
        seconds["instant"] = instant_seconds(request, plan)
    if request.tier in ("auto", "compiled"):
        cores = emulation_cores()
        loops = emulation_seconds(request) * (COMPILED_BARRIER_FACTOR if plan.barrier_lines
                                              else 1.0)
        run = COMPILED_RUN_SECONDS + COMPILED_RUN_FACTOR * loops / max(
            1, min(cores, request.blocks))
        seconds["compiled"] = (run + (0.0 if compiled_ready else compile_seconds(plan))) \
            * machine_factor()
    return seconds


#: A whole run on the compiled tier: its fixed cost (the arrays, the chunks,
#: the comparison), and how much longer than the loops alone it takes (the
#: reference, the maps read back), fitted on naive-2d, tiled and grid-stride
#: from 64^3 to 512^3 (within 1.4x of each).
COMPILED_RUN_SECONDS = 0.02
COMPILED_RUN_FACTOR = 1.6
#: A kernel with barriers takes longer on the compiled tier (its tiles staged
#: in shared memory, its blocks' threads in lockstep rounds): tiled 256^3 and
#: an 8 x 8 tiled kernel file took 1.2-1.6x the estimate without this factor.
COMPILED_BARRIER_FACTOR = 1.4
#: Instant tier (backends/instant.py): seconds per statement run over a vector
#: of lanes, and per lane and inner iteration, on the reference machine (fitted
#: on naive-2d and tiled, 64^3 to 128 x 256 x 128: benchmarks/bench_edit_loop.py).
INSTANT_SECONDS_PER_VECTOR_STEP = 0.24e-3
INSTANT_SECONDS_PER_LANE_STEP = 90e-9
#: A step of a block with shared memory costs more: its warp requests go to
#: the banks, its accesses to the race shadow.  (Refitted on tiled 64^3 and the
#: two 8 x 8 tiled kernel files of tests/test_tiers.py: 0.67-0.75 ms; the
#: first fit, 0.45 ms, predates the shared-memory checks and was 1.6x low.)
INSTANT_SECONDS_PER_BLOCK_STEP = 0.7e-3
#: numba's compile of a new kernel's emulation on the reference machine (cold
#: cache: 5.7-8.5 s for the simple built-in kernels, 10.4 s for tiled).
COMPILE_SECONDS = 7.0
COMPILE_SECONDS_WITH_BARRIERS = 10.0
#: Lanes the instant tier runs as one vector when warps are independent.
INSTANT_CHUNK_LANES = 1 << 16


def compile_seconds(plan) -> float:
    return COMPILE_SECONDS_WITH_BARRIERS if plan.barrier_lines else COMPILE_SECONDS


#: How much slower the instant tier's steps are on a kernel whose global
#: arrays are checked for races (measured once, above).
RACE_CHECK_FACTOR = 3.0


#: The instant tier on a described kernel (work.py's counts), fitted on 12
#: kernels (reductions, scans, row sums, a softmax, a stencil, a vector add),
#: each at two sizes, 10^3 to 3 x 10^6 elements, 2 ms to 27 s: per array
#: access (its shadow, its requests), per statement run over a vector of
#: lanes, per statement and lane (benchmarks/bench_estimates.py).
INSTANT_SECONDS_PER_ACCESS = 47e-6
INSTANT_SECONDS_PER_STATEMENT = 43e-6
INSTANT_SECONDS_PER_LANE_STATEMENT = 0.08e-6
#: and its fixed cost (the arrays, the maps read back): a 4,096-element
#: vector add takes 3 ms
INSTANT_RUN_SECONDS = 0.002


def instant_seconds(request: RunRequest, plan) -> float:
    """Rough time of the instant tier: for a matmul, its M x N x K
    multiply-adds in vector steps and each lane's share of them; for a
    described kernel, the statements and accesses its threads execute
    (work.py), which for a reduction or a scan are nothing like M x N x K."""
    from .derived.transform import race_checked_arrays

    if request.arguments:
        return described_instant_seconds(request, plan) * machine_factor()
    work = request.m * request.n * request.k
    tpb = request.threads_per_block
    per_step = INSTANT_SECONDS_PER_VECTOR_STEP
    if plan.barrier_lines or plan.local_arrays or race_checked_arrays(plan):
        lanes = tpb  # block after block
        per_step = INSTANT_SECONDS_PER_BLOCK_STEP
        if race_checked_arrays(plan):
            # each access also keeps the array's shadow and access ranges: an
            # in-place SAXPY of 2^20 took 3x its time before the check (124 s
            # against 41.7 s, warp after warp then)
            per_step *= RACE_CHECK_FACTOR
    elif plan.reads_output or set(plan.stored_arrays) - {plan.output}:
        lanes = min(tpb, 32)  # warp after warp
    else:
        lanes = min(request.total_threads, max(tpb, INSTANT_CHUNK_LANES))
    steps = work / max(1, lanes)
    return (steps * per_step + work * INSTANT_SECONDS_PER_LANE_STEP) * machine_factor()


def described_instant_seconds(request: RunRequest, plan) -> float:
    """The instant tier's time on a described kernel, on the reference
    machine, from block 0's work (work.block_work) and how the tier deals the
    launch out: block after block (barriers, shared or local memory, a global
    array checked for races), warp after warp (warps that see each other's
    writes), or the whole grid in chunks of lanes."""
    from .backends.common import deals_by_block, order_matters
    from .work import block_work

    work = block_work(request, plan)
    blocks, tpb = request.blocks, request.threads_per_block
    if deals_by_block(plan):
        units = blocks
        vector_accesses, lane_accesses = work.vector_accesses, work.lane_accesses
    elif order_matters(plan):
        warps = -(-tpb // 32)
        units = blocks * warps
        vector_accesses, lane_accesses = work.vector_accesses, work.lane_accesses / warps
    else:
        units = -(-blocks // max(1, INSTANT_CHUNK_LANES // tpb))
        vector_accesses = work.vector_accesses
        lane_accesses = work.lane_accesses * blocks / units
    accesses = units * (vector_accesses + lane_accesses)
    statements = units * work.vector_statements
    return (INSTANT_RUN_SECONDS + accesses * INSTANT_SECONDS_PER_ACCESS
            + statements * INSTANT_SECONDS_PER_STATEMENT
            + blocks * work.lane_work * INSTANT_SECONDS_PER_LANE_STATEMENT)


#: What the calibration below took on the reference machine (2 cores, the
#: machine of benchmarks/results): the estimates' figures are scaled by the
#: ratio of this machine's time to it.
CALIBRATION_REFERENCE_SECONDS = 0.0022


def machine_factor() -> float:
    """How much slower this machine is than the reference one (2 = twice as
    slow), from ~20 ms of the instant tier's own kind of numpy work, measured
    once per process (the best of three, so a moment's load does not count)."""
    global _FACTOR
    if _FACTOR is None:
        import time

        import numpy as np

        rng = np.random.default_rng(0)
        offsets = rng.integers(0, 1 << 16, 4096)
        warps = np.arange(4096) // 32
        values = rng.random(1 << 16)
        best = math.inf
        for _ in range(3):
            began = time.perf_counter()
            for _ in range(10):
                lanes = np.flatnonzero(offsets & 1)
                gathered = values[offsets[lanes]]
                order = np.lexsort((offsets[lanes], warps[lanes]))
                np.add.at(values, offsets[lanes][order], 1.0)
                np.bincount(warps[lanes], weights=gathered)
            best = min(best, time.perf_counter() - began)
        # Never below 1: a machine is not taken for faster than the reference.
        # Its numpy work can be (one ran this in half the reference's time)
        # while the tiers are not: the compiled tier's loops are scalar, the
        # instant tier's steps are Python, and there both ran at the
        # reference's speed, so estimates halved by it were 2.2x to 3.2x short.
        _FACTOR = min(10.0, max(1.0, best / CALIBRATION_REFERENCE_SECONDS))
    return _FACTOR


_FACTOR: float | None = None


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
