"""The headless command line: ``threadmap run`` (and ``sweep``, ``kernels``).

It calls the same :func:`kernels.engine.run` as the GUI.  Image export
(``--png`` / ``--svg``) needs Qt and is provided by the ``app`` package,
which passes a renderer in; without one those options are refused.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from .errors import (
    KernelCompileError,
    KernelRuntimeError,
    RequestError,
    RunCancelled,
    RunTimedOut,
    ThreadMapError,
)
# Imported where a command uses them, as measured (python -X importtime, on
# top of this module's 80 ms): the engine, the API and the sweep, ~120 ms
# together; the result's words and the backends' common parts, ~60 ms; the
# search, the check of a folder, the child processes, the loader, ~15-20 ms
# each.  `threadmap kernels` and `threadmap cache` need none of them, and a
# run's child starts before this module is imported (command.py).
from .analyses.occupancy import check_gpu_model
from .cache import CACHE_LIMIT_BYTES, cache_dir, cache_entries, clear_cache
from .cli_progress import CommandLineProgress
from .estimate import KERNEL_FILE_TIME_LIMIT
from .machine import usable_cores
from .outputs import OutputFolder
from .presets import default_launch
from .request import (
    BACKENDS,
    DTYPES,
    PATTERNS,
    TIERS,
    RunRequest,
    check_request,
    format_bytes,
    parse_dims,
    parse_scalars,
    parse_shape,
)
from .run_files import RUN_FILES, MapsWrittenAhead, update_result_json, write_outputs
from .sources.catalogue import CATALOGUE
from .watch import FileWatcher

#: Called with (result, png_path, svg_path) to export heatmap images.
ImageExporter = Callable[..., None]


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``sweep``."""
    parser.add_argument("--kernel", help=f"built-in kernel ({', '.join(CATALOGUE)}), or the "
                        "kernel's name in --kernel-file (default: grid-stride, or the file's "
                        "only kernel)")
    parser.add_argument("--kernel-file", help="a .py file with your own @cuda.jit kernel")
    parser.add_argument("--shape", default=None,
                        help="M x K x N: C (M x N) = A (M x K) @ B (K x N) (default 128x256x128, "
                             "or what --arg or the file's THREADMAP_ARGS describe)")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                        help="describe a kernel parameter (repeatable): an array as "
                             "NAME=float32[ROWS, COLS] (or [LENGTH] when the kernel indexes it "
                             "flat), a scalar as NAME=4096 or NAME=float32(2.5). M, K and N "
                             "follow from the matrices. A kernel file may describe them in a "
                             "literal THREADMAP_ARGS = {\"A\": \"float32[64, 32]\", ...}, "
                             "read, never run; --arg replaces its entries by name")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="the matrices' element type (default float32, or what --arg "
                             "describes)")
    parser.add_argument("--pattern", choices=PATTERNS, default="random",
                        help="input values (default random: all-ones hides index bugs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=BACKENDS, default="auto")
    add_tier_option(parser)
    parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a kernel's scalar parameter (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="end the run (in a child process) if it takes longer (default: "
                             "300 s for a kernel file, none for a built-in kernel)")
    parser.add_argument("--yes", action="store_true",
                        help="run even when the estimate is over a minute")
    parser.add_argument("--gpu-model", default="H100 SXM",
                        help="GPU model for the occupancy figures (H100 SXM, H200, A100, "
                             "RTX 4090, T4)")
    parser.add_argument("--registers", type=int, default=None,
                        help="registers per thread to assume when neither a GPU nor ptxas "
                             "can measure them (default 32)")


