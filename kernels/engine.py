"""One entry point for a run: ``run(request) -> RunResult``.

The GUI, the command line, the benchmarks and the tests all come through here.
"""
from __future__ import annotations

import contextvars
import dataclasses
import math
import os
import re
import time
from typing import Callable

import numpy as np

from .analyses.correctness import (
    NO_REFERENCE,
    NO_REFERENCE_ARRAY,
    NO_REFERENCE_GIVEN,
    compare,
    reference,
    unchecked,
)
from .analyses.lockstep_analysis import read_analysis
from .analyses.diagnoses import diagnose
from .analyses.occupancy import (
    ASSUMED_REGISTERS,
    GPU_MODELS,
    MAX_STATIC_SHARED,
    launch_occupancy,
)
from .backends import backend as backend_named
from .backends import device as _device  # (might_have_gpu looked up at each call: tests stand in)
from .backends.device import gpu_status
from .backends.device import gpu_present, gpu_stack_problem
from .backends.device import simulating as _simulating
from .backends.common import (
    CancelCallback,
    KernelJob,
    ProgressCallback,
    _never,
    _no_progress,
)
from .derived.local_types import block_array_specs
from .derived.transform import division_sites
from .errors import (
    BackendUnavailable,
    EmulationUnsupported,
    KernelCompileError,
    KernelSourceError,
    KernelRuntimeError,
    RequestError,
    RunCancelled,
    ThreadMapError,
    UnsupportedConstruct,
)
from .estimate import (
    ANALYSIS_SECONDS_LIMIT,
    COMMAND_LINE_SECONDS,
    SECONDS_PER_CONFIGURATION,
    describe_seconds,
    emulation_seconds,
    requests_seconds,
    run_seconds,
)
from .inputs import described_arrays, make_inputs, poison_value
from .records import RACE_CHECK_ELEMENTS, read_back
from .request import RunRequest, check_request, format_bytes
from .presets import covering_launch
from .result import BACKEND_SHORT, KernelSnapshot, RunResult, Timing, make_verdict
from .sources.loader import load_plan, resolve_scalars, scalar_arguments
from .sources.plan import KernelPlan


#: Why a first answer on a machine with a GPU comes from the CPU emulation.
GPU_FOLLOWS = ("the CPU emulation first, for the maps at once; the GPU's run of the same "
               "launch follows with its times and its own verdict")


def resolve_backend(request: RunRequest, plan: KernelPlan,
                    gpu_follows: bool = False) -> tuple[str, str]:
    """The backend a request runs on, and why, in words.

    ``auto``: the GPU if there is one, else the CPU emulation, else (for
    kernels the emulation cannot run) the simulator.  ``cpu`` for such a
    kernel also falls back to the simulator, and says so.  With
    ``gpu_follows`` (a caller that runs :func:`confirm` after), ``auto`` on a
    machine with a GPU takes the CPU emulation where it can run the kernel:
    it answers in well under a second where the GPU's first command JITs.
    """
    backend = request.backend
    if backend == "auto" and gpu_follows and _device.might_have_gpu() \
            and emulation_refusal(request, plan) is None:
        # (whether the GPU is usable is asked after this first answer, by
        # confirm: importing numba.cuda and starting the driver take ~1 s)
        blocks = " (shared memory and barriers in block lockstep)" if (
            plan.local_arrays or plan.barrier_lines) else ""
        return "cpu", f"{GPU_FOLLOWS}{blocks}"
    if backend == "gpu":
        if not backend_named("gpu").available():
            raise BackendUnavailable(
                f"the gpu backend was asked for, but {gpu_stack_problem()}" if gpu_present()
                else "the gpu backend was asked for, but there is no CUDA device here "
                     "(numba.cuda.is_available() is False)")
        return "gpu", gpu_status()
    if backend == "auto" and backend_named("gpu").available():
        return "gpu", gpu_status()
    unusable = f"; {gpu_status()}" if backend == "auto" and gpu_present() else ""
    if backend == "sim":
        check_simulator(plan)
        return "sim", "the CUDA simulator, as asked"
    why_not = emulation_refusal(request, plan)
    if why_not and backend == "cpu":
        # Asked for by name: never run elsewhere.
        check_simulator(plan, why_not if plan.emulable else None)
        line = plan.emulation_blockers[0][1] if plan.emulation_blockers else None
        raise UnsupportedConstruct(
            f"the CPU emulation cannot run {plan.name}: it uses {why_not}; choose the "
            "simulator (--backend sim) or auto, which picks it for such kernels",
            plan.module.path, line)
    if why_not:
        check_simulator(plan, why_not if plan.emulable else None)
        return "sim", (f"{plan.name} uses {why_not}, which the CPU emulation cannot run: it "
                       "runs in the CUDA simulator instead")
    blocks = " (shared memory and barriers in block lockstep)" if (
        plan.local_arrays or plan.barrier_lines) else ""
    if backend == "cpu":
        return "cpu", f"the CPU emulation, as asked{blocks}"
    if unusable:
        return "cpu", f"CPU emulation{blocks}{unusable}"
    return "cpu", f"no CUDA device: CPU emulation{blocks}"


