"""Run the CUDA kernels: on a real GPU, or in numba's CUDA simulator.

Which one is decided when numba is first imported (``NUMBA_ENABLE_CUDASIM``),
so the simulator runs in a child process of its own (see ``child.py``); this
module runs whichever this process has.
"""
from __future__ import annotations

import contextlib
import sys
import time

from ..derived.codegen import load_module
from ..errors import KernelCompileError, KernelRuntimeError, RequestError
from ..records import DIVZ, OOB
from ..request import format_bytes
from ..result import Timing
from .common import BackendOutput, KernelJob, median_time, shorten_numba_error
from .kernel_output import KernelPrints, kernel_prints, kernel_warnings
from .numba_hooks import simulator_progress as _simulator_progress


def in_simulator() -> bool:
    """Whether this process's numba runs CUDA kernels in the simulator."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)


@contextlib.contextmanager
def _sequential_threads(enabled: bool):
    """With a long thread switch interval each simulated thread runs to its end
    before the next starts: 10-40x faster, and safe only without syncthreads
    (a thread waiting at a barrier would stall)."""
    if not enabled:
        yield
        return
    previous = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _raise_from_kernel(exc: Exception, job: KernelJob, gen, phase: str) -> None:
    module = type(exc).__module__
    if module.startswith("numba") and ("Typing" in type(exc).__name__
                                       or "Lowering" in type(exc).__name__
                                       or "Unsupported" in type(exc).__name__):
        raise KernelCompileError(f"numba could not compile {job.plan.name!r} for CUDA:\n"
                                 + shorten_numba_error(str(exc), gen.relocate)) from None
    raise KernelRuntimeError(f"{job.plan.name!r} failed in the {phase}: "
                             f"{type(exc).__name__}: {shorten_numba_error(str(exc), gen.relocate)}") from None


def run_cuda(job: KernelJob) -> BackendOutput:
    """Run on this process's CUDA target (a GPU, or the simulator)."""
    simulated = in_simulator()
    job.progress(0.0, "compiling the CUDA kernels")
    gen = load_module(job.plan, "cuda", job.request.element_types)
    notes: list[str] = []
    with kernel_warnings(gen, notes):
        output = _run_simulated(job, gen) if simulated else _run_gpu(job, gen)
    output.notes.extend(notes)
    return output


def _run_simulated(job: KernelJob, gen) -> BackendOutput:
    request = job.request
    record_kernel = gen.function(f"{job.plan.name}__tm_record")
    plain_kernel = gen.function(job.plan.name)
    records = job.fresh_records()
    c_record = job.fresh_output()
    # A thread waiting at a barrier must let the others run.
    sequential = not job.plan.barrier_lines
    method = "wall clock of one simulated launch"
    prints = KernelPrints()
    start = time.perf_counter()
    try:
        with _simulator_progress(job, 0.02, 0.5, "instrumented kernel (simulator)"), \
                _sequential_threads(sequential), kernel_prints(prints):
            record_kernel[request.grid, request.block](*job.arguments(c_record), *records)
    except (KernelRuntimeError, KernelCompileError):
        raise
    except Exception as exc:
        if type(exc).__name__ == "RunCancelled":
            raise
        _raise_from_kernel(exc, job, gen, "simulator")
    timings = [Timing("instrumented kernel", "sim", time.perf_counter() - start, method, 1,
                      job.flops)]
    oob = int(records[OOB].sum())
    if oob:
        return BackendOutput(c_record, records, None, timings, [_not_launched(oob)],
                             prints=prints)
    divisions = int(records[DIVZ].sum())
    if divisions:
        return BackendOutput(c_record, records, None, timings, [
            f"the plain kernel was not launched: the instrumented run found {divisions:,} "
            "divisions by zero, where the simulator's Python would stop with "
            "ZeroDivisionError (C shown is the instrumented run's, with a GPU's values "
            "there)"], prints=prints)
    c_plain = job.fresh_output()
    start = time.perf_counter()
    try:
        with _simulator_progress(job, 0.5, 0.95, "kernel (simulator)"), \
                _sequential_threads(sequential), kernel_prints(None):
            plain_kernel[request.grid, request.block](*job.arguments(c_plain))
    except Exception as exc:
        if type(exc).__name__ == "RunCancelled":
            raise
        _raise_from_kernel(exc, job, gen, "simulator")
    timings.append(Timing("kernel", "sim", time.perf_counter() - start, method, 1, job.flops))
    return BackendOutput(c_record, records, c_plain, timings, prints=prints)


def _not_launched(oob: int) -> str:
    return (f"the plain kernel was not launched: the instrumented run found {oob:,} "
            "out-of-bounds accesses, which on a GPU can corrupt memory or end the CUDA "
            "context (C shown is the instrumented run's, with those reads as 0 and those "
            "writes skipped)")


