"""Run one kernel across many launch configurations (grid x block, each of one
or two dimensions: ``1,2,4`` x ``32,64``, or ``1x1,2x2`` x ``8x8,16x16``).

Qt-free: the GUI's sweep tab and ``threadmap sweep`` both use it.  Results
come one configuration at a time (a generator), so callers can show progress
and stop between configurations; a configuration that fails is reported and
the sweep goes on.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import queue
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import RunCancelled, ThreadMapError
from .maps_file import save_maps
from .outputs import interrupts_deferred, sync_folder, write_atomically
from .request import RunRequest, check_request
from .result import RunResult
from .sources.source import format_dims


Dims = tuple[int, ...]


def dims_order(values) -> list[Dims]:
    """The distinct dims in the order a sweep's matrix shows them: by their
    product, then as written (4 before 2x2 before 4x1)."""
    return sorted(set(values), key=lambda d: (int(np.prod(d)), len(d), d))


def dims_heading(dims: Dims, noun: str) -> str:
    """A row's or column's heading: ``"1 block"``, ``"4 blocks"``, ``"2x2 blocks"``."""
    count = int(np.prod(dims))
    return f"{format_dims(dims)} {noun}{'' if count == 1 and len(dims) == 1 else 's'}"


@dataclass(frozen=True, eq=False)
class SweepCell:
    """One configuration of a sweep (its grid and block, of 1 or 2
    dimensions) and what it gave."""

    grid: Dims
    block: Dims
    request: RunRequest
    result: RunResult | None
    error: str | None = None

    @property
    def blocks(self) -> int:
        """Blocks in the grid."""
        return int(np.prod(self.grid))

    @property
    def threads(self) -> int:
        """Threads per block."""
        return int(np.prod(self.block))

    @property
    def total_threads(self) -> int:
        return self.blocks * self.threads

    @property
    def label(self) -> str:
        """``"4 x 256"`` or ``"2x2 x 16x16"``: grid, then block."""
        return f"{format_dims(self.grid)} x {format_dims(self.block)}"

    @property
    def stem(self) -> str:
        """Its files' name: ``grid4_block256``, ``grid2x2_block16x16``."""
        return f"grid{format_dims(self.grid)}_block{format_dims(self.block)}"

    def row(self) -> dict:
        """A flat summary row (for summary.csv / summary.json)."""
        row = {"grid": format_dims(self.grid), "block": format_dims(self.block),
               "blocks": self.blocks, "threads_per_block": self.threads,
               "total_threads": self.total_threads}
        if self.result is None:
            row.update(verdict="ERROR", error=self.error)
            return row
        result = self.result
        kernel = result.shown_timing
        row.update(
            verdict=result.verdict.word, reasons="; ".join(result.verdict.reasons),
            unwritten=result.verdict.unwritten, collided=result.verdict.collided,
            out_of_bounds=result.verdict.out_of_bounds,
            rel_error=result.verdict.errors.rel_error if result.verdict.errors.computed
            else None,
            threads_without_output=result.maps.threads_without_output,
            idle_threads=result.maps.threads_without_output,  # (its earlier name)
            max_stores_per_thread=int(result.maps.stores_per_thread.max(initial=0)),
            backend=result.backend,
            kernel_seconds=kernel.seconds if kernel else None,
            kernel_time_what=kernel.what if kernel else None,
            kernel_time_is_gpu=kernel.is_gpu_time if kernel else None,
            gflops=kernel.gflops if kernel else None,
            barrier_divergence=result.verdict.barrier_divergence,
            shared_races=result.verdict.shared_races,
            uninitialised_shared_reads=result.verdict.uninitialised_shared_reads,
            warp_hazards=result.verdict.warp_hazards,
        )
        analysis = result.analysis
        if analysis is not None:
            row.update(
                max_bank_ways=max((c.max_ways for c in analysis.bank_conflicts), default=None),
                divergent_branch_runs=sum(d.divergent for d in analysis.divergence),
                min_coalescing_efficiency=min(
                    (c.efficiency for c in analysis.coalescing if c.requests), default=None))
        return row


