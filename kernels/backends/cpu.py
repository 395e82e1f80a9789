"""The CPU emulation: every block of the grid, its threads in lockstep.

Each block runs in a compiled function derived from the kernel (see
``lockstep.py``); blocks run one after another, in order of block id.  When
the warps of a block are independent (no barrier, no shared array), the unit
of work is a warp instead: each warp runs through the kernel on its own.  To
use several cores without changing the result, the units are split into
contiguous ranges, one per worker; each worker keeps private per-element maps
and a private C, merged afterwards (counts added, min / max taken, and each
element of C taken from the last range that wrote it), which gives exactly the
sequential result.  Kernels that read their output or store into an input run
on one worker, since there a unit may see another range's writes.

Each worker runs its range in chunks of ~50 ms, so progress is reported and a
cancel is honoured between chunks; within a long block the compiled code
polls a control word, so a cancel also stops a single long block.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import GENERATED_PREFIX, cache_dir
from ..derived.codegen import (
    GeneratedModule,
    damaged_cache,
    load_module,
    module_text,
    purge_compiled,
)
from ..derived.local_types import kernel_types
from ..derived.lockstep import ROUNDS, lockstep_code
from ..derived.lowering import LockstepLayout, lower
from ..derived.native import NativeDrivers, keep_native, native_path, replace_native
from ..derived.shadow import GLOBAL_SHADOW_COLUMNS, shadow_columns
from ..derived.transform import global_ranges_param, global_shadow_param, shadow_param
from ..errors import KernelCompileError, KernelRuntimeError, RunCancelled, ThreadMapError
from ..records import (
    ATOMICS,
    COUNT,
    LOCKSTEP_SHARED,
    MARGIN,
    OOB,
    PRIVATE_RECORDS,
    RACE_CHECK_ELEMENTS,
    READS,
    SHARED_RECORDS,
    allocate_global_ranges,
    allocate_lockstep_records,
    allocate_records,
    decode_writers,
    merge_lockstep_records,
    merge_oob_index,
    raced_in_global_memory,
    reads_flat_param,
    record_names,
)
from ..inputs import poison_value
from ..machine import emulation_cores
from ..request import RunRequest, available_memory
from ..result import Timing
from ..sources.loader import scalar_arguments
from ..sources.plan import KernelPlan
from .common import (
    TIMING,
    BackendOutput,
    KernelJob,
    median_time,
    scalar_types,
    shorten_numba_error,
)
from .kernel_output import KernelPrints, kernel_prints, kernel_warnings
from .phases import compiling

CHUNK_SECONDS = 0.05
#: Why C comes from the instrumented run of a kernel with a shared-memory race.
RACED_NOTE = ("C shown is the instrumented run's: the run found a race, so C "
              "depends on the order the threads run in, and that run's order is the one the "
              "maps describe")
WARP = 32


def worker_count(job: KernelJob, units: int) -> int:
    """How many cores the emulation of ``job`` uses (at most one per unit of
    work: a block, or a warp when warps are independent)."""
    plan = job.plan
    if plan.reads_output or set(plan.stored_arrays) - {plan.output}:
        return 1
    env = os.environ.get("THREADMAP_EMULATION_WORKERS")
    if env:
        cores = max(1, int(env))
    else:
        cores = emulation_cores()
    cores = min(cores, units)
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


def load_emulation(job: KernelJob) -> GeneratedModule:
    """The compiled-on-first-call emulation of ``job``'s kernel."""
    types = kernel_types(job.plan, job.request.element_types, job.scalar_types)
    return load_module(job.plan, "cpu", job.request.element_types, types)


def check_emulation(plan: KernelPlan, request: RunRequest) -> None:
    """Raise :class:`EmulationUnsupported` (with the line) if the lockstep
    emulation cannot run ``plan`` for ``request``: a local whose type it cannot
    hold per thread, a construct it cannot place.  Costs a typing pass and the
    writing of the code (tens of ms), not a compile."""
    key = (plan.module.path, plan.module.text, plan.name, request.element_types,
           scalar_types(scalar_arguments(plan, request)))
    if key not in _CHECKED:
        types = kernel_types(plan, request.element_types, key[-1])
        lockstep_code(lower(plan, types), "record")
        _CHECKED.add(key)


