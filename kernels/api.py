"""The engine's public face: what the app (and any other front end) may use.

Everything a front end needs to build a request, check it, run it or sweep
it, and show the result is here; the modules behind it are free to change.
``kernels/__init__`` re-exports this module, and a test keeps ``app/`` from
importing anything else of ``kernels``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from .analyses.diagnoses import Diagnosis
from .analyses.findings import Finding, line_findings, store_lines
from .analyses.occupancy import ASSUMED_REGISTERS, GPU_MODELS, check_gpu_model
from .command import command_line
from .errors import (
    ArgumentsNeeded,
    BackendUnavailable,
    KernelCompileError,
    KernelRuntimeError,
    KernelSourceError,
    RequestError,
    RunCancelled,
    RunTimedOut,
    ThreadMapError,
    UnsupportedConstruct,
)
from .estimate import KERNEL_FILE_TIME_LIMIT, SLOW_SIMULATOR_SECONDS, describe_seconds
from .live import ThreadMapResult, threadmap
from .outputs import OutputError, OutputFolder, write_atomically
from .presets import FILE_LAUNCH, GUESSED_LAUNCH, PRESETS, default_launch
from .glossary import GLOSSARY
from .glossary import explain as explain_terms
from .tour import TourStep, seed_tour
from .records import OOB_MARGIN, margin_at, margin_frame
from .request import (
    BACKENDS,
    DTYPES,
    MAX_DIMENSION,
    PATTERNS,
    RunRequest,
    check_launch,
    check_request,
    format_bytes,
    parse_dims,
)
from .result import (
    BACKEND_LABELS,
    BACKEND_SHORT,
    KERNEL_OUTPUT_LINES,
    Confirmation,
    KernelSnapshot,
    RunResult,
    format_seconds,
    load_balance,
)
from .search import HuntReport, hunt
from .sources.arguments import (
    describe_request,
    drawn_shape,
    split_argument_text,
    wrapped_shape,
)
from .sources.catalogue import CATALOGUE
from .sources.source import format_dims, kernel_names
from .stow import Stowage, bytes_in_memory
from .sweep import (
    SweepCell,
    dims_heading,
    dims_order,
    parse_list,
    sweep_defaults,
    sweep_requests,
    write_sweep,
)
from .thumbnail import ATOMIC_COLOUR, MANY_COLOURS, MISSING_COLOUR, ONCE_COLOUR, REPEAT_COLOUR
from .thumbnail import png as encode_png
from .watch import FileWatcher
from .words import counted, percent

#: the write-count colours: never written, once, more than once (low, middle, high)
COUNT_COLOURS = (MISSING_COLOUR, ONCE_COLOUR, MANY_COLOURS)

__version__ = "0.1.0"

#: GPU model names, in the order the tables show them.
GPU_MODEL_NAMES = tuple(GPU_MODELS)


def gpu_model_source(name: str) -> str:
    """Where a GPU model's figures come from (for a tooltip)."""
    return GPU_MODELS[name].source


def run(request: RunRequest, progress=None, cancel=None, **options) -> RunResult:
    """Run a request; see :func:`kernels.engine.run` for ``options``."""
    from .engine import run as engine_run

    return engine_run(request, progress, cancel, **options)


def run_sweep(base: RunRequest, grids: Sequence, blocks: Sequence,
              progress=None, cancel=None, run_one: Callable | None = None):
    """Yield a :class:`SweepCell` per configuration (see kernels.sweep):
    ``grids`` and ``blocks`` as numbers (1-D) or tuples (``(2, 2)``)."""
    from .sweep import run_sweep as engine_sweep

    return engine_sweep(base, tuple(grids), tuple(blocks), progress, cancel, run_one)


