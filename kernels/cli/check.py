"""``threadmap check``: many kernel files on many shapes and launches."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import RequestError
from ..machine import usable_cores
from ..outputs import OutputFolder
from ..words import counted
from .options import check_cases, check_numbers, check_output_path
from .printing import printable


def check_command(args: argparse.Namespace) -> int:
    """``threadmap check``: 0 when every case ran (whatever the verdicts)."""
    from ..check import NoKernels, parse_launches, parse_shapes, run_check, write_report

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
    print(f"{counted(len(rows), 'case')}: {counts['PASS']} PASS, {checked}{counts['FAIL']} FAIL, "
          f"{counts['ERROR']} ERROR{files_skipped}; wrote {out / 'report.csv'}, report.json, "
          "report.html")
    return 0