#: Kernels (by source text, dtype and scalar types) the emulation can run.
_CHECKED: set[tuple] = set()
#: Kernels whose compiled tier this process has compiled (or loaded).
_COMPILED: set[tuple] = set()


def _kernel_key(plan: KernelPlan, request: RunRequest) -> tuple:
    return (plan.module.path, plan.module.text, plan.name, request.element_types,
            scalar_types(scalar_arguments(plan, request)), str(cache_dir()))


def compiled_ready(plan: KernelPlan, request: RunRequest) -> bool:
    """Whether the compiled tier of ``plan`` runs without a compile: compiled
    in this process, or in numba's cache on disk (its index file beside the
    generated module, or under $NUMBA_CACHE_DIR)."""
    key = _kernel_key(plan, request)
    if key in _COMPILED:
        return True
    try:
        types = kernel_types(plan, request.element_types, key[4])
        text, _ = module_text(plan, "cpu", request.element_types, types)
    except ThreadMapError:
        return False
    digest = hashlib.sha256(text.text.encode()).hexdigest()[:20]
    name = f"{GENERATED_PREFIX}cpu_{digest}"
    pattern = f"{name}._tm_run_record*.nbi"
    places = [cache_dir() / "__pycache__"]
    if numba_cache_dir():
        places.append(Path(numba_cache_dir()))
    for place in places:
        if place.is_dir() and any(place.rglob(pattern)):
            return True
    return False


def numba_cache_dir() -> str:
    """Where numba of this process keeps its cache when not beside the module:
    $NUMBA_CACHE_DIR as numba read it at import (a later change of the
    variable does not move it), or "" for beside the module."""
    import sys

    if "numba" in sys.modules:
        from numba.core import config

        return config.CACHE_DIR or ""
    return os.environ.get("NUMBA_CACHE_DIR", "")


def compile_emulation(job: KernelJob) -> float:
    """Compile (or load from numba's cache) the compiled tier of ``job``'s
    kernel, on a launch of one thread (the code depends on the types only);
    the seconds it took."""
    request = job.request.with_(m=1, k=1, n=1, grid=(1,), block=(1,))
    tiny = KernelJob(request, job.plan,
                     tuple(np.zeros((1,) * x.ndim, x.dtype) for x in job.inputs),
                     job.scalars, job.zero_output)
    with compiling():
        gen = load_emulation(tiny)
    control = np.zeros(2, np.int64)
    records = tiny.fresh_records(encoded=True)
    workers = {"record": _make_worker(gen, tiny, control, True, records,
                                      _lockstep_records(gen.layout, tiny)),
               "plain": _make_worker(gen, tiny, control, False, None, None)}
    with kernel_prints(None):
        return _compile(gen, tiny, workers)


@dataclass
class _Worker:
    """One worker's arrays: its arguments by name, and what it records privately."""

    arguments: dict[str, object]
    c: np.ndarray

    def ordered(self, names: tuple[str, ...]) -> list:
        return [self.arguments[name] for name in names]


def _workspace(layout: LockstepLayout, job: KernelJob, control: np.ndarray,
               record: bool) -> dict[str, object]:
    """A worker's masks, counters, lane variables and block arrays."""
    tpb = job.request.threads_per_block
    bdx = job.request.block2[0]
    lanes = np.arange(tpb, dtype=np.int64)
    space: dict[str, object] = {
        "_tm_M": np.zeros((layout.depth, tpb), np.bool_),
        "_tm_C": np.zeros((layout.depth, tpb), np.bool_),
        "_tm_L": np.zeros((max(layout.loops, 1), tpb), np.bool_),
        "_tm_I": np.zeros((max(3 * layout.loops, 1), tpb), np.int64),
        "_tm_LX": lanes % bdx,
        "_tm_LY": lanes // bdx,
        "_tm_ctl": control,
        "_tm_RB": np.full((max(layout.round_sites, 1), ROUNDS, 32), -1, np.int64),
        "_tm_H": np.zeros((2, ROUNDS + 1), np.int64),
        "_tm_ws": np.zeros(tpb, np.int64),
    }
    for dtype, rows in layout.rows:
        space[f"_tm_V_{dtype}"] = np.zeros((rows, tpb), dtype)
    for array in layout.block_arrays:
        shape = array.shape if array.kind == "shared" else (tpb,) + array.shape
        values = np.zeros(shape, array.dtype)
        space[array.param] = values
        space[array.flat_param] = values.reshape(-1)
        if record and array.kind == "shared":
            space[shadow_param(array.name)] = np.full(
                (values.size, shadow_columns(layout.warp_sync)), -1, np.int64)
    return space


