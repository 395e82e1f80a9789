"""One entry point for a run: ``run(request) -> RunResult``.

The GUI, the command line, the benchmarks and the tests all come through here.
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from .backends.common import CancelCallback, KernelJob, ProgressCallback, _never, _no_progress
from .correctness import compare, reference
from .errors import BackendUnavailable, RunCancelled
from .inputs import make_inputs
from .loader import load_plan, resolve_scalars, scalar_arguments
from .plan import KernelPlan
from .coalescing import analyse
from .records import TRACE_ADDR, TRACE_COUNT, read_back
from .request import RunRequest, check_request
from .result import RunResult, Timing, make_verdict


@lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether numba can use a CUDA GPU in this process."""
    from numba import cuda
    try:
        return bool(cuda.is_available()) and not _simulating()
    except Exception:  # a broken driver install: no GPU for us
        return False


def gpu_status() -> str:
    """Why there is or is not a GPU, in words for a status bar."""
    if gpu_available():
        from numba import cuda
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else device.name
        return f"CUDA device: {name}"
    return "no CUDA device: runs use the CPU emulation (or the CUDA simulator)"


def _simulating() -> bool:
    from numba import config
    return bool(config.ENABLE_CUDASIM)


def resolve_backend(request: RunRequest, plan: KernelPlan) -> tuple[str, str]:
    """The backend a request runs on, and why, in words.

    ``auto``: the GPU if there is one, else the CPU emulation, else (for
    kernels the emulation cannot run) the simulator.  ``cpu`` for such a
    kernel also falls back to the simulator, and says so.
    """
    backend = request.backend
    if backend == "gpu":
        if not gpu_available():
            raise BackendUnavailable("the gpu backend was asked for, but there is no CUDA "
                                     "device here (numba.cuda.is_available() is False)")
        return "gpu", gpu_status()
    if backend == "auto" and gpu_available():
        return "gpu", gpu_status()
    if backend == "sim":
        return "sim", "the CUDA simulator, as asked"
    if not plan.emulable:
        why = (f"{plan.name} uses {plan.emulation_blocker_text()}, which the CPU emulation "
               "cannot run: it runs in the CUDA simulator instead")
        return "sim", why
    if backend == "cpu":
        return "cpu", "the CPU emulation, as asked"
    return "cpu", "no CUDA device: CPU emulation"


def run(request: RunRequest, progress: ProgressCallback | None = None,
        cancel: CancelCallback | None = None, *, isolate: bool = False,
        time_limit: float | None = None) -> RunResult:
    """Run a request and return its result.

    Raises a :class:`~kernels.errors.ThreadMapError` subclass, with a message
    for the user, for bad input (before anything runs), a kernel that does not
    parse, compile or run, a cancel, or a run past ``time_limit``.

    ``isolate`` runs it in a child process that cancel (or the time limit)
    can end at any moment; simulator runs always are.
    """
    progress = progress or _no_progress
    cancel = cancel or _never
    check_request(request)
    plan = load_plan(request)
    scalar_arguments(plan, request)  # refuse missing scalars before starting anything
    backend, note = resolve_backend(request, plan)
    resolved = request.with_(backend=backend)
    if backend == "sim" and not _simulating():
        from .backends.child import runner
        return runner(simulator=True).run(resolved, note, progress, cancel, time_limit)
    if isolate or time_limit is not None:
        from .backends.child import runner
        return runner(simulator=False).run(resolved, note, progress, cancel, time_limit)
    return run_here(resolved, note, progress, cancel)


def run_here(request: RunRequest, backend_note: str, progress: ProgressCallback = _no_progress,
             cancel: CancelCallback = _never) -> RunResult:
    """Run in this process, on ``request.backend`` (already resolved)."""
    check_request(request)
    plan = load_plan(request)
    resolved_scalars = resolve_scalars(plan, request)
    scalars = tuple(value for _, value, _ in resolved_scalars)
    a, b = make_inputs(request.pattern, request.m, request.k, request.n, request.dtype,
                       request.seed)
    job = KernelJob(request, plan, a, b, scalars, zero_output=plan.reads_output,
                    progress=progress, cancel=cancel)
    if request.backend == "cpu":
        from .backends.cpu import run_cpu
        output = run_cpu(job)
    else:
        from .backends.cuda_target import run_cuda
        output = run_cuda(job)
    if cancel():
        raise RunCancelled("run cancelled")
    progress(0.95, "checking against the float64 reference")
    ref = reference(a, b)
    m, k, n = request.shape
    slots = tuple((s.name, _slot_role(plan, s.name), s.ndim) for s in job.slots)
    maps = read_back(output.raw_records, ((m, k), (k, n), (m, n)), slots)
    coalescing = analyse(output.raw_records[TRACE_ADDR], job.sites, request.blocks,
                         request.threads_per_block, np.dtype(request.dtype).itemsize)
    output.raw_records[TRACE_ADDR] = output.raw_records[TRACE_COUNT] = None  # large; done
    c = output.c_plain if output.c_plain is not None else output.c_record
    errors = compare(c, ref)
    verdict = make_verdict(maps, errors)
    notes = list(output.notes)
    if plan.reads_output:
        notes.append(f"{plan.name} reads or accumulates into its output, so C started "
                     "zeroed (as its author's host code would do) instead of NaN; the write "
                     "counts still show elements it never wrote")
    if scalars:
        notes.append("scalar arguments: " + ", ".join(
            f"{name} = {value} ({source})" for name, value, source in resolved_scalars))
    timings = list(output.timings) + [time_reference(a, b, request.backend == "gpu")]
    progress(1.0, "done")
    return RunResult(
        request=request, kernel_name=plan.name, backend_note=backend_note,
        c=c, c_source="plain kernel" if output.c_plain is not None else "instrumented kernel",
        reference=ref.c, maps=maps, verdict=verdict, timings=tuple(timings),
        notes=tuple(notes), output_init="zeros" if plan.reads_output else "nan", slots=slots,
        coalescing=coalescing)


def _slot_role(plan: KernelPlan, name: str) -> str:
    if name == plan.output:
        return "C"
    if name in plan.inputs:
        return "AB"[plan.inputs.index(name)]
    return next(local.kind for local in plan.local_arrays if local.name == name)


def time_reference(a: np.ndarray, b: np.ndarray, on_gpu: bool) -> Timing:
    """Time the library matmul to compare with: cuBLAS (CuPy) on a GPU when
    CuPy is installed, else numpy (BLAS) on the CPU, in the run's dtype."""
    flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    if on_gpu:
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            d_a, d_b = cupy.asarray(a), cupy.asarray(b)
            d_a @ d_b  # warm-up (handle creation)
            times = []
            for _ in range(5):
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                d_a @ d_b
                stop.record()
                stop.synchronize()
                times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
            return Timing(f"reference (cuBLAS {a.dtype.name})", "cublas", float(np.median(times)),
                          "CuPy events, median of 5 launches after a warm-up", 5, flops)
    a @ b  # warm-up
    times = []
    started = time.perf_counter()
    while len(times) < 5 and (time.perf_counter() - started < 1.0 or not times):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return Timing(f"reference (numpy {a.dtype.name})", "numpy", float(np.median(times)),
                  f"wall clock, median of {len(times)} calls after a warm-up", len(times), flops)
