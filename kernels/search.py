"""A search for the smallest case where a kernel fails.

A kernel that passes its author's test fails on another shape or launch:
the seed's kernel passes on 128 x 256 x 128 with all-ones inputs and fails
wherever M != N or the block is not 1,024 threads.  :func:`hunt` tries shapes
and launches chosen to break index arithmetic, smallest first, and stops at
the first that fails:

* shapes with M, K or N equal to 1; primes; sizes that are not multiples of
  a block or a tile (16, 32); M != N;
* launches with fewer threads than elements (the work must stride), more
  threads than elements (the extra threads must stay out), one block against
  many, and a block that is not square (2-D kernels).  Launches have the
  kernel's own dimensions (1-D or 2-D): a 2-D kernel on a 1-D launch covers
  one row by design, which says nothing of the kernel.

Every case runs as a kernel-file run does: in a child process with a time
limit, so a kernel that hangs is a failed case, never a hung search.
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import (
    KernelCompileError,
    KernelRuntimeError,
    RequestError,
    RunCancelled,
    RunTimedOut,
    ThreadMapError,
)
from .request import RunRequest, check_request
from .result import RunResult

#: (M, K, N): ones, primes, not multiples of 16 or 32, M != N; smallest first
SHAPES = ((1, 1, 1), (1, 3, 5), (5, 3, 1), (3, 1, 5), (3, 5, 7), (7, 5, 3), (13, 2, 11),
          (16, 16, 16), (17, 5, 31), (31, 17, 29), (33, 7, 65), (64, 64, 64), (100, 37, 90),
          (129, 31, 97))

#: seconds one case may take (a kernel that hangs fails here)
CASE_LIMIT = 30.0


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _relation(grid: tuple[int, ...], block: tuple[int, ...], m: int, n: int) -> str:
    """How a launch's threads compare with C's elements, in words (true for
    this shape: a block of 32 on 1 x 1 is more threads than elements)."""
    threads = 1
    for d in grid + block:
        threads *= d
    elements = m * n
    if threads < elements:
        return "fewer threads than elements (the work must stride)"
    if threads == elements:
        return "exactly one thread per element"
    return "more threads than elements (the extra ones must stay out)"


def launches(m: int, n: int, launch_dims: int, x_rows: bool,
             block: tuple[int, ...] | None = None) -> list[tuple[str, tuple, tuple]]:
    """(why, grid, block) of the launches tried on an ``m x n`` C.  With
    ``block`` (the kernel's own, or one pinned), every launch uses it and only
    the grid varies."""
    elements = m * n
    x, y = (m, n) if x_rows else (n, m)
    if block is not None:
        if len(block) == 1:
            grids = [("covering C", (_cdiv(elements, block[0]),)), ("one block", (1,)),
                     ("3 blocks too many", (_cdiv(elements, block[0]) + 3,))]
        else:
            bx, by = block
            grids = [("covering C", (_cdiv(x, bx), _cdiv(y, by))), ("one block", (1, 1)),
                     ("one block too many each way", (_cdiv(x, bx) + 1, _cdiv(y, by) + 1))]
        size = " x ".join(map(str, block))
        return [(f"{what}, the kernel's {size} blocks: {_relation(grid, block, m, n)}",
                 grid, block) for what, grid in grids]
    if launch_dims == 1:
        named = [
            ("blocks of 256 covering C", (_cdiv(elements, 256),), (256,)),
            ("one warp", (1,), (32,)),
            ("one block of 1,024 threads", (1,), (1024,)),
            ("3 blocks of 64 too many", (_cdiv(elements, 64) + 3,), (64,)),
            ("many small blocks of 32", (_cdiv(elements, 32),), (32,)),
        ]
    else:
        named = [
            ("16 x 16 blocks covering C", (_cdiv(x, 16), _cdiv(y, 16)), (16, 16)),
            ("one 8 x 8 block", (1, 1), (8, 8)),
            ("16 x 16 blocks, one too many each way", (_cdiv(x, 16) + 1, _cdiv(y, 16) + 1),
             (16, 16)),
            ("blocks that are not square: 32 x 8", (_cdiv(x, 32), _cdiv(y, 8)), (32, 8)),
            ("one block of 32 x 32", (1, 1), (32, 32)),
        ]
    return [(f"{what}: {_relation(grid, block_, m, n)}", grid, block_)
            for what, grid, block_ in named]


def kernel_block(plan) -> tuple[int, ...] | None:
    """The block a kernel needs, when it says so itself: its file's own launch,
    or the shape of its shared tile (a kernel that stages TPB x TPB tiles
    runs on TPB x TPB blocks, x first).  None when any block will do."""
    launch = plan.kernel.launch
    if launch is not None and launch.block:
        return tuple(launch.block)
    from .derived.local_types import block_array_specs
    from .errors import ThreadMapError

    try:
        specs = block_array_specs(plan, "float32")
    except ThreadMapError:
        return None
    for array in specs:
        if array.kind == "shared" and len(array.shape) == plan.launch_dims:
            shape = tuple(int(d) for d in array.shape)
            return shape if len(shape) == 1 else (shape[1], shape[0])
    return None


def described_sizes(arguments: tuple) -> tuple[int, ...]:
    """The distinct dimensions of a described run's arrays, in order of first
    appearance: a hunt gives each a size of its own (``resized``).  A
    dimension of 1 is not one: a total of one element (``total[0]``) stays
    one, and a scalar equal to 1 (a step) stays as it is."""
    found: list[int] = []
    for argument in arguments:
        for dim in getattr(argument, "shape", ()):
            if dim != 1 and dim not in found:
                found.append(int(dim))
    return tuple(found)


def resized(arguments: tuple, sizes: dict[int, int]) -> tuple:
    """A described run's arguments with each dimension ``d`` made
    ``sizes[d]``: arrays that were as long stay as long as each other (x, y
    and out of a vector add), and an integer scalar equal to a dimension (its
    ``n``) follows it."""
    from .sources.arguments import ArrayArgument, ScalarArgument

    changed = []
    for argument in arguments:
        if isinstance(argument, ArrayArgument):
            changed.append(ArrayArgument(argument.name, argument.dtype,
                                         tuple(sizes.get(d, d) for d in argument.shape)))
        elif isinstance(argument, ScalarArgument) and argument.is_integer \
                and argument.value in sizes:
            changed.append(ScalarArgument(argument.name, sizes[argument.value], argument.dtype))
        else:
            changed.append(argument)
    return tuple(changed)


@dataclass
class Case:
    """One (shape, launch) tried, and what it gave."""

    shape: tuple[int, int, int]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    why: str
    verdict: str = ""  # "PASS", "FAIL", or "skipped"
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: a kernel run as it is: its arguments for this case (``shape`` is then
    #: its output's as drawn, rows x 1 x columns: a 1-D output wrapped), and
    #: each of its dimensions resized, (from, to)
    arguments: tuple = ()
    sizes: tuple[tuple[int, int], ...] = ()

    @property
    def threads(self) -> int:
        total = 1
        for d in self.grid + self.block:
            total *= d
        return total

    @property
    def size_label(self) -> str:
        """The case's shapes: M x K x N, or a described run's arrays."""
        if self.arguments:
            return ", ".join(str(a) for a in self.arguments if hasattr(a, "shape"))
        return "x".join(map(str, self.shape))

    @property
    def elements(self) -> int:
        """Elements of every array of the case (what "smallest" orders by)."""
        if self.arguments:
            return sum(math.prod(a.shape) for a in self.arguments if hasattr(a, "shape"))
        return math.prod(self.shape)

    def label(self) -> str:
        return (f"{self.size_label}, grid {'x'.join(map(str, self.grid))} x block "
                f"{'x'.join(map(str, self.block))} ({self.why})")

    def row(self) -> dict:
        row = {"shape": list(self.shape), "grid": list(self.grid), "block": list(self.block),
               "why": self.why, "verdict": self.verdict, "reasons": self.reasons,
               "seconds": round(self.seconds, 3)}
        if self.arguments:
            row["arguments"] = [str(a) for a in self.arguments]
        return row


@dataclass
class HuntReport:
    """What a hunt found: every case tried, and the smallest failing one."""

    kernel: str
    kernel_file: str
    cases: list[Case]
    failing: Case | None
    #: the failing case's result (None when none failed, or it hung or crashed)
    result: RunResult | None
    budget_seconds: float
    seconds: float
    #: why the search stopped before the end, if it did
    stopped: str = ""

    @property
    def hint(self) -> str:
        """What the failing case suggests, when it is a common pattern."""
        failing = self.failing
        if failing is None or self.result is None:
            return ""
        verdict = self.result.verdict
        if "fewer threads than elements" in failing.why and verdict.unwritten and \
                not (verdict.collided or verdict.out_of_bounds):
            return ("the kernel computes one element per thread, so it needs a launch that "
                    f"covers {self.result.output}; a grid-stride loop removes that need")
        return ""

    def summary(self) -> str:
        tried = sum(c.verdict != "skipped" for c in self.cases)
        if self.failing is not None:
            return (f"smallest failing case (of {tried} tried): {self.failing.label()}: "
                    + "; ".join(self.failing.reasons[:3])
                    + (f" ({self.hint})" if self.hint else "")
                    + "".join(f"\n  why ({d.rule}): " + d.describe().replace("\n", "\n  ")
                              for d in self.diagnoses))
        return (f"no failing case: {tried} cases tried in {self.seconds:.0f} s"
                + (f" ({self.stopped})" if self.stopped else ", every case of the search"))

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "kernel_file": self.kernel_file,
                "budget_seconds": self.budget_seconds, "seconds": round(self.seconds, 2),
                "stopped": self.stopped or None,
                "failing": self.failing.row() if self.failing else None,
                "hint": self.hint or None,
                "diagnoses": [d.as_dict() for d in self.diagnoses],
                "cases": [c.row() for c in self.cases]}

    @property
    def diagnoses(self) -> tuple:
        """The failing case's diagnoses (analyses/diagnoses.py)."""
        return self.result.diagnoses if self.failing is not None and self.result is not None \
            else ()


def hunt_cases(base: RunRequest, grid: tuple[int, ...] | None = None,
               block: tuple[int, ...] | None = None) -> list[Case]:
    """Every case of the search for ``base``'s kernel, smallest first; with
    ``grid`` and ``block`` pinned, only the shapes vary; with ``block`` alone
    (or the kernel's own block), the grids."""
    from .sources.arguments import drawn_shape
    from .sources.loader import load_plan

    if base.given_inputs:
        raise RequestError("a hunt resizes the arrays it runs on: it cannot resize the "
                           "caller's own arrays (args=...); describe them instead (their "
                           "dtypes and shapes)")
    plan = load_plan(base)
    block = block or kernel_block(plan)
    cases = []
    sizes = described_sizes(base.arguments)
    for shape in SHAPES:
        m, k, n = shape
        arguments, mapping = (), {}
        if base.arguments:
            # Each distinct dimension of the arrays its own size: M, N, then K
            # of the shape (a transpose's rows and columns differ, as M and N
            # do); a fourth and later keep their sizes.  Arrays all 1-D: the
            # first dimension M x N (1 to 12,513 elements, as C's are, so that
            # one block is fewer threads than elements), then K, then M.
            one_d = all(len(a.shape) == 1 for a in base.arguments if hasattr(a, "shape"))
            mapping = dict(zip(sizes, (m * n, k, m) if one_d else (m, n, k)))
            arguments = resized(base.arguments, mapping)
            output = next(a for a in arguments if a.name == plan.output)
            m, n = drawn_shape(output.shape)
            shape = (m, 1, n)
        if grid is not None and block is not None:
            cases.append(Case(shape, grid, block,
                              f"the launch given: {_relation(grid, block, m, n)}",
                              arguments=arguments, sizes=tuple(mapping.items())))
            continue
        for why, grid_, block_ in launches(m, n, plan.launch_dims, plan.x_indexes == "rows",
                                           block):
            if base.arguments:  # (the output by its own name)
                why = why.replace("covering C", f"covering {plan.output}")
            cases.append(Case(shape, grid_, block_, why, arguments=arguments,
                              sizes=tuple(mapping.items())))
    seen, unique = set(), []
    for case in sorted(cases, key=lambda c: (c.elements, c.threads)):
        key = (case.shape, case.arguments, case.grid, case.block)
        if key not in seen:
            seen.add(key)
            unique.append(case)
    return unique


def case_request(base: RunRequest, case: Case) -> RunRequest:
    """``base`` on ``case``'s shapes and launch."""
    launch = dict(grid=case.grid, block=case.block, launch_source=f"the hunt: {case.why}")
    m, k, n = case.shape
    if not case.arguments:
        return base.with_(m=m, k=k, n=n, **launch)
    values = {a.name: a.value for a in case.arguments if not hasattr(a, "shape")}
    sizes = dict(case.sizes)

    def follows(name: str, value):
        # a described scalar as resized; one given apart (--scalar n=4096, the
        # app's Scalars) follows a dimension it equals, as a described one does
        if name in values:
            return values[name]
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            return type(value)(sizes.get(int(value), value))
        return value

    return base.with_(arguments=case.arguments, m=m, k=1, n=n, scalars=tuple(
        (name, follows(name, value)) for name, value in base.scalars), **launch)


def hunt(base: RunRequest, budget: float = 60.0,
         progress: Callable[[float, str], None] | None = None,
         cancel: Callable[[], bool] | None = None,
         run_one: Callable[..., RunResult] | None = None,
         grid: tuple[int, ...] | None = None,
         block: tuple[int, ...] | None = None) -> HuntReport:
    """Try :func:`hunt_cases` in order until one fails or ``budget`` seconds
    pass (``grid`` / ``block``: a launch pinned, see hunt_cases)."""
    from .engine import run

    run_one = run_one or run
    progress = progress or (lambda fraction, message: None)
    cancel = cancel or (lambda: False)
    started = time.monotonic()
    cases = hunt_cases(base, grid, block)
    tried: list[Case] = []
    stopped = ""
    for index, case in enumerate(cases):
        left = budget - (time.monotonic() - started)
        if left <= 0:
            stopped = f"the budget of {budget:.0f} s ran out after {len(tried)} cases"
            break
        if cancel():
            raise RunCancelled("hunt cancelled")
        progress(index / len(cases), f"case {index + 1} of {len(cases)}: {case.label()}")
        request = case_request(base, case)
        tried.append(case)
        began = time.monotonic()
        try:
            check_request(request)
        except RequestError as exc:
            case.verdict, case.reasons = "skipped", [str(exc)]
            continue
        try:
            result = run_one(request, cancel=cancel, isolate=True, compile_ahead=False,
                             time_limit=max(1.0, min(CASE_LIMIT, left)))
        except RunCancelled:
            raise
        except RunTimedOut as exc:
            case.seconds = time.monotonic() - began
            if time.monotonic() - started >= budget:
                case.verdict, case.reasons = "skipped", [f"the budget ran out: {exc}"]
                stopped = f"the budget of {budget:.0f} s ran out during case {index + 1}"
                break
            if not exc.kernel_hung:  # a slow compile or start-up: not the kernel's doing
                case.verdict, case.reasons = "skipped", [str(exc)]
                continue
            case.verdict, case.reasons = "FAIL", [f"did not finish: {exc}"]
            return _report(base, tried, case, None, budget, started)
        except (KernelCompileError, KernelRuntimeError) as exc:
            case.seconds = time.monotonic() - began
            case.verdict, case.reasons = "FAIL", [str(exc)]
            return _report(base, tried, case, None, budget, started)
        except ThreadMapError as exc:  # refused for this shape (a scalar it cannot take, ...)
            case.verdict, case.reasons = "skipped", [str(exc)]
            continue
        case.seconds = time.monotonic() - began
        case.verdict, case.reasons = result.verdict.word, list(result.verdict.reasons)
        if not result.verdict.passed:
            return _report(base, tried, case, result, budget, started)
    progress(1.0, "hunt done")
    return _report(base, tried, None, None, budget, started, stopped)


def _report(base, tried, failing, result, budget, started, stopped="") -> HuntReport:
    return HuntReport(base.kernel or "", base.kernel_file or "", tried, failing, result,
                      budget, time.monotonic() - started, stopped)


def write_hunt(report: HuntReport, out: Path, folder=None) -> None:
    """``hunt.json`` into ``out``, and the failing case's ``result.json`` and
    ``maps.npz`` when there is one with maps: all together or none
    (outputs.py); into ``folder`` (an OutputFolder the command holds) when given."""
    from .outputs import OutputFolder
    from .run_files import stage_outputs

    if folder is None:
        with OutputFolder(out) as own:
            write_hunt(report, out, own)
            own.publish()
        return
    folder.write_text("hunt.json", json.dumps(report.to_json(), indent=2))
    if report.result is not None:
        stage_outputs(folder, report.result)
