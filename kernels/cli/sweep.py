"""``threadmap sweep``: one kernel across blocks x threads-per-block."""
from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from ..analyses.occupancy import check_gpu_model
from ..outputs import OutputFolder
from ..words import counted
from .options import (
    check_described_map,
    check_image_options,
    check_numbers,
    check_output_path,
    occupancy_for,
    request_from_args,
    time_limit,
)
from .printing import sweep_line
from .progress import CommandLineProgress


def sweep_command(args: argparse.Namespace, sweep_exporter) -> int:
    from ..backends.common import TIMING
    from ..backends.kernel_output import STDOUT
    from ..sweep import SweepFolder, parse_list, run_sweep_ahead, staged_sweep, sweep_defaults

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
        from ..engine import check_estimate
        from ..sweep import one_tier, sweep_requests
        check_estimate(base, one_tier(sweep_requests(base, grids, blocks)))

    from ..engine import run

    cells = []
    progress = CommandLineProgress()
    stdout = sys.stdout
    run_one = partial(run, time_limit=time_limit(args, base))
    out = Path(args.out)
    images = None
    # Locked for the whole sweep, written into a folder of its own there, and
    # its files put in place of the previous sweep's once it is done: cut
    # short, it leaves the previous sweep whole (sweep.staged_sweep).
    with OutputFolder(out), staged_sweep(out) as staged:
        folder = SweepFolder(staged)
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
                        images = images or sweep_exporter(staged, args.map)
                        images.add(cell)
        finally:
            progress.clear()
        folder.finish(cells, occupancy=lambda cell: occupancy_for(cell.result, args))
        if images is not None:
            images.finish(cells)
    print(f"wrote {out / 'summary.csv'}, {out / 'summary.json'} and "
          f"{counted(len(cells), 'configuration')}")
    return 0