def parse_list(text: str, what: str) -> tuple[Dims, ...]:
    """``"1,2,4"`` -> ``((1,), (2,), (4,))``; ``"1x1, 2x2"`` -> ``((1, 1), (2, 2))``.
    A malformed entry is named; a repeated one is kept once (where it first
    came)."""
    entries = [part.strip() for part in text.split(",")]
    if not any(entries):
        raise ThreadMapError(f"{what} is empty: give N or NxM entries separated by commas")
    values: list[Dims] = []
    for entry in entries:
        if not entry:
            continue
        parts = entry.lower().replace("*", "x").replace("×", "x").split("x")
        try:
            dims = tuple(int(part) for part in parts)
        except ValueError:
            dims = ()
        if not 1 <= len(dims) <= 2 or min(dims) < 1:
            raise ThreadMapError(f"{what}: {entry!r} is not N or NxM (whole numbers from 1, "
                                 f"such as 4 or 2x2)")
        if dims not in values:
            values.append(dims)
    return tuple(values)


def as_dims(values) -> tuple[Dims, ...]:
    """Numbers or tuples (``(1, 2)`` or ``((1, 1), (2, 2))``) as dims tuples."""
    return tuple((int(v),) if isinstance(v, (int, np.integer)) else tuple(int(d) for d in v)
                 for v in values)


#: A sweep's defaults: 1-D launches, and for a kernel that indexes in two
#: dimensions, 2-D ones (1-D launches of a 2-D kernel leave its y threads at 0).
DEFAULT_GRIDS = {1: "1,2,4,8,16,32", 2: "1x1,2x2,4x4,8x8,16x16"}
DEFAULT_BLOCKS = {1: "32,64,128,256,512,1024", 2: "8x8,16x16,32x8,32x32"}


def default_lists(launch_dims: int, kernel_block: Dims | None = None) -> tuple[str, str]:
    """The grids and blocks a sweep tries by default: for a kernel that needs
    its own block (its file's launch, or the shape of its shared tile), only
    that block."""
    dims = 2 if launch_dims == 2 else 1
    blocks = format_dims(kernel_block) if kernel_block else DEFAULT_BLOCKS[dims]
    grid_dims = len(kernel_block) if kernel_block else dims
    return DEFAULT_GRIDS[grid_dims], blocks


def sweep_defaults(base: RunRequest) -> tuple[str, str]:
    """The grids and blocks a sweep of ``base``'s kernel tries by default
    (:func:`default_lists`): 2-D for a kernel that indexes in 2-D.  It reads
    the kernel's plan: call it off the GUI thread, or where a plan is cached."""
    from .search import kernel_block
    from .sources.loader import load_plan

    plan = load_plan(base)
    return default_lists(plan.launch_dims, kernel_block(plan))


#: timed launches per configuration: a sweep compares 64 configurations
#: with each other, where a median of 3 is as telling as one of 5 and the
#: timed launches were a third of a sweep's time
SWEEP_REPEATS = 3


def sweep_requests(base: RunRequest, grids, blocks) -> list[RunRequest]:
    """Every launch grid x block (each given as numbers or dims tuples),
    checked up front: bad input is refused, naming the launch, before
    anything runs."""
    requests = []
    repeats = min(base.repeats, SWEEP_REPEATS)
    for grid in as_dims(grids):
        for block in as_dims(blocks):
            request = base.with_(grid=grid, block=block, repeats=repeats,
                                 launch_source=f"the sweep's configuration "
                                               f"{format_dims(grid)} x {format_dims(block)}")
            try:
                check_request(request)
            except ThreadMapError as exc:
                raise type(exc)(f"{format_dims(grid)} x {format_dims(block)}: {exc}") from None
            requests.append(request)
    return requests


def one_tier(requests: list[RunRequest]) -> list[RunRequest]:
    """The configurations of a sweep on the CPU emulation, all on the compiled
    tier unless one was asked for: a sweep compares launches by their kernel
    times, and only the compiled tier's measure the kernel's loop (the instant
    tier's are an interpreter's, shaped by its vectors).  numba compiles the
    kernel once for the whole sweep."""
    if not requests or requests[0].tier != "auto":
        return requests
    why = "a sweep compares kernel times: the compiled loop's, the same tier for every launch"
    return [r.with_(tier="compiled", tier_source=why) for r in requests]


