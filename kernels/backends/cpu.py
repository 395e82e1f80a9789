"""The CPU emulation: every thread of the grid in a compiled loop.

Semantics are those of running the threads one after another in order of
global thread id: deterministic, and where threads collide the last one (the
highest id) wins.  To use several cores without changing that, the grid is
split into contiguous ranges of thread ids, one per worker; each worker keeps
private per-element maps and a private C, merged afterwards (counts added,
min / max taken, and each element of C taken from the last range that wrote
it), which gives exactly the sequential result.  Kernels that read their
output or store into an input run on one worker, since there a thread may see
another range's writes.

Each worker runs its range in chunks of ~50 ms, so progress is reported and
a cancel is honoured between chunks.
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from ..codegen import GeneratedModule, load_module
from ..errors import KernelCompileError, KernelRuntimeError, RunCancelled
from ..records import (OOB, PRIVATE_RECORDS, READS, SHARED_RECORDS, TRACE_ADDR,
                       allocate_records)
from ..request import available_memory
from ..result import Timing
from .common import BackendOutput, KernelJob, median_time, shorten_numba_error

CHUNK_SECONDS = 0.05
#: Below this many threads a second worker costs more than it saves.
MIN_THREADS_PER_WORKER = 64


def worker_count(job: KernelJob) -> int:
    """How many cores the emulation of ``job`` uses."""
    plan = job.plan
    if plan.reads_output or set(plan.stored_arrays) - {plan.output}:
        return 1
    env = os.environ.get("THREADMAP_EMULATION_WORKERS")
    if env:
        cores = max(1, int(env))
    else:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:
            cores = os.cpu_count() or 1
        cores = min(cores, 8)
    cores = min(cores, max(1, job.request.total_threads // MIN_THREADS_PER_WORKER))
    if cores > 1:
        # Each extra worker holds a private copy of C and of the per-element maps.
        m, k, n = job.request.shape
        item = np.dtype(job.request.dtype).itemsize
        extra = m * n * (2 * item + 20) + 8 * (m * k + k * n)
        available = available_memory()
        if available is not None:
            cores = max(1, min(cores, 1 + int(0.3 * available // max(extra, 1))))
    return cores


def _ranges(total: int, workers: int) -> list[tuple[int, int]]:
    bounds = [total * w // workers for w in range(workers + 1)]
    return [(bounds[w], bounds[w + 1]) for w in range(workers)]


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


def _run_ranges(function, worker_args: list[list], ranges: list[tuple[int, int]],
                job: KernelJob, lo: float, hi: float, phase: str) -> float:
    """Run each worker's range of threads in adaptive chunks, in parallel;
    report progress and honour cancel from this thread; return the wall time."""
    total = sum(stop - start for start, stop in ranges)
    done = [0] * len(ranges)
    failures: list[BaseException] = []
    halt = threading.Event()

    def work(w: int) -> None:
        start, stop = ranges[w]
        # Start with one thread (one thread of a buggy kernel can be long), then
        # grow the chunk while it stays under CHUNK_SECONDS.
        current, chunk = start, 1
        try:
            while current < stop and not halt.is_set():
                end = min(stop, current + chunk)
                began = time.perf_counter()
                function(*worker_args[w], current, end)
                elapsed = time.perf_counter() - began
                done[w] = end - start
                current = end
                if elapsed < CHUNK_SECONDS / 2:
                    chunk *= 2
                elif elapsed > CHUNK_SECONDS * 2 and chunk > 1:
                    chunk //= 2
        except BaseException as exc:  # re-raised in the caller's thread
            failures.append(exc)
            halt.set()

    began = time.perf_counter()
    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(len(ranges))]
    for thread in threads:
        thread.start()
    while True:
        alive = [thread for thread in threads if thread.is_alive()]
        if not alive:
            break
        alive[0].join(0.05)
        if job.cancel():
            halt.set()
            for thread in threads:
                thread.join()
            raise RunCancelled("run cancelled")
        job.progress(lo + (hi - lo) * sum(done) / max(total, 1),
                     f"{phase}: {sum(done):,} of {total:,} threads")
    elapsed = time.perf_counter() - began
    if failures:
        exc = failures[0]
        if isinstance(exc, (ZeroDivisionError, IndexError, ValueError)):
            raise KernelRuntimeError(f"{job.plan.name!r} raised in the emulation: {exc}") from None
        raise exc
    job.progress(hi, f"{phase}: {total:,} threads done")
    return elapsed


def _merge(records: list[np.ndarray], private: list[list[np.ndarray]]) -> None:
    """Fold each extra worker's private recording arrays into ``records``."""
    for copy in private:
        for index, how in PRIVATE_RECORDS.items():
            if how == "sum":
                records[index] += copy[index]
            elif how == "min":
                np.minimum(records[index], copy[index], out=records[index])
            else:
                np.maximum(records[index], copy[index], out=records[index])
        for index in range(READS, len(records)):  # read counts
            records[index] += copy[index]


