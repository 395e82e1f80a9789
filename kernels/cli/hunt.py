"""``threadmap hunt``: the smallest shape and launch where a kernel fails."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ThreadMapError
from ..outputs import OutputFolder
from ..request import RunRequest, check_launch, parse_dims, parse_scalars
from ..run_files import RUN_FILES
from .options import check_numbers, check_output_path


def hunt_command(args: argparse.Namespace) -> int:
    """``threadmap hunt``: exit 0 whether or not a failing case was found."""
    from ..search import hunt, write_hunt

    check_numbers(args)
    check_output_path("--out", args.out, folder=True)
    if args.reference is not None:
        from ..reference_code import parse_reference

        parse_reference(args.reference)
    base = RunRequest(kernel=args.kernel, kernel_file=args.kernel_file,
                      dtype=args.dtype or "float32", seed=args.seed, backend=args.backend,
                      scalars=parse_scalars(args.scalar), tier=args.tier,
                      reference=args.reference)
    from ..sources.arguments import describe_request
    from ..sources.loader import check_scalar_names, load_plan

    # A kernel that is not C = A @ B is hunted on its own arrays, as
    # described.  A matmul's description gives nothing the shapes searched
    # would not change, and its dimension scalars (m, k, n) would pin the
    # sizes every case changes: its hunt starts from the bare request.
    described = describe_request(base, args.arg, dtype_given=args.dtype,
                                 as_it_is_unless_matmul=True)
    if described.arguments:
        base = described
    plan = load_plan(base)  # a file that does not parse stops here
    base = base.with_(kernel=plan.name)
    # What every case would refuse is refused here, once: each case had been
    # skipped for it, and the hunt said "no failing case" and exited 0.
    # (only the names: a scalar worked out from the shape, such as a square
    # matrix's size, is worked out again in each case)
    if not base.arguments:
        check_scalar_names(plan, base)
    if args.grid and not args.block:
        raise ThreadMapError("hunt --grid needs --block too (a grid alone fixes nothing "
                             "the shapes would not change)")
    grid = parse_dims(args.grid, "--grid") if args.grid else None
    block = parse_dims(args.block, "--block") if args.block else None
    if block is not None:
        check_launch(grid or (1,), block)

    def progress(fraction: float, message: str) -> None:
        print(f"  [{fraction:4.0%}] {message}", file=sys.stderr, flush=True)

    with OutputFolder(args.out, files=("hunt.json",) + RUN_FILES) as folder:
        report = hunt(base, budget=args.budget, progress=progress, grid=grid, block=block)
        for case in report.cases:
            print(f"  {case.verdict:7s} {case.label()}  {case.seconds:.1f} s")
        print(report.summary())
        write_hunt(report, Path(args.out), folder)
        folder.publish()
    print(f"  wrote {Path(args.out) / 'hunt.json'}"
          + (" and the failing case's result.json and maps.npz" if report.result else ""))
    return 0