def run_sweep(base: RunRequest, grids, blocks,
              progress: Callable[[float, str], None] | None = None,
              cancel: Callable[[], bool] | None = None,
              run_one: Callable[..., RunResult] | None = None) -> Iterator[SweepCell]:
    """Yield a :class:`SweepCell` per configuration, row by row (grids outer)."""
    from .engine import run

    run_one = run_one or run
    progress = progress or (lambda fraction, message: None)
    cancel = cancel or (lambda: False)
    requests = one_tier(sweep_requests(base, grids, blocks))
    total = len(requests)
    for index, request in enumerate(requests):
        if cancel():
            raise RunCancelled("sweep cancelled")
        grid, block = tuple(request.grid), tuple(request.block)
        label = f"configuration {index + 1} of {total}: {format_dims(grid)} x {format_dims(block)}"

        def inner(fraction: float, message: str, index=index, label=label) -> None:
            progress((index + fraction) / total, f"{label}: {message}")

        progress(index / total, label)
        try:
            result = run_one(request, progress=inner, cancel=cancel)
        except RunCancelled:
            raise
        except ThreadMapError as exc:
            yield SweepCell(grid, block, request, None, str(exc))
            continue
        yield SweepCell(grid, block, request, result)
    progress(1.0, f"sweep done: {total} configurations")


def run_sweep_ahead(base: RunRequest, grids, blocks,
                    progress: Callable[[float, str], None] | None = None,
                    run_one: Callable[..., RunResult] | None = None) -> Iterator[SweepCell]:
    """As :func:`run_sweep`, the configurations running on a thread of their
    own, so that the caller can write each configuration's files while the
    next ones run (``progress`` is then called from that thread).  Its files
    are written holding :data:`~kernels.backends.common.TIMING`, which the runs
    hold while they time themselves: the times are of the runs alone.
    Leaving the loop early (an exception, Ctrl-C) cancels the rest."""
    cells: queue.Queue = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for cell in run_sweep(base, grids, blocks, progress, cancel=stop.is_set,
                                  run_one=run_one):
                cells.put(("cell", cell))
        except BaseException as exc:  # re-raised in the caller's thread
            cells.put(("error", exc))
        else:
            cells.put(("done", None))

    producer = threading.Thread(target=produce, name="threadmap-sweep", daemon=True)
    producer.start()
    try:
        while True:
            kind, value = cells.get()
            if kind == "cell":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()
        producer.join(timeout=10)


class SweepFolder:
    """A sweep's folder, written one configuration at a time: each one's
    ``.npz`` (and ``.png`` when an image writer is given) as it comes, then
    ``summary.csv`` and ``summary.json``.  Each file is written whole or not
    at all (outputs.py), and ``summary.json`` names each ``.npz`` by its run
    id, which ``load_maps`` checks: a sweep cut short leaves the previous
    summary, and files it cannot be mistaken for."""

    def __init__(self, out: Path,
                 image_writer: Callable[[RunResult, Path], None] | None = None):
        self.out = out
        self.image_writer = image_writer
        out.mkdir(parents=True, exist_ok=True)
        #: how each configuration's .npz restores its maps (maps_file.load_maps)
        self.layouts: dict = {}
        self._reference = None  # every configuration runs on the same inputs
        self._reference_id = ""

    def add(self, cell: SweepCell) -> None:
        if cell.result is None:
            return
        out = self.out
        stem = cell.stem
        arrays = cell.result.maps_arrays()
        reference = arrays.pop("reference", None)
        dtype = cell.result.request.dtype
        if reference is None:  # (a described run without a reference)
            self.layouts[stem] = write_atomically(out / f"{stem}.npz", lambda path: save_maps(
                path, arrays, dtype, run_id=uuid.uuid4().hex))
            if self.image_writer is not None:
                self.image_writer(cell.result, out / f"{stem}.png")
            return
        if self._reference is None:
            self._reference = reference
            self._reference_id = uuid.uuid4().hex
            self.layouts["reference"] = write_atomically(
                out / "reference.npz", lambda path: save_maps(
                    path, {"reference": reference}, dtype, run_id=self._reference_id))
        elif not (reference is self._reference or np.array_equal(reference, self._reference)):
            arrays["reference"] = reference  # (cannot happen in one sweep; kept if it does)
        self.layouts[stem] = write_atomically(out / f"{stem}.npz", lambda path: save_maps(
            path, arrays, dtype, run_id=uuid.uuid4().hex))
        if "reference" not in arrays:
            self.layouts[stem]["shared"] = {"reference": {
                "file": "reference.npz", "dtype": reference.dtype.str,
                "run_id": self._reference_id, "shape": list(reference.shape)}}
        if self.image_writer is not None:
            self.image_writer(cell.result, out / f"{stem}.png")

    def finish(self, cells: list[SweepCell],
               occupancy: Callable[[SweepCell], dict] | None = None) -> None:
        """``summary.csv`` and ``summary.json``; ``occupancy`` adds the
        occupancy figures of each configuration."""
        rows = [cell.row() for cell in cells]
        if occupancy is not None:
            for cell, row in zip(cells, rows):
                if cell.result is not None:
                    figures = occupancy(cell)
                    row.update({f"occupancy_{key}": figures[key] for key in (
                        "gpu", "blocks_per_sm", "limited_by", "occupancy", "waves",
                        "last_wave_idle", "registers_per_thread", "registers_source")})
        fields: list[str] = []
        for row in rows:
            fields += [key for key in row if key not in fields]

        def write_csv(path: Path) -> None:
            with open(path, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=fields)
                writer.writeheader()
                writer.writerows(rows)

        write_atomically(self.out / "summary.csv", write_csv)
        base = cells[0].request if cells else None
        write_atomically(self.out / "summary.json", json.dumps({
            "kernel": base.kernel_label if base else None,
            "shape": list(base.shape) if base else None,
            "backend_asked": base.backend if base else None,
            "configurations": rows,
            "maps": self.layouts,
        }, indent=2))


