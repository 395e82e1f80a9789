"""The command line's options made into a request, each checked before
anything runs, with one message whichever command was given."""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from ..errors import ThreadMapError
from ..estimate import KERNEL_FILE_TIME_LIMIT
from ..presets import default_launch
from ..request import RunRequest, check_request, parse_dims, parse_scalars, parse_shape
from .parser import IMAGE_SIZE


def request_from_args(args: argparse.Namespace, grid: str | None,
                      block: str | None) -> RunRequest:
    """A RunRequest from parsed options; the launch defaults to the kernel's preset."""
    m, k, n = parse_shape(args.shape if args.shape is not None else DEFAULT_SHAPE)
    kernel = args.kernel if args.kernel or args.kernel_file else "grid-stride"
    reference = getattr(args, "reference", None)
    if reference is not None:
        from ..reference_code import parse_reference

        parse_reference(reference)
    request = RunRequest(kernel=kernel, kernel_file=args.kernel_file, m=m, k=k, n=n,
                         dtype=args.dtype or "float32", pattern=args.pattern, seed=args.seed,
                         backend=args.backend, scalars=parse_scalars(args.scalar),
                         tier=args.tier, reference=reference)
    from ..sources.arguments import describe_request

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
        from ..check import check_scheduler_address

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
    from ..engine import occupancy_on

    return occupancy_on(result, args.gpu_model, args.registers)

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
        from ..derived.transform import written_arrays
        from ..sources.loader import load_plan

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
    size = parse_dims(getattr(args, "size", IMAGE_SIZE), "--size")
    if len(size) != 2 or not all(16 <= d <= 16384 for d in size):
        raise ThreadMapError(f"--size takes WxH in pixels, 16 to 16384 each, not {args.size!r}")
    # (--map or --size with no image to draw had been ignored without a word)
    drawn = (getattr(args, "png", None) or getattr(args, "svg", None)) \
        if args.command == "run" else not getattr(args, "no_images", False)
    given = [option for option, differs in (
        ("--map", args.map != "count"),
        ("--size", size != parse_dims(IMAGE_SIZE, "--size"))) if differs]
    if given and not drawn:
        instead = "give --png or --svg" if args.command == "run" else "leave out --no-images"
        raise ThreadMapError(f"{' and '.join(given)} {'are' if len(given) > 1 else 'is'} for "
                             f"an image, and none is drawn: {instead}")
    return size