def _take_later_writes(c: np.ndarray, private_c: list[np.ndarray],
                       written: list[np.ndarray]) -> None:
    """Sequential semantics: an element's final value is the last range's write."""
    for c_w, mask in zip(private_c, written):
        np.copyto(c, c_w, where=mask.reshape(c.shape))


def run_cpu(job: KernelJob) -> BackendOutput:
    """Run the recording emulation, then (if it found no out-of-bounds access)
    the plain emulation, timed."""
    request = job.request
    job.progress(0.0, "compiling the CPU emulation")
    gen = load_module(job.plan, "cpu", request.dtype)
    output_shape, input_shapes = job.record_shapes()
    total = request.total_threads
    launch = [*request.grid2, *request.block2]
    records = job.fresh_records()
    compile_seconds = _compile(gen, job, tuple(launch), records)
    timings = [Timing("compile", "cpu", compile_seconds,
                      "first call of the emulation (numba compile, or load from its cache)")]
    workers = worker_count(job)
    ranges = _ranges(total, workers)
    method = ("wall clock of the compiled loop over all threads"
              + (f", {workers} cores" if workers > 1 else ", 1 core"))

    c_record = job.fresh_output()
    private = [_private_copy(records, input_shapes, output_shape, total) for _ in ranges[1:]]
    private_c = [job.fresh_output() for _ in ranges[1:]]
    worker_args = [job.arguments(c_record) + records + launch] + [
        job.arguments(c) + copy + launch for c, copy in zip(private_c, private)]
    spent = _run_ranges(gen.function("_tm_run_record"), worker_args, ranges, job,
                        0.02, 0.5, "instrumented emulation")
    written = [(copy[0] + copy[1]) > 0 for copy in private]
    _take_later_writes(c_record, private_c, written)
    _merge(records, private)
    del private, private_c
    timings.append(Timing("instrumented kernel", "cpu", spent, method, 1, job.flops))

    oob = int(records[OOB].sum())
    if oob:
        return BackendOutput(c_record, records, None, timings, [
            f"the plain kernel was not launched: the instrumented run found {oob:,} "
            "out-of-bounds accesses (C shown is the instrumented run's, with those "
            "reads as 0 and those writes skipped)"])

    plain = gen.function("_tm_run_plain")
    outputs: list[np.ndarray] = []
    phases = iter([(0.5, 0.85)] + [(0.85 + 0.1 * i / request.repeats,
                                    0.85 + 0.1 * (i + 1) / request.repeats)
                                   for i in range(request.repeats)])

    buffers = [job.fresh_output() for _ in ranges]

    def timed_plain_run() -> float:
        c = job.fresh_output() if not outputs else buffers[0]
        extra = buffers[1:]
        for buffer in [c] + extra:
            buffer.fill(0 if job.zero_output else np.nan)
        lo, hi = next(phases)
        seconds = _run_ranges(plain, [job.arguments(x) + launch for x in [c] + extra],
                              ranges, job, lo, hi, "plain emulation")
        _take_later_writes(c, extra, written)
        if not outputs:
            outputs.append(c)
        return seconds

    first = timed_plain_run()
    seconds, samples = first, 1
    if first < 0.2 and request.repeats > 1:
        # Short runs are repeated (the first one then counts as a warm-up).
        seconds, samples = median_time(timed_plain_run, request.repeats, budget=1.0)
    timings.append(Timing("kernel", "cpu", seconds,
                          method + (f", median of {samples} runs" if samples > 1 else ""),
                          samples, job.flops))
    return BackendOutput(c_record, records, outputs[0], timings)


def _private_copy(records: list[np.ndarray], input_shapes, output_shape, total) -> list[np.ndarray]:
    """A worker's recording arrays: fresh private per-element arrays, shared
    per-thread ones (each thread belongs to exactly one worker)."""
    # Only the private arrays are used; the per-thread ones (trace included)
    # are the shared ones, so this allocates them empty.
    fresh = allocate_records(output_shape, input_shapes, records[OOB].shape[0], 0,
                             n_sites=records[TRACE_ADDR].shape[0], writers=records[2].dtype)
    return [records[i] if i in SHARED_RECORDS else fresh[i] for i in range(len(records))]
