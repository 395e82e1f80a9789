"""Run one kernel across many launch configurations (blocks x threads per block).

Qt-free: the GUI's sweep tab and ``threadmap sweep`` both use it.  Results
come one configuration at a time (a generator), so callers can show progress
and stop between configurations; a configuration that fails is reported and
the sweep goes on.
"""
from __future__ import annotations

import csv
import json
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import RunCancelled, ThreadMapError
from .maps_file import save_maps
from .outputs import write_atomically
from .request import RunRequest, check_request
from .result import RunResult


@dataclass(frozen=True, eq=False)
class SweepCell:
    """One configuration of a sweep and what it gave."""

    blocks: int
    threads: int
    request: RunRequest
    result: RunResult | None
    error: str | None = None

    @property
    def total_threads(self) -> int:
        return self.blocks * self.threads

    def row(self) -> dict:
        """A flat summary row (for summary.csv / summary.json)."""
        row = {"blocks": self.blocks, "threads_per_block": self.threads,
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
            idle_threads=result.maps.idle_threads,
            max_stores_per_thread=int(result.maps.stores_per_thread.max(initial=0)),
            backend=result.backend,
            kernel_seconds=kernel.seconds if kernel else None,
            kernel_time_what=kernel.what if kernel else None,
            kernel_time_is_gpu=kernel.is_gpu_time if kernel else None,
            gflops=kernel.gflops if kernel else None,
            barrier_divergence=result.verdict.barrier_divergence,
            shared_races=result.verdict.shared_races,
            uninitialised_shared_reads=result.verdict.uninitialised_shared_reads,
        )
        analysis = result.analysis
        if analysis is not None:
            row.update(
                max_bank_ways=max((c.max_ways for c in analysis.bank_conflicts), default=None),
                divergent_branch_runs=sum(d.divergent for d in analysis.divergence),
                min_coalescing_efficiency=min(
                    (c.efficiency for c in analysis.coalescing if c.requests), default=None))
        return row


def parse_list(text: str, what: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``."""
    try:
        values = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise ThreadMapError(f"{what} must be whole numbers separated by commas, not {text!r}") from None
    if not values:
        raise ThreadMapError(f"{what} is empty")
    return values


#: timed launches per configuration: a sweep compares 64 configurations
#: with each other, where a median of 3 is as telling as one of 5 and the
#: timed launches were a third of a sweep's time
SWEEP_REPEATS = 3


def sweep_requests(base: RunRequest, blocks: tuple[int, ...],
                   threads: tuple[int, ...]) -> list[RunRequest]:
    """Every 1-D launch blocks x threads, checked up front (bad input is refused
    before anything runs)."""
    requests = []
    repeats = min(base.repeats, SWEEP_REPEATS)
    for b in blocks:
        for t in threads:
            request = base.with_(grid=(b,), block=(t,), repeats=repeats)
            check_request(request)
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


def run_sweep(base: RunRequest, blocks: tuple[int, ...], threads: tuple[int, ...],
              progress: Callable[[float, str], None] | None = None,
              cancel: Callable[[], bool] | None = None,
              run_one: Callable[..., RunResult] | None = None) -> Iterator[SweepCell]:
    """Yield a :class:`SweepCell` per configuration, row by row (blocks outer)."""
    from .engine import run

    run_one = run_one or run
    progress = progress or (lambda fraction, message: None)
    cancel = cancel or (lambda: False)
    requests = one_tier(sweep_requests(base, blocks, threads))
    total = len(requests)
    for index, request in enumerate(requests):
        if cancel():
            raise RunCancelled("sweep cancelled")
        b, t = request.grid[0], request.block[0]
        label = f"configuration {index + 1} of {total}: {b} x {t}"

        def inner(fraction: float, message: str, index=index, label=label) -> None:
            progress((index + fraction) / total, f"{label}: {message}")

        progress(index / total, label)
        try:
            result = run_one(request, progress=inner, cancel=cancel)
        except RunCancelled:
            raise
        except ThreadMapError as exc:
            yield SweepCell(b, t, request, None, str(exc))
            continue
        yield SweepCell(b, t, request, result)
    progress(1.0, f"sweep done: {total} configurations")


def run_sweep_ahead(base: RunRequest, blocks: tuple[int, ...], threads: tuple[int, ...],
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
            for cell in run_sweep(base, blocks, threads, progress, cancel=stop.is_set,
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
        stem = f"grid{cell.blocks}_block{cell.threads}"
        arrays = cell.result.maps_arrays()
        reference = arrays.pop("reference")
        dtype = cell.result.request.dtype
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