def add_tier_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", choices=TIERS, default="auto",
                        help="the CPU emulation's tier: instant (numpy, no compile), compiled "
                             "(numba: seconds to compile a new kernel, then ~100x faster), or "
                             "auto (by the estimated work; default)")


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option refused in one line (no usage text), as
    every other refusal is; ``--help`` still shows the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog.split()[0]} "
                     f"{' '.join(self.prog.split()[1:]) + ' ' if ' ' in self.prog else ''}"
                     "--help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="threadmap",
        description="Show which CUDA thread computes which element of C = A @ B. "
                    "Without a command, opens the desktop app.")
    commands = parser.add_subparsers(dest="command")
    run_parser = commands.add_parser("run", help="run one kernel and launch; write its maps")
    add_run_options(run_parser)
    run_parser.add_argument("--grid", help="blocks per grid: N or NxM (default: the kernel's "
                            "preset launch)")
    run_parser.add_argument("--block", help="threads per block: N or NxM")
    run_parser.add_argument("--out", required=True, help="directory for result.json and maps.npz")
    run_parser.add_argument(
        "--reference", metavar="FILE.py:FUNCTION",
        help="for a kernel whose arguments are described (--arg): YOUR HOST CODE, imported and "
             "run by this command (never a kernel file's code), that returns the expected "
             "output; it gets float64 copies of the inputs and the scalars, in the kernel's "
             "parameter order without the output. Without it, a kernel that is not C = A @ B "
             "gets maps and checks only")
    run_parser.add_argument("--watch", action="store_true",
                            help="with --kernel-file: run again each time the file is saved "
                                 "(until Ctrl-C), writing --out afresh each time")
    run_parser.add_argument("--png", help="also export the write-count heatmap to this PNG")
    run_parser.add_argument("--svg", help="also export the write-count heatmap to this SVG")
    run_parser.add_argument("--map", default="count",
                            help="which map --png/--svg draw (count, writer, iteration, ...; "
                                 "count:<array> for another array the kernel stores into)")
    run_parser.add_argument("--size", default="1200x900",
                            help="exported image size in pixels, WxH (default 1200x900)")
    sweep_parser = commands.add_parser(
        "sweep", help="run one kernel across blocks x threads-per-block configurations")
    add_run_options(sweep_parser)
    sweep_parser.add_argument("--grids",
                              help="grids, comma-separated, each N or NxM (default "
                                   "1,2,4,8,16,32; for a kernel that indexes in 2-D, "
                                   "1x1,2x2,4x4,8x8,16x16)")
    sweep_parser.add_argument("--blocks",
                              help="blocks, comma-separated, each N or NxM threads (default "
                                   "32,64,128,256,512,1024; in 2-D 8x8,16x16,32x8,32x32; for "
                                   "a kernel whose tile fixes its block, that block)")
    sweep_parser.add_argument("--out", required=True,
                              help="directory for summary.csv, summary.json and per-configuration "
                                   ".npz / .png files")
    sweep_parser.add_argument("--map", default="count", help="map drawn in the .png files")
    sweep_parser.add_argument("--no-images", action="store_true",
                              help="skip the .png files and the contact sheet")
    commands.add_parser("kernels", help="list the built-in kernels")
    cache_parser = commands.add_parser(
        "cache", help="the cache of generated kernels: its size, or --clear it")
    cache_parser.add_argument("--clear", action="store_true",
                              help="remove every generated module and compiled code")
    hunt_parser = commands.add_parser(
        "hunt", help="search for the smallest shape and launch where a kernel fails")
    hunt_parser.add_argument("--kernel-file", required=True,
                             help="a .py file with your own @cuda.jit kernel")
    hunt_parser.add_argument("--kernel", help="the kernel's name in the file (default: its "
                             "only kernel)")
    hunt_parser.add_argument("--out", required=True, help="directory for hunt.json (and the "
                             "failing case's result.json and maps.npz)")
    hunt_parser.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                             help="stop after this long (default 60 s)")
    hunt_parser.add_argument("--backend", choices=BACKENDS, default="auto",
                             help="where cases run (default auto: a GPU if there is one, else "
                                  "the CPU emulation, else the simulator; cpu never runs "
                                  "elsewhere)")
    hunt_parser.add_argument("--grid", help="pin the grid (N or NxM); with --block, only "
                             "the shapes vary")
    hunt_parser.add_argument("--block", help="pin the block (N or NxM; default: the kernel's "
                             "own, when its file launches it or its shared tile fixes it)")
    add_tier_option(hunt_parser)
    hunt_parser.add_argument("--dtype", choices=DTYPES, default=None,
                             help="float32 (the default) or float64: the matrices', or every "
                                  "described array's")
    hunt_parser.add_argument("--seed", type=int, default=0)
    hunt_parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                             help="value of a kernel's scalar parameter (repeatable)")
    hunt_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                             help="describe a kernel parameter, as for run (repeatable; a "
                                  "file's THREADMAP_ARGS too): a kernel that is not C = A @ B "
                                  "is hunted on its arrays, each distinct dimension given "
                                  "small, prime and uneven sizes (an integer scalar equal to "
                                  "a dimension follows it), and on launches around them")
    hunt_parser.add_argument("--reference", default=None, metavar="FILE.py:FUNCTION",
                             help="YOUR host code, as for run, that every case is held to; "
                                  "without it a kernel run as it is fails a case only on the "
                                  "checks (elements never written, out of bounds, races)")
    check_parser = commands.add_parser(
        "check", help="check many kernel files on many shapes and launches; write a report")
    check_parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                              help="kernel files, or folders searched for .py files")
    check_parser.add_argument("--shapes", default=None,
                              help="M x K x N, separated by commas (default 64x64x64,100x37x90, "
                                   "or what --arg describes)")
    check_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                              help="describe every kernel's parameters (repeatable), as for "
                                   "run: x=float32[4096], n=4096; a submission's own "
                                   "THREADMAP_ARGS entries are replaced by name, and one whose "
                                   "parameters do not fit is an ERROR row saying why")
    check_parser.add_argument("--reference", default=None, metavar="FILE.py[:FUNCTION]",
                              help="YOUR host code (never a submission's: a file among those "
                                   "checked is refused, but for references.py at the top of a "
                                   "folder checked, which is then not graded), imported and "
                                   "called in check's own processes with float64 copies of "
                                   "each described kernel's inputs; it returns the expected "
                                   "output, which each submission is held to (PASS or FAIL, "
                                   "not CHECKED). FILE.py:FUNCTION holds every kernel to one "
                                   "function; FILE.py alone, a course's references, each "
                                   "kernel to the function named after it (or, in a file of "
                                   "one kernel, after the file)")
    check_parser.add_argument("--launches", default="file",
                              help="GRID:BLOCK (each N or NxM), or 'file' for the file's own "
                                   "launch (or one guessed, said so), separated by commas "
                                   "(default file: each file at its own launch, as run does; "
                                   "e.g. file,1:1024,4:256 adds two)")
    check_parser.add_argument("--out", required=True, help="directory for report.csv, "
                              "report.json and report.html")
    check_parser.add_argument("--backend", choices=BACKENDS, default="auto",
                              help="where cases run (default auto: a GPU if there is one, else "
                                   "the CPU emulation, else the simulator; cpu never runs "
                                   "elsewhere)")
    add_tier_option(check_parser)
    check_parser.add_argument("--dtype", choices=DTYPES, default="float32")
    check_parser.add_argument("--seed", type=int, default=0)
    check_parser.add_argument("--workers", type=int, default=None,
                              help="local processes (default: half the cores, at least 1)")
    check_parser.add_argument("--time-limit", type=float, default=30.0, metavar="SECONDS",
                              help="seconds one case may take (its kernel's first case three "
                                   "times as long: it compiles); a kernel past it is a failed "
                                   "row and its other cases are not run (default 30)")
    check_parser.add_argument("--scheduler", metavar="ADDRESS",
                              help="run on this Dask distributed scheduler (tcp://host:8786) "
                                   "instead of local processes")
    check_parser.add_argument("--follow-links", action="store_true",
                              help="grade a symbolic link inside a folder given (a file, or a "
                                   "folder's files), marked as a link in the report; by "
                                   "default it is an ERROR row and what it names is never "
                                   "opened (a file named here that is a link is graded)")
    open_parser = commands.add_parser("open", help="open the desktop app on a kernel file")
    open_parser.add_argument("kernel_file", help="a .py file with @cuda.jit kernels (parsed, "
                             "never run)")
    return parser