def check_simulator(plan: KernelPlan, emulation_refused: str | None = None) -> None:
    """Refuse, before it starts, a kernel that numba's simulator cannot run
    (it has no warp shuffles, votes or syncwarp), naming the lines, and why
    the CPU emulation did not (``emulation_refused``)."""
    missing = plan.simulator_blockers()
    if missing:
        uses = "; ".join(f"cuda.{what} (line {line})" for what, line in missing)
        emulation = (f"the CPU emulation cannot run it as written ({emulation_refused}) and "
                     "numba's CUDA simulator has no such operation" if emulation_refused
                     else "neither the CPU emulation nor numba's CUDA simulator has it")
        raise UnsupportedConstruct(
            f"kernel {plan.name!r} uses {uses}: {emulation}, so it runs only on a GPU "
            "(--backend gpu)", plan.module.path, missing[0][1])


def emulation_refusal(request: RunRequest, plan: KernelPlan) -> str | None:
    """What keeps the lockstep emulation from running ``plan``, with lines;
    None when it can."""
    if not plan.emulable:
        return plan.emulation_blocker_text()
    from .backends.cpu import check_emulation
    try:
        check_emulation(plan, request)
    except EmulationUnsupported as exc:
        return str(exc)
    return None


def check_whole_scalars(request: RunRequest, plan: KernelPlan) -> None:
    """Refuse a fraction, NaN or infinity for a scalar the kernel uses as a
    whole number (an index, a range): numba would fail on its typing; and NaN
    or infinity for any scalar."""
    from .derived.local_types import kernel_types

    values = scalar_arguments(plan, request)
    for position, (name, value) in enumerate(zip(plan.scalars, values)):
        if not isinstance(value, float) or (math.isfinite(value) and value == int(value)):
            continue
        types = ["int64" if isinstance(v, int) else "float64" for v in values]
        try:
            kernel_types(plan, request.element_types, tuple(types))
        except KernelCompileError as exc:
            types[position] = "int64"
            try:
                kernel_types(plan, request.element_types, tuple(types))
            except KernelCompileError:
                break  # not this scalar: the run will report numba's error
            where = re.search(r'File "([^"]+)", line (\d+)', str(exc))
            at = f" ({where.group(1)}:{where.group(2)})" if where else ""
            raise RequestError(f"scalar {name} = {value} is not a whole number, and kernel "
                               f"{plan.name!r} uses {name} as one (an index or a range){at}") \
                from None
    # (--scalar n=1e400 is infinity: result.json then held Infinity, which is
    # not JSON, as THREADMAP_ARGS's had before it was refused there)
    for name, value in zip(plan.scalars, values):
        if isinstance(value, float) and not math.isfinite(value):
            raise RequestError(f"scalar {name} = {value} is not a finite number")


#: Local memory one thread may use: CUDA's limit (512 KiB per thread).
MAX_LOCAL_PER_THREAD = 512 * 1024


def check_local_memory(request: RunRequest, plan: KernelPlan) -> None:
    """Refuse local arrays no GPU can give a thread, or that the CPU
    emulation, which holds one copy per thread of a block (and a block per
    core), cannot fit in the memory available: a 300-byte file with
    ``cuda.local.array(2**18, float64)`` in a block of 32 x 32 had taken
    2.1 GB before its run began."""
    local = [s for s in block_array_specs(plan, request.element_types) if s.kind == "local"]
    if not local:
        return
    per_thread = sum(s.nbytes for s in local)
    largest = max(local, key=lambda s: s.nbytes)
    what = (f"local array {largest.name} ({'x'.join(map(str, largest.shape))} {largest.dtype}"
            + (f", with {len(local) - 1} more" if len(local) > 1 else "") + ")")
    if per_thread > MAX_LOCAL_PER_THREAD:
        raise KernelSourceError(
            f"kernel {plan.name!r}: {what} needs {format_bytes(per_thread)} per thread; CUDA "
            f"gives a thread at most {format_bytes(MAX_LOCAL_PER_THREAD)} of local memory, so "
            "no GPU can run it: use a smaller array", plan.module.path, largest.line)
    from .request import MEMORY_SHARE, available_memory

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    held = per_thread * request.threads_per_block * min(cores, request.blocks)
    available = available_memory()
    if available is not None and held > MEMORY_SHARE * available:
        raise KernelSourceError(
            f"kernel {plan.name!r}: {what} needs {format_bytes(per_thread)} per thread: the CPU "
            f"emulation holds it for each of the {request.threads_per_block:,} threads of a "
            f"block on each of {min(cores, request.blocks)} cores, {format_bytes(held)}, more "
            f"than {int(MEMORY_SHARE * 100)}% of the {format_bytes(available)} available; use "
            "smaller blocks or a smaller array", plan.module.path, largest.line)