def _compile(gen: GeneratedModule, job: KernelJob, workers: dict[str, _Worker]) -> float:
    """Compile both drivers by running them on zero blocks; return the seconds.
    A time limit does not count them (``phases.compiling``)."""
    with compiling():
        return _compile_now(gen, job, workers)


def _compile_now(gen: GeneratedModule, job: KernelJob, workers: dict[str, _Worker]) -> float:
    start = time.perf_counter()
    try:
        try:
            for mode, worker in workers.items():
                gen.function(f"_tm_run_{mode}")(*_call_args(worker, gen.layout, job, mode,
                                                           0, 0, 0))
        except Exception as exc:
            if not damaged_cache(exc):
                raise
            # numba's files for this module are unreadable (a disk fault, an
            # interrupted write): removed, and compiled afresh.
            purge_compiled(gen)
            for mode, worker in workers.items():
                gen.function(f"_tm_run_{mode}")(*_call_args(worker, gen.layout, job, mode,
                                                           0, 0, 0))
    except Exception as exc:  # numba raises many kinds; all mean "does not compile"
        if type(exc).__module__.startswith("numba"):
            raise KernelCompileError(
                f"numba could not compile {job.plan.name!r} for the CPU emulation:\n"
                + shorten_numba_error(str(exc), gen.relocate)) from None
        raise
    _COMPILED.add(_kernel_key(job.plan, job.request))
    seconds = time.perf_counter() - start
    _keep_native(gen, lambda function, mode: function(
        *_call_args(workers[mode], gen.layout, job, mode, 0, 0, 0)))
    return seconds


#: Generated modules whose native drivers this process has made or found.
_NATIVE_TRIED: set[Path] = set()


def _keep_native(gen: GeneratedModule, call_on_no_blocks) -> None:
    """Keep the drivers numba has just compiled (or loaded) as native code
    beside its files, once: later runs of the module need no numba
    (derived/native.py; ~0.3 s, once per module).  Native drivers that
    declined this run's arguments are replaced by numba's code for them: a
    file made for other types (the read counts were int64 before) would
    otherwise send every later run through numba, 0.24 s each.
    ``call_on_no_blocks(driver, mode)`` calls a driver as the compile did."""
    if gen.path in _NATIVE_TRIED:
        return
    module = gen.module
    if isinstance(module, NativeDrivers):
        if not module.declined:
            return
        _NATIVE_TRIED.add(gen.path)
        numba_module = module.through_numba()
        for mode in ("record", "plain"):  # (each compiled for these arguments, by numba:
            call_on_no_blocks(getattr(numba_module, f"_tm_run_{mode}"), mode)  # its cache)
        replace_native(native_path(gen.path), {name: getattr(numba_module, name)
                                               for name in _DRIVERS})
        return
    _NATIVE_TRIED.add(gen.path)  # (once a process: a module it cannot hold is not tried again)
    keep_native(native_path(gen.path), {name: gen.function(name) for name in _DRIVERS})


_DRIVERS = ("_tm_run_record", "_tm_run_plain")