def request_from_args(args: argparse.Namespace, grid: str | None,
                      block: str | None) -> RunRequest:
    """A RunRequest from parsed options; the launch defaults to the kernel's preset."""
    m, k, n = parse_shape(args.shape if args.shape is not None else DEFAULT_SHAPE)
    kernel = args.kernel if args.kernel or args.kernel_file else "grid-stride"
    reference = getattr(args, "reference", None)
    if reference is not None:
        from .reference_code import parse_reference

        parse_reference(reference)
    request = RunRequest(kernel=kernel, kernel_file=args.kernel_file, m=m, k=k, n=n,
                         dtype=args.dtype or "float32", pattern=args.pattern, seed=args.seed,
                         backend=args.backend, scalars=parse_scalars(args.scalar),
                         tier=args.tier, reference=reference)
    from .sources.arguments import describe_request

    # (a sweep has no reference: a kernel of three arrays described otherwise
    # than as C = A @ B is swept as it is, maps and checks only)
    request = describe_request(request, getattr(args, "arg", []), args.shape is not None,
                               args.dtype, as_it_is_unless_matmul=args.command == "sweep")
    if grid or block:
        default = default_launch(request) if not (grid and block) else request
        return request.with_(grid=parse_dims(grid, "--grid") if grid else default.grid,
                             block=parse_dims(block, "--block") if block else default.block,
                             launch_source="given" if grid and block else
                             f"{'grid' if grid else 'block'} given, the rest "
                             f"{default.launch_source}")
    return default_launch(request)


DEFAULT_SHAPE = "128x256x128"


def check_numbers(args: argparse.Namespace) -> None:
    """The one check of every command's options, made before anything runs:
    each command refuses a bad --seed, --time-limit, --registers, --budget,
    --workers, --out or --scheduler with the same message."""
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed < 2**63:
        raise ThreadMapError(f"--seed must be a whole number from 0 to 2**63 - 1, not {seed}")
    limit = getattr(args, "time_limit", None)
    if limit is not None and not (math.isfinite(limit) and limit > 0):
        raise ThreadMapError(f"--time-limit must be a positive number of seconds, not {limit}")
    registers = getattr(args, "registers", None)
    if registers is not None and not 1 <= registers <= 255:
        raise ThreadMapError(f"--registers must be between 1 and 255 (registers per thread), "
                             f"not {registers}")
    budget = getattr(args, "budget", None)
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise ThreadMapError(f"--budget must be a positive number of seconds, not {budget}")
    workers = getattr(args, "workers", None)
    if workers is not None and workers < 1:
        raise ThreadMapError(f"--workers must be at least 1, not {workers}")
    if getattr(args, "kernel_file", None) is not None and not args.kernel_file.strip():
        raise ThreadMapError("--kernel-file needs a file name")
    if hasattr(args, "out") and not (args.out or "").strip():
        raise ThreadMapError("--out needs a folder name (an empty one would write into the "
                             "current folder)")
    if getattr(args, "scheduler", None) is not None:
        from .check import check_scheduler_address

        check_scheduler_address(args.scheduler)