def check_shared_memory(request: RunRequest, plan: KernelPlan) -> None:
    """Refuse a kernel whose static shared memory no GPU can hold."""
    shared = [s for s in block_array_specs(plan, request.element_types) if s.kind == "shared"]
    total = sum(s.nbytes for s in shared)
    if total > MAX_STATIC_SHARED:
        arrays = "; ".join(f"{s.name}: {'x'.join(map(str, s.shape))} {s.dtype}, line {s.line}"
                           for s in shared)
        raise RequestError(
            f"{plan.name} declares {format_bytes(total)} of static shared memory per block "
            f"({arrays}); CUDA allows at most 48 KiB of static shared memory per block, so no "
            "GPU can build it (ptxas refuses it): use smaller tiles")


#: Seconds (wall clock, and CPU) numba's typing, or compile to PTX, of one
#: kernel file may take in its child: real kernels take well under one; a
#: 1.1 KB file of nested tuples took 111 s to type, and each further line
#: doubles it.
FILE_COMPILE_LIMIT = 30.0
_RUN_CANCEL: contextvars.ContextVar[CancelCallback | None] = contextvars.ContextVar(
    "run_cancel", default=None)


def compile_files_in_children(time_limit: float = FILE_COMPILE_LIMIT,
                              typist: bool = True,
                              start_typist: bool = True) -> Callable[[], None]:
    """From now on, this process (one that serves untrusted kernel files:
    the command line, the app, a ``check`` worker) has numba type a kernel
    read from a file, and compile it to PTX for its register count, in a
    sandboxed child, within ``time_limit`` seconds each, never here.

    ``typist``: in the typist, a child that stays up from kernel to kernel
    with numba imported (for the app, where each edit is a new kernel),
    started now unless ``start_typist`` is False (then by its first use, or
    :func:`kernels.backends.child.warm_typist`); else in the child that will run the kernel (a one-shot command,
    which starts that child at its first step: a third process starting
    beside it cost more, 2.3 s became 3 to 4 s on 2 cores)."""
    from .analyses import ptx
    from .backends.child import runner, typist as the_typist, warm_typist
    from .derived import local_types

    def child():
        return the_typist() if typist else runner(simulator=False)

    def typed_in_child(plan: KernelPlan, dtype: str, scalar_types: tuple[str, ...]):
        return child().kernel_types(plan, dtype, scalar_types, time_limit,
                                    _RUN_CANCEL.get() or _never)

    def compiled_in_child(plan: KernelPlan, dtype: str, cc: tuple[int, int]) -> str:
        return child().kernel_ptx(plan, dtype, cc, time_limit, _RUN_CANCEL.get() or _never)

    typing = local_types.type_files_with(typed_in_child)
    compiling = ptx.compile_files_with(compiled_in_child)
    if typist and start_typist:
        warm_typist()

    def restore() -> None:
        local_types.type_files_with(typing)
        ptx.compile_files_with(compiling)

    return restore


def prepare(request: RunRequest,
            gpu_follows: bool = False) -> tuple[RunRequest, KernelPlan, str]:
    """Every check that can refuse ``request`` before anything runs; the
    request as it will run (dtype from a signature, backend resolved), its
    kernel's plan, and why that backend, in words (``gpu_follows``: see
    :func:`resolve_backend`)."""
    check_request(request)
    plan = load_plan(request)
    if plan.signature_dtype and plan.signature_dtype[0] != request.dtype:
        dtype, line = plan.signature_dtype
        request = request.with_(dtype=dtype, dtype_note=(
            f"the kernel's signature (line {line}) fixes its arrays as {dtype}: the run uses "
            f"{dtype}, not {request.dtype}"))
        check_request(request)
    scalar_arguments(plan, request)  # refuse missing scalars before starting anything
    check_whole_scalars(request, plan)
    check_shared_memory(request, plan)
    check_local_memory(request, plan)
    backend, note = resolve_backend(request, plan, gpu_follows)
    return request.with_(backend=backend), plan, note