def _lockstep_records(layout: LockstepLayout, job: KernelJob,
                      shared: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """A worker's lockstep records; ``shared``: the first worker's records
    that every worker shares (per warp, and the global arrays' shadows)."""
    warps = job.request.blocks * (-(-job.request.threads_per_block // WARP))
    fresh = allocate_lockstep_records(len(layout.sites), len(layout.branches),
                                      len(layout.barriers), warps if shared is None else 0)
    sizes = job.array_elements()
    columns = GLOBAL_SHADOW_COLUMNS
    for name in layout.race_arrays:
        checked = sizes[name] if sizes[name] <= RACE_CHECK_ELEMENTS else 0
        fresh[global_ranges_param(name)] = allocate_global_ranges(checked)
        if shared is None:
            fresh[global_shadow_param(name)] = np.full((max(checked, 1), columns), -1, np.int64)
    if shared is not None:
        fresh.update(shared)
    return fresh


def shared_lockstep_records(layout: LockstepLayout,
                            lockstep: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What every worker shares of the first worker's lockstep records: the
    per-warp records (a warp is one worker's) and the global arrays' shadows
    (a block is one worker's, and a shadow entry names its block)."""
    names = list(LOCKSTEP_SHARED) + [global_shadow_param(a) for a in layout.race_arrays]
    return {name: lockstep[name] for name in names}


def _make_worker(gen: GeneratedModule, job: KernelJob, control: np.ndarray, record: bool,
                 records: list[np.ndarray] | None, lockstep: dict[str, np.ndarray] | None,
                 c: np.ndarray | None = None) -> _Worker:
    c = job.fresh_output() if c is None else c
    arguments = dict(zip(job.plan.kernel.params, job.arguments(c)))
    if record:
        inputs = len(job.plan.inputs)
        names = record_names(inputs, len(job.written_shapes()))
        arguments.update(zip(names, records, strict=True))
        for i in range(inputs):
            arguments[reads_flat_param(i)] = records[READS + i].reshape(-1)
        arguments.update(lockstep)
    arguments.update(_workspace(gen.layout, job, control, record))
    return _Worker(arguments, c)


def _call_args(worker: _Worker, layout: LockstepLayout, job: KernelJob, mode: str,
               b0: int, b1: int, epoch: int) -> list:
    names = layout.driver_params(job.plan, mode)[:-7]
    gdx, gdy = job.request.grid2
    bdx, bdy = job.request.block2
    return worker.ordered(names) + [gdx, gdy, bdx, bdy, b0, b1, epoch]


def _run_ranges(function, workers: list[_Worker], ranges: list[tuple[int, int]],
                job: KernelJob, layout: LockstepLayout, mode: str, control: np.ndarray,
                lo: float, hi: float, phase: str) -> float:
    """Run each worker's range of units (blocks or warps) in adaptive chunks, in parallel;
    report progress and honour cancel from this thread; return the wall time."""
    total = sum(stop - start for start, stop in ranges)
    noun = "warps" if layout.warpwise else "blocks"
    done = [0] * len(ranges)
    failures: list[BaseException] = []
    halt = threading.Event()

    def work(w: int) -> None:
        start, stop = ranges[w]
        # Start with one unit (one block of a buggy kernel can be long), then
        # grow the chunk while it stays under CHUNK_SECONDS.
        current, chunk, epoch = start, 1, 0
        try:
            while current < stop and not halt.is_set():
                end = min(stop, current + chunk)
                began = time.perf_counter()
                epoch = function(*_call_args(workers[w], layout, job, mode, current, end, epoch))
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
    try:
        while True:
            alive = [thread for thread in threads if thread.is_alive()]
            if not alive:
                break
            alive[0].join(0.05)
            if job.cancel():
                halt.set()
                control[0] = 1  # stops a long block from inside the compiled code
                for thread in threads:
                    thread.join()
                raise RunCancelled("run cancelled")
            job.progress(lo + (hi - lo) * sum(done) / max(total, 1),
                         f"{phase}: {sum(done):,} of {total:,} {noun}")
    finally:
        control[0] = 0
    elapsed = time.perf_counter() - began
    if failures:
        exc = failures[0]
        if isinstance(exc, (ZeroDivisionError, IndexError, ValueError)):
            raise KernelRuntimeError(f"{job.plan.name!r} raised in the emulation: {exc}") from None
        raise exc
    job.progress(hi, f"{phase}: {total:,} {noun} done")
    return elapsed


def _spare_output(job: KernelJob) -> np.ndarray:
    """A second worker's C: only the elements its threads store are taken
    from it, so it is zeroed (untouched until stored), not NaN-filled."""
    if job.initial_output is not None:  # (an in-place kernel reads its own elements)
        return job.fresh_output()
    m, _, n = job.request.shape
    return np.zeros((m, n), job.request.dtype)


_FOLDS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def _merge(records: list[np.ndarray], private: list[list[np.ndarray]]) -> None:
    """Fold each extra worker's private recording arrays into ``records``
    (the writer maps still encoded: a running maximum each)."""
    for copy in private:
        merge_oob_index(records, copy)  # (before the lowest threads are merged)
        folds = [(_FOLDS[how], records[index], copy[index])
                 for index, how in PRIVATE_RECORDS.items() if how in _FOLDS]
        # (the read counts: a kernel that writes arrays besides its output
        # runs on one worker, so no other written array's maps are merged)
        folds += [(np.add, records[index], copy[index]) for index in range(READS, len(records))]
        _fold_in_parallel(folds, threads=len(private) + 1)  # (as many as ran the kernel)


#: Elements of one piece of a fold done on a thread of its own.
_FOLD_PIECE = 1 << 22


def _fold_in_parallel(folds: list[tuple[np.ufunc, np.ndarray, np.ndarray]],
                      threads: int) -> None:
    """``ufunc(into, other, out=into)`` for each fold, large ones in pieces
    spread over ``threads`` (numpy's loops release the GIL): a 4096 x 4096
    run's maps are ~200 MB to fold, 0.2 s on one core."""
    pieces, small = [], []
    for ufunc, into, other in folds:
        if into.size < 2 * _FOLD_PIECE or not (into.flags.c_contiguous
                                                and other.flags.c_contiguous):
            small.append((ufunc, into, other))
            continue
        flat_into, flat_other = into.reshape(-1), other.reshape(-1)  # (views: contiguous)
        pieces += [(ufunc, flat_into[start:start + _FOLD_PIECE],
                    flat_other[start:start + _FOLD_PIECE])
                   for start in range(0, into.size, _FOLD_PIECE)]
    for ufunc, into, other in small:
        ufunc(into, other, out=into)
    if len(pieces) < 2 or threads < 2:
        for ufunc, into, other in pieces:
            ufunc(into, other, out=into)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for done in [pool.submit(ufunc, into, other, out=into)
                     for ufunc, into, other in pieces]:
            done.result()


def _written(records: list[np.ndarray]) -> np.ndarray:
    """Where a worker's range stored into C or updated it atomically.  (Not
    ``count + atomics > 0``: for 4096 x 4096 its int32 temporary is 64 MB of
    fresh memory, ~0.2 s to fault in.)"""
    stored = records[COUNT] > 0
    if records[ATOMICS].size == records[COUNT].size:
        stored |= records[ATOMICS] > 0
    return stored


def _take_later_writes(c: np.ndarray, private_c: list[np.ndarray],
                       written: list[np.ndarray]) -> None:
    """Sequential semantics: an element's final value is the last range's write."""
    for c_w, mask in zip(private_c, written):
        np.copyto(c, c_w, where=mask.reshape(c.shape))


def run_cpu(job: KernelJob, plain: bool = True) -> BackendOutput:
    """Run the recording emulation, then (if it found no out-of-bounds access,
    and ``plain``) the plain emulation, timed."""
    job.progress(0.0, "compiling the CPU emulation")
    arrays = _Prefaulted(job)
    with compiling():  # (importing numba and the generated module is part of it)
        gen = load_emulation(job)
    notes: list[str] = []
    with kernel_warnings(gen, notes):
        output = _run_emulation(job, gen, plain, arrays.take())
    output.notes = list(output.notes) + notes
    return output


class _Prefaulted:
    """The run's full-size arrays, allocated on a thread of their own while
    this one loads the emulation's module (mostly single-threaded imports).
    Fresh memory costs up to 2.5 ms per MB to fault in on this VM; only C is
    filled (with NaN) here.  The maps and a second worker's C start zeroed,
    untouched until the workers store there (``allocate_records``'s
    ``encoded``)."""

    def __init__(self, job: KernelJob):
        self.job = job
        self.records: list[np.ndarray] | None = None
        self.c: np.ndarray | None = None
        #: a second worker's private recording arrays and C (None with one worker)
        self.private: list[np.ndarray] | None = None
        self.c_private: np.ndarray | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._allocate, daemon=True)
        self._thread.start()

    def _allocate(self) -> None:
        job = self.job
        try:
            self.records = job.fresh_records(encoded=True)
            self.c = job.fresh_output()
            warps = job.request.blocks * (-(-job.request.threads_per_block // WARP))
            if worker_count(job, warps) > 1:
                output_shape, input_shapes = job.record_shapes()
                self.private = _private_copy(self.records, input_shapes, output_shape)
                self.c_private = _spare_output(job)
        except BaseException as exc:  # MemoryError: raised where the run waits for it
            self._failure = exc

    def take(self) -> "_Prefaulted":
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self


def _run_emulation(job: KernelJob, gen, plain: bool, arrays: _Prefaulted) -> BackendOutput:
    request = job.request
    layout = gen.layout
    control = np.zeros(2, np.int64)
    records = arrays.records
    lockstep = _lockstep_records(layout, job)
    workers = [_make_worker(gen, job, control, True, records, lockstep, c=arrays.c)]
    # The plain run writes over the recording run's C arrays (fresh memory
    # costs ~2.6 ms per MB to fault in: 64 MB per worker for 4096 x 4096).
    plain_workers = [_make_worker(gen, job, control, False, None, None, c=workers[0].c)]
    prints = KernelPrints()
    with kernel_prints(None):
        compile_seconds = _compile(gen, job, {"record": workers[0], "plain": plain_workers[0]})
    timings = [Timing("compile", "cpu", compile_seconds,
                      "first call of the emulation (numba compile, or load from its cache)")]
    units = layout.units(request.blocks, request.threads_per_block)
    n_workers = worker_count(job, units)
    ranges = _ranges(units, n_workers)
    method = ("wall clock of the compiled lockstep loop over all "
              + ("warps" if layout.warpwise else "blocks")
              + (f", {n_workers} cores" if n_workers > 1 else ", 1 core"))

    shared = shared_lockstep_records(layout, lockstep)
    output_shape, input_shapes = job.record_shapes()
    private, private_lockstep = [], []
    ready = [(arrays.private, arrays.c_private)] if arrays.private is not None else []
    arrays.private = arrays.c_private = None
    # (a kernel that stores into arrays besides its output runs on one worker,
    # worker_count: the private copies and _merge know the output's maps only)
    assert len(ranges) == 1 or not job.written_shapes(), "written arrays on several workers"
    for _ in ranges[1:]:
        copy, c = ready.pop() if ready else (
            _private_copy(records, input_shapes, output_shape), _spare_output(job))
        mine = _lockstep_records(layout, job, shared)
        private.append(copy)
        private_lockstep.append(mine)
        workers.append(_make_worker(gen, job, control, True, copy, mine, c=c))
    del ready
    with kernel_prints(prints):
        spent = _run_ranges(gen.function("_tm_run_record"), workers, ranges, job, layout,
                            "record", control, 0.02, 0.5, "instrumented emulation")
    c_record = workers[0].c
    written = [_written(copy) for copy in private]
    _take_later_writes(c_record, [w.c for w in workers[1:]], written)
    _merge(records, private)
    decode_writers(records, len(job.plan.inputs), len(job.written_shapes()))
    merge_lockstep_records(lockstep, private_lockstep)
    spare_outputs = [w.c for w in workers[1:]]
    del private, workers
    timings.append(Timing("instrumented kernel", "cpu", spent, method, 1, job.flops))

    oob = int(records[OOB].sum())
    if not plain:
        return BackendOutput(c_record, records, None, timings, lockstep=lockstep, layout=layout,
                             prints=prints)
    if oob:
        return BackendOutput(c_record, records, None, timings, [
            f"the plain kernel was not launched: the instrumented run found {oob:,} "
            "out-of-bounds accesses (C shown is the instrumented run's, with those "
            "reads as 0 and those writes skipped)"], lockstep=lockstep, layout=layout,
            prints=prints)

    raced = int(lockstep["_tm_race"][0]) or raced_in_global_memory(
        lockstep, layout.race_arrays, max(len(layout.sites), 1) * request.threads_per_block)
    # With a shared-memory race, C depends on the order the threads run in;
    # the plain run orders them otherwise (thread by thread between barriers),
    # so C is taken from the instrumented run, whose order the maps describe
    # (and which the instant tier runs too: tests/test_tiers.py).
    c_raced = c_record.copy() if raced else None
    plain = gen.function("_tm_run_plain")
    phases = iter([(0.5, 0.85)] + [(0.85 + 0.1 * i / request.repeats,
                                    0.85 + 0.1 * (i + 1) / request.repeats)
                                   for i in range(request.repeats)])
    # (From here on c_record, worker 0's C, is the plain run's.)
    workers = plain_workers + [_make_worker(gen, job, control, False, None, None, c=c)
                               for c in spare_outputs]

    def timed_plain_run() -> float:
        # Only worker 0's C shows unwritten elements; the others' give only
        # the elements their threads wrote (``written``).
        if job.initial_output is not None:  # (an in-place kernel's starting values)
            for worker in workers:
                worker.c[...] = job.initial_output.reshape(worker.c.shape)
        else:
            workers[0].c.fill(0 if job.zero_output else poison_value(workers[0].c.dtype))
            for worker in workers[1:]:
                if job.zero_output:
                    worker.c.fill(0)
        lo, hi = next(phases)
        with kernel_prints(None), TIMING:
            seconds = _run_ranges(plain, workers, ranges, job, layout, "plain", control, lo, hi,
                                  "plain emulation")
        return seconds

    first = timed_plain_run()
    seconds, samples = first, 1
    if first < 0.2 and request.repeats > 1:
        # Short runs are repeated, the first counting as one of them: the
        # recording run just before warmed the caches and the code (measured
        # over a sweep of 64 configurations: the first run took 16.7 ms on
        # average, the median of three more 16.6 ms, and the first was the
        # slower in 33 of 64).  Three runs at least, more only within
        # 0.15 s: a run of 0.1-0.2 s (4096 x 4096 at K = 16) is timed 3 times,
        # not 5, as is a 4096 x 4096 transpose's of ~50 ms; two more had cost
        # a 3.3 s command 0.35 s (median of 5: 172 ms; of 3: 172 ms), and the
        # transpose's 0.12 s of a 2.9 s command (medians of 5 in two commands: 44 and
        # 52 ms; of 3: 50, 55, 60 and 61 ms: the spread is between commands).
        seconds, samples = median_time(timed_plain_run, request.repeats, budget=0.15,
                                       earlier=(first,), least=3)
    # Every run stored the same C (the emulation runs the threads in one
    # order, each worker its own range): the last run's is the output, worker
    # 0's C with the elements the other workers' threads stored.  (The first
    # run's, kept apart while the others ran, cost a 64 MB buffer for a
    # 4096 x 4096 C, slow to fault in on a VM, and its copy.)
    _take_later_writes(workers[0].c, [w.c for w in workers[1:]], written)
    output = workers[0].c
    timings.append(Timing("kernel", "cpu", seconds,
                          method + (f", median of {samples} runs" if samples > 1 else ""),
                          samples, job.flops))
    if c_raced is not None:
        return BackendOutput(c_raced, records, None, timings, [RACED_NOTE], lockstep=lockstep,
                             layout=layout, prints=prints)
    return BackendOutput(output, records, output, timings, lockstep=lockstep,
                         layout=layout, prints=prints)


def _private_copy(records: list[np.ndarray], input_shapes, output_shape) -> list[np.ndarray]:
    """A worker's recording arrays: fresh private per-element arrays, shared
    per-thread ones (each thread belongs to exactly one worker)."""
    fresh = allocate_records(output_shape, input_shapes, records[OOB].shape[0], 0,
                             writers=records[2].dtype,
                             atomics=records[ATOMICS].size == records[COUNT].size, encoded=True)
    fresh[MARGIN] = np.zeros_like(records[MARGIN])  # (its shape is C's, output_shape may be flat)
    return [records[i] if i in SHARED_RECORDS else fresh[i] for i in range(len(records))]