def check_cases(shapes, launches, args: argparse.Namespace) -> None:
    """Every shape with every launch of ``threadmap check``, through the same
    check as ``run``'s (CUDA's limits, the memory a run needs): refused before
    any file is read, not as an ERROR row per case."""
    for m, k, n in shapes:
        for launch in launches:
            grid, block = (launch.grid, launch.block) if launch.grid else ((1,), (1,))
            try:
                check_request(RunRequest(kernel="grid-stride", m=m, k=k, n=n, grid=grid,
                                         block=block, dtype=args.dtype, seed=args.seed,
                                         backend=args.backend))
            except ThreadMapError as exc:
                where = f"--launches {launch.text}" if launch.grid else f"--shapes {m}x{k}x{n}"
                raise ThreadMapError(f"{where} (with shape {m}x{k}x{n}): {exc}") from None


def time_limit(args: argparse.Namespace, request: RunRequest) -> float | None:
    """--time-limit, else 300 s for a kernel file (as in the app), so that a
    kernel that never finishes ends."""
    if args.time_limit is not None:
        return args.time_limit
    return KERNEL_FILE_TIME_LIMIT if request.kernel_file else None


def check_output_path(option: str, path: str | None, folder: bool = False) -> None:
    """Refuse, before anything runs, an output that cannot be written: a file
    where a folder must be, a folder where a file must be, no write access."""
    if not path:
        return
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise ThreadMapError(f"{option} {path} is a file; give a folder")
    if not folder and target.is_dir():
        raise ThreadMapError(f"{option} {path} is a folder; give a file name")
    ancestor = target if folder else target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ThreadMapError(f"{option} {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK):
        raise ThreadMapError(f"{option} {path}: cannot write in {ancestor}")


def occupancy_for(result, args: argparse.Namespace) -> dict:
    """The occupancy figures of a result's launch on ``--gpu-model``."""
    from .engine import occupancy_on

    return occupancy_on(result, args.gpu_model, args.registers)


#: What ``threadmap run`` writes into --out.
def print_summary(result, stream=None) -> None:
    # (sys.stdout looked up at each call: a default bound at import kept the
    # stream of whoever imported first, closed by then under pytest's capsys)
    stream = stream if stream is not None else sys.stdout
    request = result.request
    source = "" if request.launch_source == "given" else f" ({request.launch_source})"
    checks_only = " (checks only)" if result.verdict.reference_note else ""
    print(f"{result.verdict.word}{checks_only}  {printable(request.kernel_label)}  "
          f"{request.shape_label} "
          f"{'' if request.arguments else request.dtype + ' '} grid {'x'.join(map(str, request.grid))} x block "
          f"{'x'.join(map(str, request.block))}{source}  [{result.backend}: "
          f"{result.backend_note}]", file=stream)
    for reason in result.verdict.reasons:
        print(f"  - {printable(reason)}", file=stream)
    for diagnosis in result.diagnoses:
        first, *rest = diagnosis.describe().splitlines()
        print(f"  why ({diagnosis.rule}): {printable(first)}", file=stream)
        for line in rest:
            print(f"    {printable(line.strip())}", file=stream)
    if result.verdict.reference_note:
        print(f"  no correctness verdict: {printable(result.verdict.reference_note)}",
              file=stream)
    else:
        print(f"  {result.verdict.errors.describe()}", file=stream)
    for timing in result.timings:
        print(f"  {timing.describe()}", file=stream)
    for note in result.notes:
        print(f"  note: {printable(note)}", file=stream)
    print_kernel_output(result, stream)


def print_kernel_output(result, stream=None) -> None:
    """The kernel's own prints, once, fenced off from ThreadMap's summary."""
    stream = stream if stream is not None else sys.stdout
    from .result import KERNEL_OUTPUT_LINES

    if not result.kernel_output:
        return
    lines = result.kernel_output.splitlines()
    print(f"  kernel output ({len(lines):,} line{'s' if len(lines) != 1 else ''} printed by "
          "the kernel in its instrumented launch; the timed launches' prints are dropped):",
          file=stream)
    for line in lines[:KERNEL_OUTPUT_LINES]:
        print(f"  | {printable(line)}", file=stream)
    more = len(lines) - KERNEL_OUTPUT_LINES
    if more > 0 or result.kernel_output_cut:
        print(f"  | ... {max(more, 0):,} more lines in result.json"
              + (f" ({result.kernel_output_cut:,} characters past 256 KiB cut)"
                 if result.kernel_output_cut else ""), file=stream)


def _cmd_run(args: argparse.Namespace, exporter: ImageExporter | None) -> int:
    from .backends.child import warm_for

    if (args.png or args.svg) and exporter is None:
        raise ThreadMapError("--png/--svg need the app package (PySide6, pyqtgraph); "
                             "run through the 'threadmap' command")
    size = check_image_options(args)
    check_numbers(args)
    for option, path in (("--png", args.png), ("--svg", args.svg)):
        check_output_path(option, path)
    check_output_path("--out", args.out, folder=True)
    if args.watch and not args.kernel_file:
        raise ThreadMapError("--watch needs --kernel-file (it runs again when the file is "
                             "saved)")
    request = request_from_args(args, args.grid, args.block)
    if args.png or args.svg:
        check_described_map(request, args.map)
    check_gpu_model(args.gpu_model)
    # (up already where kernels/command.py started it from the typed
    # arguments; if not, its start-up overlaps the imports and checks below)
    warm_for(request)
    from .engine import check_estimate, run

    if not args.yes:
        check_estimate(request)
    progress = CommandLineProgress()
    out = Path(args.out)
    # The folder is locked from the start: a second command into it is
    # refused at once, not after its run.
    with OutputFolder(out, files=RUN_FILES) as folder:
        maps = MapsWrittenAhead(folder)  # (written while the reference check goes on)
        try:
            # (a child compiling ahead is for a session that goes on: --watch)
            # (on a GPU machine, auto answers from the CPU emulation first and
            # the GPU's run follows below; --watch runs on the GPU as before:
            # its loop has no second step to show)
            result = run(request, progress=progress, time_limit=time_limit(args, request),
                         compile_ahead=args.watch, maps_final=maps.start,
                         gpu_follows=not args.watch)
        finally:
            progress.clear()
        occupancy = occupancy_for(result, args)
        write_outputs(result, out, occupancy, folder=folder, maps=maps)
        if exporter is not None and (args.png or args.svg):
            exporter(result, png=args.png, svg=args.svg, map_name=args.map, size=size)
        folder.publish()
    print_summary(result)
    print(f"  wrote {out / 'result.json'} and {out / 'maps.npz'}")
    if args.watch:
        return _watch(args, request, result, exporter, size)
    if result.follows:
        result = _follow(result, args, out, occupancy, maps)
    _keep_until_exit(result, maps)
    return 0


def _follow(result, args: argparse.Namespace, out: Path, occupancy, maps):
    """The run that follows a first answer (the GPU's, after the CPU
    emulation's): its times, verdict and agreement printed, and result.json
    written again with them (maps.npz, the first answer's, stays)."""
    from .engine import confirm
    from .result import BACKEND_SHORT

    print(f"  the {BACKEND_SHORT.get(result.follows, result.follows)}'s run of the same launch "
          "follows...", flush=True)
    progress = CommandLineProgress()
    try:
        confirmed = confirm(result, progress=progress, isolate=bool(result.request.kernel_file),
                            time_limit=time_limit(args, result.request))
    finally:
        progress.clear()
    added = confirmed.timings[len(result.timings):]
    print(f"  {printable(confirmed.confirmation.line())}")
    for timing in added:
        print(f"  {timing.describe()}")
    with OutputFolder(out, files=RUN_FILES) as folder:
        update_result_json(confirmed, folder, occupancy, maps)
        folder.publish()
    print(f"  wrote {out / 'result.json'} again, with the "
          f"{BACKEND_SHORT.get(confirmed.confirmation.backend, 'second')}'s figures")
    return confirmed


#: What the last command made, never freed by it: its process ends right
#: after (app/launcher.py ends it without the interpreter's teardown), and
#: freeing a 4096 x 4096 run's arrays as ``_cmd_run`` returned (C, its
#: reference, the maps: ~0.6 GB, most of it mapped from the child's memory)
#: took 0.14 s of a 2.5 s command.  One slot: a process that runs many
#: commands (the tests) holds only the last one's.
_kept: list = []


def _keep_until_exit(*made) -> None:
    _kept[:] = made


#: How often ``--watch`` looks at the kernel file (seconds).
WATCH_INTERVAL = 0.25


def _watch(args: argparse.Namespace, request: RunRequest, previous, exporter,
           size: tuple[int, int]) -> int:
    """``run --watch``: each save of the kernel file runs the request again,
    read again from the options and the file (its THREADMAP_ARGS, its own
    launch); a run that fails leaves the last good outputs in place and says
    why, and the next save tries again.  Ends with Ctrl-C (or SIGTERM)."""
    from .engine import run

    watcher = FileWatcher(request.kernel_file)
    out = Path(args.out)
    print(f"  watching {printable(request.kernel_file)}: save it to run again "
          "(Ctrl-C to stop)", flush=True)
    while True:
        time.sleep(WATCH_INTERVAL)
        if not watcher.changed():
            continue
        progress = CommandLineProgress()
        try:
            request = request_from_args(args, args.grid, args.block)
            with OutputFolder(out, files=RUN_FILES) as folder:
                maps = MapsWrittenAhead(folder)
                try:
                    result = run(request, progress=progress, time_limit=time_limit(args, request),
                                 maps_final=maps.start)
                finally:
                    progress.clear()
                write_outputs(result, out, occupancy_for(result, args), folder=folder,
                              maps=maps)
                if exporter is not None and (args.png or args.svg):
                    exporter(result, png=args.png, svg=args.svg, map_name=args.map, size=size)
                folder.publish()
        except ThreadMapError as exc:
            print(f"threadmap: {printable(str(exc))} (the last good outputs are kept; save "
                  "again to retry)", file=sys.stderr, flush=True)
            continue
        print_summary(result)
        if previous is not None:
            print(f"  before this save: {previous.verdict.word}"
                  + (f" ({'; '.join(previous.verdict.reasons)})"
                     if previous.verdict.reasons else ""))
        print(f"  wrote {out / 'result.json'} and {out / 'maps.npz'}", flush=True)
        previous = result


IMAGE_MAPS = ("count", "writer", "iteration", "error", "oob", "stores", "reads_a", "reads_b")


#: The maps a described run's images draw so far: its output's and its threads'.
DESCRIBED_IMAGE_MAPS = ("count", "writer", "iteration", "oob", "stores")


#: The maps of an array the kernel stores into besides its output: --map
#: count:<array> and the like (a described run's).
WRITTEN_IMAGE_MAPS = ("count", "writer", "iteration")


def check_described_map(request: RunRequest, name: str) -> None:
    """A described run's image of another map (error, reads) is refused
    before the run: those images assume C = A @ B (its reads are in maps.npz).
    A map of another written array (``count:<array>``) must name one the
    kernel stores into."""
    base, _, array = name.partition(":")
    if array:
        from .derived.transform import written_arrays
        from .sources.loader import load_plan

        written = written_arrays(load_plan(request)) if request.arguments else ()
        if array not in written:
            also = f" (it also stores into {', '.join(written)})" if written else ""
            raise ThreadMapError(f"--map {name}: the kernel stores into no array {array!r} "
                                 f"besides its output{also}")
        return
    if request.arguments and name not in DESCRIBED_IMAGE_MAPS:
        raise ThreadMapError(f"--map {name}: a kernel run as it is is drawn as "
                             f"{', '.join(DESCRIBED_IMAGE_MAPS)} so far (its read counts are "
                             "in maps.npz, reads_<input>)")


def check_image_options(args: argparse.Namespace) -> tuple[int, int]:
    """Refuse bad --map / --png / --svg / --size before anything runs."""
    base, colon, array = args.map.partition(":")
    if (base not in IMAGE_MAPS if not colon else base not in WRITTEN_IMAGE_MAPS or not array):
        raise ThreadMapError(f"--map must be one of {', '.join(IMAGE_MAPS)}, or "
                             f"{'/'.join(WRITTEN_IMAGE_MAPS)}:<array> for another array the "
                             f"kernel stores into, not {args.map!r}")
    for option, path, suffix in (("--png", getattr(args, "png", None), ".png"),
                                 ("--svg", getattr(args, "svg", None), ".svg")):
        if path and not path.lower().endswith(suffix):
            raise ThreadMapError(f"{option} needs a file name ending in {suffix}, not {path!r}")
    size = parse_dims(getattr(args, "size", "1200x900"), "--size")
    if len(size) != 2 or not all(16 <= d <= 16384 for d in size):
        raise ThreadMapError(f"--size takes WxH in pixels, 16 to 16384 each, not {args.size!r}")
    return size


def _cmd_sweep(args: argparse.Namespace, sweep_exporter) -> int:
    from .backends.common import TIMING
    from .backends.kernel_output import STDOUT
    from .sweep import SweepFolder, parse_list, run_sweep_ahead, sweep_defaults

    check_image_options(args)
    check_numbers(args)
    check_output_path("--out", args.out, folder=True)
    base = request_from_args(args, "1", "32")
    if not args.no_images:
        check_described_map(base, args.map)
    default_grids, default_blocks = sweep_defaults(base)
    grids = parse_list(args.grids or default_grids, "--grids")
    blocks = parse_list(args.blocks or default_blocks, "--blocks")
    check_gpu_model(args.gpu_model)

    if not args.yes:
        from .engine import check_estimate
        from .sweep import one_tier, sweep_requests
        check_estimate(base, one_tier(sweep_requests(base, grids, blocks)))

    from .engine import run

    cells = []
    progress = CommandLineProgress()
    stdout = sys.stdout
    run_one = partial(run, time_limit=time_limit(args, base))
    out = Path(args.out)
    images = None
    # Locked for the whole sweep; each of its files is written whole (sweep.py).
    with OutputFolder(out):
        folder = SweepFolder(out)
        try:
            for cell in run_sweep_ahead(base, grids, blocks, progress=progress,
                                        run_one=run_one):
                cells.append(cell)
                # (to the stream as it was, STDOUT first: see kernel_output.STDOUT)
                with STDOUT, progress.lock:
                    progress.clear()
                    print(sweep_line(cell), file=stdout, flush=True)
                # Its files, while the next configurations run (never while one
                # times itself: TIMING).
                with TIMING:
                    folder.add(cell)
                    if sweep_exporter is not None and not args.no_images:
                        images = images or sweep_exporter(out, args.map)
                        images.add(cell)
        finally:
            progress.clear()
        folder.finish(cells, occupancy=lambda cell: occupancy_for(cell.result, args))
        if images is not None:
            images.finish(cells)
    print(f"wrote {out / 'summary.csv'}, {out / 'summary.json'} and {len(cells)} configurations")
    return 0


def sweep_line(cell) -> str:
    """One configuration of a sweep: its launch, verdict, and kernel time with
    where it was measured."""
    from .result import BACKEND_SHORT, format_seconds

    launch = f"{cell.label:>16}"
    if cell.result is None:
        return f"{launch} ERROR: {cell.error}"
    result = cell.result
    timing = result.shown_timing
    time_text = (f"  {timing.what} {format_seconds(timing.seconds)} "
                 f"[{BACKEND_SHORT.get(timing.backend, timing.backend)}]" if timing else "")
    return f"{launch} {result.verdict.word}{time_text}" + (
        f"  ({result.verdict.short_reasons})" if not result.verdict.passed else "")


def _cmd_cache(args: argparse.Namespace) -> int:

    directory = cache_dir()
    if args.clear:
        files, size = clear_cache(directory)
        print(f"removed {files:,} files ({format_bytes(size)}) from {directory}")
        return 0
    entries = cache_entries(directory)
    size = sum(e.nbytes for e in entries)
    print(f"{directory}: {len(entries):,} generated module{'s' if len(entries) != 1 else ''}, "
          f"{format_bytes(size)} "
          f"(kept to {format_bytes(CACHE_LIMIT_BYTES)}, least recently used removed first)")
    sandboxes = directory.parent / "sandboxed"
    if sandboxes.is_dir():
        folders = [f for f in sandboxes.iterdir() if f.is_dir()]
        used = sum(f.stat().st_size for folder in folders for f in folder.rglob("*")
                   if f.is_file() and not f.is_symlink())
        print(f"{sandboxes}: {len(folders):,} sandboxed kernel{'s' if len(folders) != 1 else ''}"
              f" (each its own folder), {format_bytes(used)}")
    return 0


def _cmd_hunt(args: argparse.Namespace) -> int:
    """``threadmap hunt``: exit 0 whether or not a failing case was found."""
    from .search import hunt, write_hunt

    check_numbers(args)
    check_output_path("--out", args.out, folder=True)
    if args.reference is not None:
        from .reference_code import parse_reference

        parse_reference(args.reference)
    base = RunRequest(kernel=args.kernel, kernel_file=args.kernel_file,
                      dtype=args.dtype or "float32", seed=args.seed, backend=args.backend,
                      scalars=parse_scalars(args.scalar), tier=args.tier,
                      reference=args.reference)
    from .sources.arguments import describe_request
    from .sources.loader import load_plan

    # A kernel that is not C = A @ B is hunted on its own arrays, as
    # described.  A matmul's description gives nothing the shapes searched
    # would not change, and its dimension scalars (m, k, n) would pin the
    # sizes every case changes: its hunt starts from the bare request.
    described = describe_request(base, args.arg, dtype_given=args.dtype,
                                 as_it_is_unless_matmul=True)
    if described.arguments:
        base = described
    base = base.with_(kernel=load_plan(base).name)  # a file that does not parse stops here

    def progress(fraction: float, message: str) -> None:
        print(f"  [{fraction:4.0%}] {message}", file=sys.stderr, flush=True)

    with OutputFolder(args.out, files=("hunt.json",) + RUN_FILES) as folder:
        if args.grid and not args.block:
            raise ThreadMapError("hunt --grid needs --block too (a grid alone fixes nothing "
                                 "the shapes would not change)")
        report = hunt(base, budget=args.budget, progress=progress,
                      grid=parse_dims(args.grid, "--grid") if args.grid else None,
                      block=parse_dims(args.block, "--block") if args.block else None)
        for case in report.cases:
            print(f"  {case.verdict:7s} {case.label()}  {case.seconds:.1f} s")
        print(report.summary())
        write_hunt(report, Path(args.out), folder)
        folder.publish()
    print(f"  wrote {Path(args.out) / 'hunt.json'}"
          + (" and the failing case's result.json and maps.npz" if report.result else ""))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """``threadmap check``: 0 when every case ran (whatever the verdicts)."""
    from .check import NoKernels, parse_launches, parse_shapes, run_check, write_report

    check_numbers(args)
    if args.shapes is not None and (args.reference or any(
            "[" in item for item in args.arg)):
        raise RequestError("--shapes and --arg arrays (or --reference, which needs them) both "
                           "give the shapes: give one")
    shapes = parse_shapes(args.shapes or "64x64x64,100x37x90")
    launches = parse_launches(args.launches)
    check_cases(shapes, launches, args)
    check_output_path("--out", args.out, folder=True)
    out = Path(args.out)
    workers = args.workers
    if workers is not None and workers > usable_cores():
        print(f"threadmap: --workers {workers}: using {usable_cores()}, the cores here",
              file=sys.stderr)
        workers = usable_cores()

    def progress(done: int, total: int) -> None:
        print(f"  [{done}/{total}] kernels checked", file=sys.stderr, flush=True)

    skipped: list[tuple[str, str]] = []
    with OutputFolder(out, files=("report.csv", "report.json", "report.html")) as folder:
        try:
            rows = run_check(args.paths, shapes, launches, dtype=args.dtype, seed=args.seed,
                             backend=args.backend, scheduler=args.scheduler, tier=args.tier,
                             workers=workers, progress=progress,
                             case_limit=args.time_limit, described_as=tuple(args.arg),
                             reference=args.reference, follow_links=args.follow_links,
                             skipped=lambda path, why: skipped.append((path, why)))
        except NoKernels:
            # an empty report, and the error (alone: its one line says why)
            write_report([], out, folder=folder, skipped=skipped)
            folder.publish()
            raise
        write_report(rows, out, folder=folder, skipped=skipped)
        folder.publish()
    for path, why in sorted(skipped):
        print(f"  skipped {printable(path)}: {printable(why)}", file=sys.stderr)
    counts = {word: sum(r["verdict"] == word for r in rows)
              for word in ("PASS", "CHECKED", "FAIL", "ERROR")}
    checked = f"{counts['CHECKED']} CHECKED (no reference), " if counts["CHECKED"] else ""
    files_skipped = (f"; {len(skipped)} file{'s' if len(skipped) != 1 else ''} skipped"
                     if skipped else "")
    print(f"{len(rows)} cases: {counts['PASS']} PASS, {checked}{counts['FAIL']} FAIL, "
          f"{counts['ERROR']} ERROR{files_skipped}; wrote {out / 'report.csv'}, report.json, "
          "report.html")
    return 0


def _cmd_kernels() -> int:
    for name, spec in CATALOGUE.items():
        launch = spec.default_launch(128, 256, 128)
        print(f"{name:22s} {spec.title}\n{'':22s} {spec.summary} Preset launch on "
              f"128x256x128: {launch}")
    return 0


class Terminated(BaseException):
    """SIGTERM or SIGHUP: the command ends as on Ctrl-C (a BaseException, so
    that no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _ending_on_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread, so the
    command ends its child processes and leaves its outputs as they were."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum, frame):
        raise Terminated(signum)

    previous = {}
    for number in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if number is not None:
            previous[number] = signal.signal(number, end)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _one_line(message: object) -> str:
    """A refusal's message on one line (numba's and others' run over several),
    its control characters shown, not obeyed."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return printable("; ".join(lines))


#: Control characters (C0 but tab and newline, DEL, C1) as escapes: a kernel's
#: prints or a file's name must not clear lines, fake them or retitle the
#: terminal (ESC [2K, ESC ]0;...BEL).
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0, 9), *range(11, 32), *range(127, 160))}