def with_occupancy(result: RunResult, assumed_registers: int = ASSUMED_REGISTERS) -> RunResult:
    """``result`` with its kernel's resources and its launch's occupancy on
    every GPU model: ptxas's register count (kept on disk, ~1 s per
    architecture the first time), so call it where a run happens (a worker
    thread), never on the GUI thread."""
    from .analyses.occupancy import resources_for_every_gpu
    from .sources.loader import load_plan

    resources = result.kernel_resources or resources_for_every_gpu(
        load_plan(result.request), result.request.element_types)
    return reassume_registers(dataclasses.replace(result, kernel_resources=resources),
                              assumed_registers)


def occupancy_on(result: RunResult, gpu_model: str, assumed_registers: int | None = None) -> dict:
    """The occupancy figures of ``result``'s launch on one GPU model (its
    registers measured by ptxas where it can, for that model only: what a
    command line's run reports), with where the model's figures come from."""
    from .engine import occupancy_on as engine_occupancy

    return engine_occupancy(result, gpu_model, assumed_registers)


def reassume_registers(result: RunResult, assumed_registers: int) -> RunResult:
    """``result`` with its occupancy worked out again for another assumed
    register count (where none was measured): arithmetic on what the result
    carries, cheap enough for the GUI thread.  The result itself when it
    already uses that count, or carries no resources to work from."""
    from .analyses.occupancy import occupancy_from

    if result.assumed_registers == assumed_registers or not result.kernel_resources:
        return result
    request = result.request
    table = {name: occupancy_from(resources, name, request.blocks, request.threads_per_block,
                                  assumed_registers)
             for name, resources in result.kernel_resources.items()}
    return dataclasses.replace(result, occupancy=table, assumed_registers=assumed_registers)


def check_estimate(request: RunRequest, configurations: list[RunRequest] | None = None) -> None:
    """Refuse (ThreadMapError, with the estimate and a smaller launch to try) a
    run, or a sweep of ``configurations``, estimated at over a minute."""
    from .engine import check_estimate as engine_check

    engine_check(request, configurations)


def resolve_backend(request: RunRequest, gpu_follows: bool = False) -> tuple[str, str]:
    """Check ``request`` as a run would (raises ThreadMapError with the
    user's message); the backend it would run on, and why, in words
    (``gpu_follows``: as :func:`run`'s)."""
    from .engine import prepare

    resolved, _, why = prepare(request, gpu_follows)
    return resolved.backend, why


def compile_files_in_children(start_typist: bool = True) -> None:
    """Have numba type, and compile to PTX, every kernel read from a file in
    a sandboxed child, bounded in time and memory (see
    :func:`kernels.engine.compile_files_in_children`): for a front end that
    opens untrusted files.  ``start_typist`` False: its child starts at
    :func:`start_typist`, or when first needed."""
    from .engine import compile_files_in_children as engine_compile_files

    engine_compile_files(start_typist=start_typist)


def start_typist() -> None:
    """Start the child that types kernel files now, if it is not up (numba's
    import there, 0.5 s of a core: the app starts it once its window is up)."""
    from .backends.child import warm_typist

    warm_typist()


def confirm(result: RunResult, progress=None, cancel=None, **options) -> RunResult:
    """``result`` with the run that its ``follows`` names (the GPU's, after a
    first answer from the CPU emulation) added: its times, its own verdict,
    and where it disagrees (kernels.engine.confirm)."""
    from .engine import confirm as engine_confirm

    return engine_confirm(result, progress, cancel, **options)


def simulator_estimate(request: RunRequest) -> tuple[float, bool]:
    """Seconds a simulator run of ``request`` would take at least, and
    whether its kernel has barriers (each makes a block's threads wait)."""
    from .estimate import simulator_seconds
    from .sources.loader import load_plan

    try:
        plan = load_plan(request)
    except ThreadMapError:
        plan = None
    return simulator_seconds(request, plan), bool(plan is not None and plan.barrier_lines)


def file_launch_dims(request: RunRequest) -> int:
    """How many launch dimensions the request's kernel uses (1 or 2)."""
    from .sources.loader import load_plan

    return load_plan(request).launch_dims