def check_estimate(request: RunRequest, configurations: list[RunRequest] | None = None) -> None:
    """Refuse a run (or sweep) estimated over a minute, with the estimate and
    something smaller to try (the command line's --yes runs it anyway)."""
    # (the compiled tier's module: 24 ms to import, and only a kernel's check needs it)
    from .backends.cpu import compiled_ready

    request, plan, _ = prepare(request)
    backend = request.backend
    ready = backend == "cpu" and compiled_ready(plan, request)
    seconds = requests_seconds(configurations or [request], plan, backend, ready)
    if configurations:
        seconds += SECONDS_PER_CONFIGURATION * len(configurations)
    if seconds <= COMMAND_LINE_SECONDS:
        return
    what = f"this sweep of {len(configurations)} configurations" if configurations else "this run"
    smaller = "fewer or smaller configurations" if configurations else \
        smaller_launch(request, plan, backend)
    raise ThreadMapError(
        f"{what} would take about {describe_seconds(seconds)} on the {BACKEND_SHORT[backend]} "
        f"(an estimate); add --yes to run it anyway, or try {smaller}")


def smaller_launch(request: RunRequest, plan: KernelPlan, backend: str) -> str:
    """Options for a run that takes under a minute: C covered once by the same
    block, then halved shapes."""
    candidate = covering_launch(request, plan)
    while run_seconds(candidate, plan, backend) > COMMAND_LINE_SECONDS and max(
            candidate.m, candidate.n) > 1:
        candidate = covering_launch(candidate.with_(m=max(1, candidate.m // 2),
                                                    n=max(1, candidate.n // 2),
                                                    k=max(1, candidate.k // 2)), plan)
    return (f"--shape {candidate.m}x{candidate.k}x{candidate.n} --grid "
            f"{'x'.join(map(str, candidate.grid))} --block "
            f"{'x'.join(map(str, candidate.block))} (about "
            f"{describe_seconds(run_seconds(candidate, plan, backend))})")


def occupancy_on(result: RunResult, gpu_model: str, assumed_registers: int | None = None) -> dict:
    """The occupancy figures of ``result``'s launch on one GPU model (its
    registers measured by ptxas where it can, for that model only), with where
    the model's figures come from."""
    figures = launch_occupancy(result.request, load_plan(result.request), gpu_model,
                               assumed_registers or ASSUMED_REGISTERS)
    return dict(figures.summary(), gpu_source=GPU_MODELS[gpu_model].source)


def run(request: RunRequest, progress: ProgressCallback | None = None,
        cancel: CancelCallback | None = None, *, isolate: bool = False,
        time_limit: float | None = None, compile_ahead: bool = True,
        reference=None, maps_final: Callable[[RunResult], None] | None = None,
        gpu_follows: bool = False) -> RunResult:
    """Run a request and return its result.

    Raises a :class:`~kernels.errors.ThreadMapError` subclass, with a message
    for the user, for bad input (before anything runs), a kernel that does not
    parse, compile or run, a cancel, or a run past ``time_limit``.

    ``isolate`` runs it in a child process that cancel (or the time limit)
    can end at any moment; simulator runs always are.  There, after an
    instant-tier run, the child compiles the compiled tier in the background
    (``compile_ahead``; pointless for a command that ends after one run).

    ``reference`` (a described run's, from the Python API): a function of
    the inputs that returns the expected output, or that output itself; run
    here, after the kernel, as ``request.reference``'s file is.

    ``maps_final`` is called with the result once its maps and its
    reference's output are what it returns with, before the reference check
    gives its verdict: the command line writes maps.npz from then on.

    ``gpu_follows``: the caller runs :func:`confirm` on the result when its
    ``follows`` says a backend is due, so ``auto`` on a machine with a GPU
    answers first from the CPU emulation (:func:`resolve_backend`).
    """
    progress = progress or _no_progress
    cancel = cancel or _never
    watching = _RUN_CANCEL.set(cancel)  # (a kernel file's typing in a child heeds it)
    try:
        return _run(request, progress, cancel, isolate=isolate, time_limit=time_limit,
                    compile_ahead=compile_ahead, reference=reference, maps_final=maps_final,
                    gpu_follows=gpu_follows)
    finally:
        _RUN_CANCEL.reset(watching)


def _run(request: RunRequest, progress: ProgressCallback, cancel: CancelCallback, *,
         isolate: bool, time_limit: float | None, compile_ahead: bool, reference,
         maps_final: Callable[[RunResult], None] | None, gpu_follows: bool) -> RunResult:
    if isolate or time_limit is not None:
        from .backends.child import warm_for

        warm_for(request)  # its imports overlap prepare() below
    resolved, plan, note = prepare(request, gpu_follows)
    follows = "gpu" if note.startswith(GPU_FOLLOWS) else None
    referenced = resolved.reference is not None or reference is not None
    # (a reference check found on its own runs in the sandbox, after the kernel)
    sandboxed_reference = referenced and reference is None and resolved.reference_in_child
    simulator = backend_named(resolved.backend).needs_own_process and not _simulating()
    expected = None
    if simulator or isolate or time_limit is not None:
        from .backends.child import runner

        known_types = None if simulator else _known_types(plan, resolved)
        if referenced and not sandboxed_reference:  # (made here while the kernel runs)
            from .reference_code import ExpectedInBackground

            expected = ExpectedInBackground(resolved, plan, reference)
        if simulator:
            result = runner(simulator=True).run(resolved, note, progress, cancel, time_limit)
        else:
            result = runner(simulator=False, gpu=resolved.backend == "gpu").run(
                resolved, note, progress, cancel, time_limit,
                compile_ahead=compile_ahead and compiling_ahead(), known_types=known_types)
    else:
        result = run_here(resolved, note, progress, cancel)
    found = None
    if referenced:
        from .reference_code import expected_output, with_expected_output

        progress(0.98, "checking against your reference")
        if sandboxed_reference:
            from .backends.child import runner

            found = runner(simulator=False).expected_output(
                plan, resolved, time_limit or FILE_COMPILE_LIMIT, cancel)
        else:
            found = expected.result() if expected else expected_output(resolved, plan,
                                                                        reference)
        result = with_expected_output(result, found)
    if maps_final is not None:
        maps_final(result)
    if referenced:
        from .reference_code import check_against_reference

        result = check_against_reference(result, plan, reference, expected=found)
        # (the rules ran on the verdict of the maps alone: a run whose only
        # fault is its values, found by the reference, gets its causes now)
        result = _diagnosed(result, plan, ones=None)
    asked = request.backend if request.backend != result.request.backend else ""
    if follows or asked:
        result = dataclasses.replace(result, follows=follows, asked_backend=asked)
    return result


def confirm(result: RunResult, progress: ProgressCallback | None = None,
            cancel: CancelCallback | None = None, *, backend: str | None = None,
            isolate: bool = False, time_limit: float | None = None,
            reference=None) -> RunResult:
    """``result`` with the run of its request on ``backend`` (by default the
    one its ``follows`` names) added: that run's times, its own verdict, and
    every figure where its maps disagree with ``result``'s
    (analyses/agreement.py).  The maps, findings and verdict shown stay
    ``result``'s.  A second run that fails is one sentence in the
    confirmation, never an error: the first answer stands.  A cancel still
    raises RunCancelled."""
    from .analyses.agreement import disagreements
    from .result import Confirmation

    backend = backend or result.follows
    if backend is None:
        return result
    try:
        if not backend_named(backend).available():  # (a device file, but no usable GPU)
            raise BackendUnavailable(
                f"the {backend} backend is not available here" if backend != "gpu" else
                gpu_status() if gpu_present() else
                "numba finds no usable CUDA device (numba.cuda.is_available() is False), "
                "though the machine has one's device files: a driver missing or too old?")
        second = run(result.request.with_(backend=backend), progress, cancel, isolate=isolate,
                     time_limit=time_limit, compile_ahead=False, reference=reference)
    except RunCancelled:
        raise
    except Exception as exc:  # (a GPU that fails to initialise, a driver too old, ...)
        detail = " ".join(str(exc).split()) or type(exc).__name__
        if not isinstance(exc, ThreadMapError):
            detail = f"{type(exc).__name__}: {detail}"
        if not isinstance(exc, BackendUnavailable):
            detail = f"the {backend.upper() if backend == 'gpu' else backend} run failed: {detail}"
        return dataclasses.replace(result, follows=None, confirmation=Confirmation(
            backend, error=detail))
    found, compared = disagreements(result, second)
    own = tuple(t for t in second.timings if t.backend == second.backend)
    return dataclasses.replace(
        result, follows=None, timings=tuple(result.timings) + own,
        confirmation=Confirmation(second.backend, second.verdict.shown_word,
                                  second.verdict.summary(), found, compared))


def compiling_ahead() -> bool:
    """Whether background compiles are on ($THREADMAP_COMPILE_AHEAD=0 turns
    them off: the test suite does, so that none competes with its timed tests)."""
    import os

    return os.environ.get("THREADMAP_COMPILE_AHEAD", "1") != "0"


def _known_types(plan: KernelPlan, request: RunRequest):
    """The kernel's local types if this process has worked them out (prepare
    does, for the CPU emulation), for the child to take."""
    if request.backend != "cpu":
        return None
    from .backends.common import scalar_types
    from .derived.local_types import known_types

    return known_types(plan, request.element_types,
                       scalar_types(scalar_arguments(plan, request)))


def _naming_the_output(note: str, plan) -> str:
    """A backend's note as it reads for this kernel: the backends call the
    output C, which a described kernel's is not (its ``out``)."""
    if plan.matmul or plan.output == "C":
        return note
    return note.replace("C shown", f"{plan.output} shown").replace("so C depends",
                                                                   f"so {plan.output} depends")


def run_here(request: RunRequest, backend_note: str, progress: ProgressCallback = _no_progress,
             cancel: CancelCallback = _never, diagnosed: bool = True) -> RunResult:
    """Run in this process, on ``request.backend`` (already resolved); with
    ``diagnosed``, the causes of a failure found (analyses/diagnoses)."""
    check_request(request)
    plan = load_plan(request)
    resolved_scalars = resolve_scalars(plan, request)
    scalars = tuple(value for _, value, _ in resolved_scalars)
    described = bool(request.arguments)
    initial = None
    if described:
        inputs, initial = described_arrays(request, plan)
    else:
        inputs = make_inputs(request.pattern, request.m, request.k, request.n, request.dtype,
                             request.seed)
    job = KernelJob(request, plan, inputs, scalars, zero_output=plan.reads_output,
                    progress=progress, cancel=cancel, initial_output=initial)
    began = time.monotonic()
    output = backend_named(request.backend).run(job)
    ran_for = time.monotonic() - began
    if output.tier:
        backend_note = f"{backend_note}; {output.tier}"
    if cancel():
        raise RunCancelled("run cancelled")
    m, k, n = request.shape
    slots = tuple((s.name, s.site_role, s.ndim) for s in job.slots)
    analysis, analysis_note = None, None
    if output.lockstep is not None:
        analysis = read_analysis(output.lockstep, output.layout, request, slots)
        analysis_note = "from this run (CPU lockstep emulation)"
    else:
        analysis, analysis_note = _analysis_run(job, slots, progress)
    maps = read_back(output.raw_records, (*(x.shape for x in job.inputs), (m, n)), slots,
                     tuple((line, text) for line, _, text in division_sites(plan)),
                     job.written_shapes())
    c = output.c_plain if output.c_plain is not None else output.c_record
    inputs_key = (request.pattern, request.m, request.k, request.n, request.dtype, request.seed)
    if described:  # (its reference, if any, is the user's: run by the command, see run())
        ref_c = NO_REFERENCE_ARRAY  # (not 128 MB of NaN sent from a child and written)
        errors = unchecked(c)
        verdict = make_verdict(maps, errors, analysis, plan.output, reference_note=(
            NO_REFERENCE_GIVEN if request.given_inputs else NO_REFERENCE))
    else:
        progress(0.97, "checking against the float64 reference")
        a, b = inputs
        ref = _remembered(("reference",) + inputs_key, lambda: reference(a, b))
        ref_c = ref.c
        errors = compare(c, ref)
        verdict = make_verdict(maps, errors, analysis, plan.output)
    notes = [_naming_the_output(note, plan) for note in output.notes]
    if initial is not None:
        made = "given for it" if request.given_inputs else "made as the inputs' are (--pattern)"
        notes.append(f"{plan.name} reads its output, {plan.output}, so it started with the "
                     f"values {made}, not NaN, and a reference gets them; the write counts "
                     f"still show elements it never wrote")
    elif request.given_inputs:
        poison = "NaN" if np.dtype(c.dtype).kind == "f" else f"{poison_value(c.dtype):,}"
        notes.append(f"the given {plan.output} was replaced by {poison} before the run (the "
                     f"kernel only stores into it), so that an element it never writes shows")
    elif plan.reads_output:
        notes.append(f"{plan.name} reads or accumulates into its output, so C started "
                     "zeroed (as its author's host code would do) instead of NaN; the write "
                     "counts still show elements it never wrote")
    if request.dtype_note:
        notes.append(request.dtype_note)
    notes += [f"line {line}: {note}" for line, note in plan.spelling_notes]
    if analysis is not None and analysis.global_races.unchecked:
        notes.append(f"races in global memory were not checked in "
                     f"{', '.join(analysis.global_races.unchecked)}: past "
                     f"{RACE_CHECK_ELEMENTS:,} elements, the check's records (~190 bytes an "
                     "element) would outweigh the run")
    earlier = plan.module.redefined.get(plan.name)
    if earlier:
        lines = ", ".join(map(str, earlier))
        notes.append(f"kernel {plan.name!r} is defined more than once (line {lines} and line "
                     f"{plan.kernel.lineno}); as Python does, the last definition (line "
                     f"{plan.kernel.lineno}) is the one run")
    if scalars:
        notes.append("scalar arguments: " + ", ".join(
            f"{name} = {value} ({source})" for name, value, source in resolved_scalars))
    on_gpu = request.backend == "gpu"
    timings = list(output.timings)
    if not described:  # (the library's matmul, to compare with)
        timings.append(_remembered(("reference time", on_gpu) + inputs_key,
                                   lambda: time_reference(a, b, on_gpu)))
    result = RunResult(
        request=request, kernel_name=plan.name, backend_note=backend_note,
        c=c, c_source="plain kernel" if output.c_plain is not None else "instrumented kernel",
        reference=ref_c, maps=maps, verdict=verdict, timings=tuple(timings),
        notes=tuple(notes), output_init="zeros" if plan.reads_output else (
            "nan" if np.dtype(c.dtype).kind == "f" else "lowest" if np.dtype(c.dtype).kind == "i"
            else "highest"), slots=slots,
        analysis=analysis, analysis_note=analysis_note, output=plan.output,
        output_reason=plan.output_reason,
        kernel=_snapshot(plan),
        kernel_output=output.prints.text if output.prints else "",
        kernel_output_cut=output.prints.dropped_chars if output.prints else 0)
    if not diagnosed:
        progress(1.0, "done")
        return result
    ones = None
    if not described and _all_ones_worth_trying(result):
        # The seed's point: would a test on all-ones matrices have passed?
        # The same launch on ones, its values only (cheap: small runs only).
        progress(0.99, "trying the same launch on all-ones inputs")
        ones = _errors_on_all_ones(request, backend_note, cancel, ran_for)
    result = _diagnosed(result, plan, ones)
    progress(1.0, "done")
    return result


def _diagnosed(result: RunResult, plan, ones) -> RunResult:
    """``result`` with the causes its verdict calls for (analyses/diagnoses),
    in place of any found before; the all-ones figures ``ones`` where tried.
    A rule's failure is a note, once."""
    failed: list[str] = []
    diagnoses = diagnose(plan.kernel.node, result, plan.module.values,
                         {name: line for name, (_, line) in plan.module.constants.items()},
                         ones, failed, matmul=not result.request.arguments)
    notes = result.notes + tuple(note for note in failed if note not in result.notes)
    return dataclasses.replace(result, diagnoses=diagnoses, notes=notes)


#: the largest run (multiply-adds) tried again on all-ones inputs for a diagnosis
ALL_ONES_LIMIT = 1 << 24


#: The all-ones rerun may take this long, or twice the run it repeats.
ALL_ONES_LEAST_SECONDS = 1.0


def _errors_on_all_ones(request: RunRequest, backend_note: str, cancel: CancelCallback,
                        ran_for: float):
    """The errors of ``request``'s launch on all-ones inputs, or None where
    that rerun took more than twice the run it repeats (as a kernel whose
    loops depend on the values may: the diagnosis is then left out).  A time
    limit does not count it: it is the engine's question, not the run's."""
    from .backends.phases import ONES_RERUN, not_counted

    deadline = time.monotonic() + max(ALL_ONES_LEAST_SECONDS, 2 * ran_for)
    try:
        with not_counted(ONES_RERUN):
            return run_here(request.with_(pattern="ones", repeats=1), backend_note,
                            cancel=lambda: cancel() or time.monotonic() > deadline,
                            diagnosed=False).verdict.errors
    except RunCancelled:
        if cancel():
            raise
        return None


def _all_ones_worth_trying(result: RunResult) -> bool:
    """Whether the all-ones rerun can answer its question.  Not where the run
    read its inputs out of bounds: a GPU reads whatever lies past the array
    there, never ones (the emulation reads 0), so no all-ones test would be
    known to pass; the seed's kernel at its own shape does 1,024x a matmul's
    work, and the rerun doubled a half-minute run to learn nothing."""
    request = result.request
    reads_outside = any(o.direction == "read" and o.role in ("A", "B")
                        for o in result.maps.out_of_bounds)
    return (not result.verdict.passed and result.verdict.errors.wrong > 0
            and request.pattern == "random" and not reads_outside
            and request.m * request.k * request.n <= ALL_ONES_LIMIT)


def _snapshot(plan) -> KernelSnapshot:
    """The kernel as it ran, with the lines of its accesses (for the source view)."""
    from .derived.transform import access_sites

    try:
        accesses = tuple((s.line, s.kind, s.array, s.role) for s in access_sites(plan))
    except ThreadMapError:  # (a kernel only the simulator runs: no lines to show)
        accesses = ()
    return KernelSnapshot(plan.name, plan.module.path, plan.module.text, plan.kernel.lineno,
                          plan.barrier_lines, plan.launch_dims,
                          getattr(plan.kernel.node, "end_lineno", None) or plan.kernel.lineno,
                          accesses)


def _analysis_run(job: KernelJob, slots, progress: ProgressCallback):
    """For a GPU or simulator run: the lockstep emulation's recording run, for
    the figures only it measures (warp requests, divergence, hazards).
    Returns (analysis, note); None with the reason where it cannot be had."""
    request = job.request
    try:
        why_not = emulation_refusal(request, job.plan)
    except ThreadMapError as exc:
        return None, f"not measured: the CPU emulation cannot run it ({exc})"
    if why_not:
        return None, f"not measured: the CPU emulation cannot run {why_not}"
    seconds = emulation_seconds(request)
    if request.backend == "gpu" and seconds > ANALYSIS_SECONDS_LIMIT:
        return None, (f"not measured: the CPU emulation would take about {seconds:.0f} s "
                      "for this size; run a smaller shape for these figures")
    from .backends.cpu import run_cpu

    def within(fraction: float, message: str) -> None:
        # After the GPU or simulator run's own progress, which ends at 0.95.
        progress(0.95 + 0.02 * fraction, f"warp figures and hazards: {message}")

    try:
        output = run_cpu(dataclasses.replace(job, progress=within), plain=False)
    except (KernelCompileError, KernelRuntimeError) as exc:
        return None, f"not measured: the CPU emulation failed ({exc})"
    return (read_analysis(output.lockstep, output.layout, request, slots),
            "from a recording run of the CPU lockstep emulation on the same inputs")


_memo: dict[tuple, object] = {}


def _remembered(key: tuple, compute):
    """The last value computed for ``key`` (one per kind): a sweep runs
    every configuration on the same inputs, so the float64 reference and the
    library's time for them are worked out once, not once per configuration."""
    kind = key[0]
    cached = _memo.get(kind)
    if cached is None or cached[0] != key:
        cached = _memo[kind] = (key, compute())
    return cached[1]


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
    return _time_numpy(a, b, flops)


def _time_numpy(a: np.ndarray, b: np.ndarray, flops: float) -> Timing:
    """numpy's matmul timed with its BLAS pool as it is and with one thread
    (threadpoolctl), the faster reported: threads that compete for the cores
    (numba's, the GUI's, another process's) can make a pool of BLAS threads
    wait on each other, which a single thread does not.

    The product goes into one C allocated beforehand, as the kernel's does:
    a fresh 4096 x 4096 C is 67 MB to fault in, 8 ms of each 12 ms call."""
    from .blas import blas_limited, blas_threads

    most = blas_threads()
    best = None
    c = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    for threads in sorted({most, 1}, reverse=True):
        with blas_limited(threads):
            start = time.perf_counter()
            np.matmul(a, b, out=c)  # warm-up
            # Calls of 5 ms and more vary little: three of them (a 4096 x 16 x
            # 4096 product spent 0.2 s here with five).
            wanted = 5 if time.perf_counter() - start < 0.005 else 3
            times = []
            started = time.perf_counter()
            while len(times) < wanted and (time.perf_counter() - started < 0.5 or not times):
                start = time.perf_counter()
                np.matmul(a, b, out=c)
                times.append(time.perf_counter() - start)
        seconds = float(np.median(times))
        if best is None or seconds < best[0]:
            best = (seconds, threads, len(times))
    seconds, threads, samples = best
    return Timing(f"reference (numpy {a.dtype.name})", "numpy", seconds,
                  f"wall clock, median of {samples} calls after a warm-up, into one C, "
                  f"{threads} BLAS thread{'s' if threads != 1 else ''} (the faster of "
                  f"{most} and 1)", samples, flops)
