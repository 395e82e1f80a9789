"""``threadmap run``: one kernel and launch, its outputs, the run that
follows it on a GPU, and ``--watch``."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

from ..analyses.occupancy import check_gpu_model
from ..errors import ThreadMapError
from ..outputs import OutputFolder
from ..request import RunRequest
from ..run_files import RUN_FILES, MapsWrittenAhead, update_result_json, write_outputs
from ..watch import FileWatcher
from .options import (
    check_described_map,
    check_image_options,
    check_numbers,
    check_output_path,
    occupancy_for,
    request_from_args,
    time_limit,
)
from .printing import print_summary, printable
from .progress import CommandLineProgress

#: Called with (result, png_path, svg_path) to export heatmap images.
ImageExporter = Callable[..., None]


def run_command(args: argparse.Namespace, exporter: ImageExporter | None) -> int:
    from ..backends.child import warm_for

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
    from ..engine import check_estimate, run

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
        return watch(args, request, result, exporter, size)
    if result.follows:
        result = follow(result, args, out, occupancy, maps)
    keep_until_exit(result, maps)
    return 0


def follow(result, args: argparse.Namespace, out: Path, occupancy, maps):
    """The run that follows a first answer (the GPU's, after the CPU
    emulation's): its times, verdict and agreement printed, and result.json
    written again with them (maps.npz, the first answer's, stays)."""
    from ..engine import confirm
    from ..result import BACKEND_SHORT

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
#: freeing a 4096 x 4096 run's arrays as ``run_command`` returned (C, its
#: reference, the maps: ~0.6 GB, most of it mapped from the child's memory)
#: took 0.14 s of a 2.5 s command.  One slot: a process that runs many
#: commands (the tests) holds only the last one's.
_kept: list = []


def keep_until_exit(*made) -> None:
    _kept[:] = made


#: How often ``--watch`` looks at the kernel file (seconds).
WATCH_INTERVAL = 0.25


def watch(args: argparse.Namespace, request: RunRequest, previous, exporter,
           size: tuple[int, int]) -> int:
    """``run --watch``: each save of the kernel file runs the request again,
    read again from the options and the file (its THREADMAP_ARGS, its own
    launch); a run that fails leaves the last good outputs in place and says
    why, and the next save tries again.  Ends with Ctrl-C (or SIGTERM)."""
    from ..engine import run

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