def gpu_available() -> bool:
    from .backends.device import gpu_available as available

    return available()


def gpu_status() -> str:
    from .backends.device import gpu_status as status

    return status()


def diff_runs(first: RunResult, second: RunResult):
    """What changed between two runs of one shape (see kernels.analyses.diff)."""
    from .analyses.diff import diff_runs as engine_diff

    return engine_diff(first, second)


def parse_scalars(items: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """``["n=16", "alpha=0.5"]`` as (name, value) pairs; refuses bad ones."""
    from .request import parse_scalars as parse

    return parse(items)


def stop_child_processes() -> None:
    """End every child process now (a simulator or a kernel file's run, a
    built-in kernel compiling ahead)."""
    from .backends import precompile
    from .backends.child import stop_all

    stop_all()
    precompile.stop_all()


def compile_ahead(result: RunResult) -> bool:
    """After an instant-tier result of a built-in kernel, compile its compiled
    tier in a process of its own, so that the next, larger run finds it ready
    (kernel files are compiled ahead by their own child); whether one started."""
    from .engine import compiling_ahead

    if result.tier != "instant" or not compiling_ahead():
        return False
    from .backends.precompile import compile_ahead as start

    return start(result.request)


def bank_conflict_model() -> dict:
    """The shared-memory bank model the figures use, and its source."""
    from .analyses.bank_conflicts import MODEL

    return MODEL


def diff_category_names() -> dict:
    """Names of the categories of :func:`diff_runs`' per-element map."""
    from .analyses.diff import CATEGORY_NAMES

    return CATEGORY_NAMES




__all__ = [
    "compile_files_in_children", "start_typist",
    "ArgumentsNeeded", "ASSUMED_REGISTERS", "BACKEND_LABELS", "BACKEND_SHORT", "BACKENDS", "BackendUnavailable",
    "bank_conflict_model", "bytes_in_memory", "CATALOGUE", "check_estimate", "check_gpu_model",
    "check_launch", "check_request", "command_line",
    "ATOMIC_COLOUR", "FILE_LAUNCH", "GUESSED_LAUNCH", "COUNT_COLOURS", "REPEAT_COLOUR", "counted", "default_launch", "describe_request", "describe_seconds", "diff_category_names",
    "Diagnosis", "diff_runs", "dims_heading", "dims_order", "DTYPES", "encode_png", "file_launch_dims", "Finding", "format_bytes",
    "format_dims", "format_seconds", "gpu_available", "GPU_MODEL_NAMES", "gpu_model_source",
    "gpu_status", "hunt", "HuntReport", "KERNEL_FILE_TIME_LIMIT", "kernel_names",
    "KERNEL_OUTPUT_LINES", "KernelCompileError", "KernelRuntimeError", "KernelSnapshot",
    "KernelSourceError", "line_findings", "load_balance", "margin_at", "margin_frame", "MAX_DIMENSION",
    "OOB_MARGIN", "OutputError",
    "occupancy_on", "OutputFolder", "parse_dims", "parse_list", "parse_scalars", "PATTERNS", "percent",
    "PRESETS", "reassume_registers", "RequestError", "resolve_backend", "run", "run_sweep",
    "RunCancelled", "RunRequest", "RunResult", "RunTimedOut", "simulator_estimate", "FileWatcher",
    "compile_ahead", "confirm", "Confirmation", "seed_tour", "TourStep", "GLOSSARY",
    "explain_terms",
    "SLOW_SIMULATOR_SECONDS", "stop_child_processes", "store_lines", "Stowage",
    "split_argument_text", "sweep_defaults", "sweep_requests", "SweepCell", "threadmap", "ThreadMapError", "ThreadMapResult",
    "UnsupportedConstruct", "with_occupancy", "wrapped_shape", "drawn_shape", "write_atomically", "write_sweep", "__version__",
]