def printable(text: str) -> str:
    """``text`` with its terminal control characters escaped."""
    return text.translate(_CONTROLS)


def main(argv: Sequence[str] | None = None, *, exporter: ImageExporter | None = None,
         sweep_exporter: Callable | None = None, opener: Callable | None = None) -> int:
    """Run the command line; return the exit status.

    0 when the run happened (whatever its verdict); 2 with a one-line message
    for bad input; 1 when the kernel failed to compile or run, or was cancelled;
    130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP (children ended, outputs as
    they were).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "open":
        return _cmd_open(args, opener)
    from .engine import FILE_COMPILE_LIMIT, compile_files_in_children

    # numba types and compiles a kernel file in its sandboxed child, within
    # --time-limit when that is shorter (check's per-case limit covers them)
    given_limit = getattr(args, "time_limit", None)
    restore = compile_files_in_children(
        min(FILE_COMPILE_LIMIT, given_limit or FILE_COMPILE_LIMIT), typist=False)
    try:
        return _dispatch(args, parser, exporter, sweep_exporter)
    finally:
        restore()


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser, exporter,
              sweep_exporter) -> int:
    """The command ``args`` names, with its signals and its one-line errors."""
    try:
        with _ending_on_signals():
            if args.command == "run":
                return _cmd_run(args, exporter)
            if args.command == "kernels":
                return _cmd_kernels()
            if args.command == "sweep":
                return _cmd_sweep(args, sweep_exporter)
            if args.command == "cache":
                return _cmd_cache(args)
            if args.command == "hunt":
                return _cmd_hunt(args)
            if args.command == "check":
                return _cmd_check(args)
            parser.print_help()
            return 0
    except (KeyboardInterrupt, Terminated) as exc:
        # End any child process; one line; the shell's status for the signal.
        from .backends.child import stop_all
        stop_all()
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"threadmap: stopped by {what}; child processes ended, earlier outputs kept",
              file=sys.stderr)
        return 128 + signum
    except (KernelCompileError, KernelRuntimeError, RunCancelled, RunTimedOut) as exc:
        print(f"threadmap: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    except ThreadMapError as exc:
        print(f"threadmap: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # (``| head``: whoever read our output has what it wanted)
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as exc:  # an output that cannot be written
        print(f"threadmap: error: cannot write {exc.filename or 'the output'}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2


def _cmd_open(args: argparse.Namespace, opener: Callable | None) -> int:
    """``threadmap open FILE``: the window on a kernel file (checked first)."""
    from .sources.source import kernel_names

    try:
        path = Path(args.kernel_file)
        if not path.exists():
            raise ThreadMapError(f"{path}: no such file")
        kernel_names(path)  # refused here, with its line, if it has no kernel
        if opener is None:
            raise ThreadMapError("threadmap open needs the desktop app (PySide6)")
    except ThreadMapError as exc:
        print(f"threadmap: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    return opener(str(path))


if __name__ == "__main__":
    sys.exit(main())
