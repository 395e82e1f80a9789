"""The CPU emulation: every thread of the grid, in order, in a compiled loop.

Threads run one after another, in order of global thread id, so the emulation
is deterministic: where threads collide, the last one (the highest id) wins.
The grid is run in chunks of threads, sized to take ~50 ms each, so progress
is reported and a cancel is honoured between chunks.
"""
from __future__ import annotations

import time

from ..codegen import GeneratedModule, load_module
from ..errors import KernelCompileError, KernelRuntimeError
from ..records import allocate_records
from ..result import Timing
from .common import BackendOutput, KernelJob, median_time, shorten_numba_error

CHUNK_SECONDS = 0.05
METHOD = "wall clock of the compiled loop over all threads"


def _compile(gen: GeneratedModule, job: KernelJob, launch: tuple, records: list) -> float:
    """Compile both drivers by running them on zero threads; return the seconds."""
    c = job.fresh_output()
    start = time.perf_counter()
    try:
        gen.function("_tm_run_record")(*job.arguments(c), *records, *launch, 0, 0)
        gen.function("_tm_run_plain")(*job.arguments(c), *launch, 0, 0)
    except Exception as exc:  # numba raises many kinds; all mean "does not compile"
        if type(exc).__module__.startswith("numba"):
            raise KernelCompileError(
                f"numba could not compile {job.plan.name!r} for the CPU emulation:\n"
                + shorten_numba_error(str(exc), gen.relocate)) from None
        raise
    return time.perf_counter() - start


def _run_chunked(function, args: list, total: int, job: KernelJob,
                 lo: float, hi: float, phase: str) -> float:
    """Run threads [0, total) in adaptive chunks; return the summed compute time."""
    done, chunk, spent = 0, 64, 0.0
    while done < total:
        job.check_cancel()
        stop = min(total, done + chunk)
        start = time.perf_counter()
        try:
            function(*args, done, stop)
        except (ZeroDivisionError, IndexError, ValueError) as exc:
            raise KernelRuntimeError(f"{job.plan.name!r} raised in the emulation: {exc}") from None
        elapsed = time.perf_counter() - start
        spent += elapsed
        done = stop
        job.progress(lo + (hi - lo) * done / total,
                     f"{phase}: {done:,} of {total:,} threads")
        if elapsed < CHUNK_SECONDS / 2:
            chunk *= 2
        elif elapsed > CHUNK_SECONDS * 2 and chunk > 1:
            chunk //= 2
    return spent


def run_cpu(job: KernelJob) -> BackendOutput:
    """Run the recording emulation, then (if it found no out-of-bounds access)
    the plain emulation, timed."""
    request = job.request
    job.progress(0.0, "compiling the CPU emulation")
    gen = load_module(job.plan, "cpu", request.dtype)
    output_shape, input_shapes = job.record_shapes()
    total = request.total_threads
    launch = (*request.grid2, *request.block2)
    records = allocate_records(output_shape, input_shapes, len(job.slots), total)
    compile_seconds = _compile(gen, job, launch, records)
    timings = [Timing("compile", "cpu", compile_seconds,
                      "first call of the emulation (numba compile, or load from its cache)")]

    c_record = job.fresh_output()
    record_args = job.arguments(c_record) + records + list(launch)
    spent = _run_chunked(gen.function("_tm_run_record"), record_args, total, job,
                         0.02, 0.5, "instrumented emulation")
    timings.append(Timing("instrumented kernel", "cpu", spent, METHOD, 1, job.flops))

    oob = int(records[6].sum())
    if oob:
        return BackendOutput(c_record, records, None, timings, [
            f"the plain kernel was not launched: the instrumented run found {oob:,} "
            "out-of-bounds accesses (C shown is the instrumented run's, with those "
            "reads as 0 and those writes skipped)"])

    plain = gen.function("_tm_run_plain")
    outputs = []
    phases = iter([(0.5, 0.85)] + [(0.85 + 0.1 * i / request.repeats,
                                    0.85 + 0.1 * (i + 1) / request.repeats)
                                   for i in range(request.repeats)])

    def timed_plain_run() -> float:
        c = job.fresh_output()
        outputs.append(c)
        lo, hi = next(phases)
        return _run_chunked(plain, job.arguments(c) + list(launch), total, job,
                            lo, hi, "plain emulation")

    first = timed_plain_run()
    seconds, samples = first, 1
    if first < 0.2 and request.repeats > 1:
        # Short runs are repeated (the first one then counts as a warm-up).
        seconds, samples = median_time(timed_plain_run, request.repeats, budget=1.0)
    timings.append(Timing("kernel", "cpu", seconds,
                          METHOD + (f", median of {samples} runs" if samples > 1 else ""),
                          samples, job.flops))
    return BackendOutput(c_record, records, outputs[0], timings)