def _run_gpu(job: KernelJob, gen) -> BackendOutput:
    from numba import cuda

    request = job.request
    record_kernel = gen.function(f"{job.plan.name}__tm_record")
    plain_kernel = gen.function(job.plan.name)
    records = job.fresh_records()
    c_record = job.fresh_output()
    needed = sum(r.nbytes for r in records) + sum(x.nbytes for x in job.inputs) \
        + 2 * c_record.nbytes
    free, _total = cuda.current_context().get_memory_info()
    if needed > 0.9 * free:
        raise RequestError(f"this run needs about {format_bytes(needed)} of GPU memory; "
                           f"{format_bytes(free)} is free")
    timings: list[Timing] = []
    prints = KernelPrints()

    def event_time(launch) -> float:
        start, stop = cuda.event(), cuda.event()
        with kernel_prints(None, descriptor=True):
            start.record()
            launch()
            stop.record()
            stop.synchronize()
        return cuda.event_elapsed_time(start, stop) / 1e3

    try:
        wall = time.perf_counter()
        d_inputs = tuple(cuda.to_device(x) for x in job.inputs)
        cuda.synchronize()
        timings.append(Timing(f"host to device ({', '.join(job.plan.inputs)})", "gpu",
                              time.perf_counter() - wall,
                              "wall clock of cuda.to_device + synchronize"))
        d_c = cuda.to_device(c_record)
        d_records = [cuda.to_device(r) for r in records]
        record_args = _device_arguments(job, d_inputs, d_c)
        job.check_cancel()
        wall = time.perf_counter()
        with kernel_prints(prints, descriptor=True):
            record_kernel[request.grid, request.block](*record_args, *d_records)
            cuda.synchronize()
        timings.append(Timing("compile + first launch (instrumented)", "gpu",
                              time.perf_counter() - wall, "wall clock, includes the JIT compile"))
        for d, host in zip(d_records, records):
            d.copy_to_host(host)
        d_c.copy_to_host(c_record)
        # Time the instrumented kernel again, warm (records are not re-read).
        seconds = event_time(lambda: record_kernel[request.grid, request.block](
            *record_args, *d_records))
        timings.append(Timing("instrumented kernel", "gpu", seconds, "CUDA events, one warm launch",
                              1, job.flops))
        job.progress(0.5, "instrumented kernel done")
        oob = int(records[OOB].sum())
        if oob:
            return BackendOutput(c_record, records, None, timings, [_not_launched(oob)],
                                 prints=prints)

        c_plain = job.fresh_output()
        d_c = cuda.to_device(c_plain)
        plain_args = _device_arguments(job, d_inputs, d_c)
        wall = time.perf_counter()
        with kernel_prints(None, descriptor=True):
            plain_kernel[request.grid, request.block](*plain_args)  # warm-up, compiles
            cuda.synchronize()
        timings.append(Timing("compile + first launch", "gpu", time.perf_counter() - wall,
                              "wall clock, includes the JIT compile"))
        wall = time.perf_counter()
        d_c.copy_to_host(c_plain)  # the first launch's C, written over NaN
        timings.append(Timing("device to host (C)", "gpu", time.perf_counter() - wall,
                              "wall clock of copy_to_host"))
        job.check_cancel()
        seconds, samples = median_time(
            lambda: event_time(lambda: plain_kernel[request.grid, request.block](*plain_args)),
            request.repeats)
        timings.append(Timing("kernel", "gpu", seconds,
                              f"CUDA events around the kernel only, median of {samples} launches "
                              "after a warm-up", samples, job.flops))
    except (KernelRuntimeError, KernelCompileError, RequestError):
        raise
    except Exception as exc:
        if type(exc).__name__ == "RunCancelled":
            raise
        _raise_from_kernel(exc, job, gen, "GPU run")
    job.progress(0.95, "kernel timed")
    return BackendOutput(c_record, records, c_plain, timings, prints=prints)


def _device_arguments(job: KernelJob, d_inputs, d_c) -> list:
    """The kernel's arguments with device arrays, shaped as the kernel indexes
    them (``KernelJob.kernel_shape``: flattened where it indexes 1-D, a 3-D
    output's own shape)."""
    devices = dict(zip(job.plan.inputs, d_inputs))
    devices[job.plan.output] = d_c
    scalars = dict(zip(job.plan.scalars, job.scalars))
    args = []
    for name in job.plan.kernel.params:
        if name in devices:
            array = devices[name]
            shape = job.kernel_shape(name, tuple(array.shape))
            args.append(array if tuple(array.shape) == shape else array.reshape(shape))
        else:
            args.append(scalars[name])
    return args