def write_sweep(cells: list[SweepCell], out: Path,
                image_writer: Callable[[RunResult, Path], None] | None = None,
                occupancy: Callable[[SweepCell], dict] | None = None) -> None:
    """``summary.csv``, ``summary.json`` and one ``.npz`` (and ``.png`` when an
    image writer is given) per configuration, into ``out``; ``occupancy`` adds
    the occupancy figures of each configuration."""
    folder = SweepFolder(out, image_writer)
    for cell in cells:
        folder.add(cell)
    folder.finish(cells, occupancy)


#: The hidden folder of ``--out`` a sweep is written into before its files
#: replace the previous sweep's (:func:`staged_sweep`).
STAGING_PREFIX = ".threadmap-sweep-"
#: Files a sweep writes besides its configurations' (the app's exporter
#: writes the contact sheet).
SWEEP_FILES = ("summary.csv", "summary.json", "reference.npz", "contact_sheet.png")
#: A configuration's files are named so (``SweepCell.stem``): only such names
#: of a previous summary.json, which is read as untrusted, are ever removed.
_STEM = re.compile(r"grid[0-9]+(x[0-9]+)?_block[0-9]+(x[0-9]+)?")
#: summary.json past this is not read (a sweep's is a few kB a configuration).
_LONGEST_SUMMARY = 64 << 20


@contextlib.contextmanager
def staged_sweep(out: Path) -> Iterator[Path]:
    """A folder inside ``out`` (locked by the caller) to write a sweep into.
    When the block ends, its files replace the previous sweep's in ``out``;
    when it is left by an error or a Ctrl-C, it is removed and ``out`` is as
    it was.  (Written in place, a sweep cut short had overwritten the
    previous sweep's files of the same names, beside a summary that still
    described the previous sweep.)"""
    for stale in out.glob(STAGING_PREFIX + "*"):  # (a sweep killed before it could)
        shutil.rmtree(stale, ignore_errors=True)
    previous = _previous_sweep_files(out)  # (before the sweep: nothing of it rests on this)
    staged = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    try:
        yield staged
        _replace_sweep(staged, out, previous)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _previous_sweep_files(out: Path) -> set[str]:
    """The files of the sweep in ``out`` by its summary.json: each
    configuration's .npz and .png and the sweep's own files; none where there
    is no summary.json to read, and no file of another name, ever."""
    try:
        if (out / "summary.json").stat().st_size > _LONGEST_SUMMARY:
            return set()
        with open(out / "summary.json", encoding="utf-8") as handle:
            maps = json.load(handle).get("maps")
        stems = [stem for stem in maps if isinstance(stem, str) and _STEM.fullmatch(stem)]
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):
        return set()
    names = {f"{stem}{suffix}" for stem in stems for suffix in (".npz", ".png")}
    return {name for name in names | set(SWEEP_FILES) if (out / name).is_file()}


def _replace_sweep(staged: Path, out: Path, previous: set[str]) -> None:
    """The new sweep's files in, summary.json last, then what is left of the
    previous one out, with Ctrl-C held back meanwhile: the folder holds one
    sweep, never a mix."""
    new = sorted((path for path in staged.iterdir() if path.is_file()),
                 key=lambda path: path.name == "summary.json")
    with interrupts_deferred():
        for path in new:
            os.replace(path, out / path.name)
        for name in previous - {path.name for path in new}:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out / name)
    sync_folder(out)
