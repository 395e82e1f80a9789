"""Launches: a kernel's default, and the presets the GUI offers (the seed's,
one thread per element, a ragged edge)."""
from __future__ import annotations

import math

from .errors import KernelSourceError, RequestError
from .request import RunRequest, check_launch
from .sources.catalogue import CATALOGUE

SEED_SHAPE = (128, 256, 128)
#: Not a multiple of 16, 32 or 256 in any dimension.
RAGGED_SHAPE = (100, 37, 90)
#: How a launch's source begins when it was read from the kernel file (its
#: own literal launch) or guessed from its shapes; the app tells those from
#: a launch the user chose by them.
FILE_LAUNCH = "from the file"
GUESSED_LAUNCH = "guessed"


def one_thread_per_element(request: RunRequest, launch_dims: int) -> RunRequest:
    """Enough threads for one per element of C: 16 x 16 blocks for 2-D kernels
    (x along the columns), 256-thread blocks otherwise."""
    m, n = request.m, request.n
    if launch_dims == 2:
        return request.with_(grid=(-(-n // 16), -(-m // 16)), block=(16, 16))
    return request.with_(grid=(-(-(m * n) // 256),), block=(256,))


def seed_launch(request: RunRequest, launch_dims: int = 1) -> RunRequest:
    """The forum question's launch: one block of 1024 threads on 128 x 256 x 128."""
    m, k, n = SEED_SHAPE
    return request.with_(m=m, k=k, n=n, grid=(1,), block=(1024,))


def seed_case(request: RunRequest, launch_dims: int = 1) -> RunRequest:
    """The forum question itself: its kernel (``B[tid, col]``, built in as
    tid-rows) on its launch, whatever kernel was chosen before."""
    return seed_launch(request.with_(kernel="tid-rows", kernel_file=None, arguments=(),
                                     reference=None, scalars=()))


def ragged_edge(request: RunRequest, launch_dims: int) -> RunRequest:
    """A shape that is not a multiple of the block, launched one thread per element:
    the last blocks overhang C and the bounds check must hold."""
    m, k, n = RAGGED_SHAPE
    return one_thread_per_element(request.with_(m=m, k=k, n=n), launch_dims)


PRESETS = {
    "seed": ("The seed's case: B[tid, col] (tid-rows), 1 x 1024 on 128x256x128", seed_case),
    "seed-launch": ("The seed's launch for this kernel: 1 x 1024 on 128x256x128", seed_launch),
    "per-element": ("One thread per element", one_thread_per_element),
    "ragged": ("Ragged edge: 100x37x90, one thread per element", ragged_edge),
}


def default_launch(request: RunRequest) -> RunRequest:
    """``request`` with the kernel's default launch and where it came from:

    * a built-in kernel: its preset;
    * a kernel file that launches the kernel with literals: that launch (a
      trailing z of 1 dropped; a real third dimension is refused at its line);
    * else a guess that covers C with one thread per element: for a kernel
      that uses a second dimension (``cuda.grid(2)``, ``.y``), 16 x 16 blocks
      with x along the dimension of C the kernel indexes with x; else 1-D
      blocks of 256.
    """
    m, k, n = request.shape
    if not request.kernel_file:
        if request.kernel in CATALOGUE:
            launch = CATALOGUE[request.kernel].default_launch(m, k, n)
            return request.with_(grid=launch.grid, block=launch.block,
                                 launch_source="the built-in kernel's preset")
        return request
    from .sources.loader import load_plan

    plan = load_plan(request)
    launch = plan.kernel.launch
    if launch is not None:
        grid, block = _two_dimensional(launch, request.kernel_file)
        chosen = request.with_(grid=grid, block=block,
                               launch_source=f"{FILE_LAUNCH}, line {launch.line}")
        try:  # (the launch's own limits; what the arrays need is said as it is, later)
            check_launch(grid, block)
        except RequestError as exc:
            raise KernelSourceError(
                f"the file's own launch of {plan.name} ({launch}) cannot run: {exc}; give "
                "--grid and --block", request.kernel_file, launch.line) from None
        return chosen
    if plan.launch_dims == 2:
        x_rows = plan.x_indexes == "rows"
        x, y = (m, n) if x_rows else (n, m)
        if plan.x_indexes is None:
            x = y = max(m, n)  # either way round, C is covered
        how = {"rows": "x along its rows", "cols": "x along its columns",
               None: "square, as the kernel's use of x is not clear"}[plan.x_indexes]
        return request.with_(grid=(-(-x // 16), -(-y // 16)), block=(16, 16),
                             launch_source=f"{GUESSED_LAUNCH}: 2-D kernel, 16 x 16 blocks "
                                           f"covering C ({how})")
    if request.arguments:
        # A described kernel: one thread per element of its largest array (a
        # reduction reads more elements than it writes).
        largest = max((a for a in request.arguments if hasattr(a, "shape")),
                      key=lambda a: math.prod(a.shape))
        elements = math.prod(largest.shape)
        return request.with_(grid=(-(-elements // 256),), block=(256,),
                             launch_source=f"{GUESSED_LAUNCH}: 1-D kernel, one thread per "
                                           f"element of its largest array, {largest.name}, in "
                                           "blocks of 256")
    return request.with_(grid=(-(-(m * n) // 256),), block=(256,),
                         launch_source=f"{GUESSED_LAUNCH}: 1-D kernel, one thread per element "
                                       "of C in blocks of 256")


def _two_dimensional(launch, path: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A file's launch, its trailing z = 1 dropped; a real third dimension is
    refused at the line of the launch."""
    def trim(dims: tuple[int, ...]) -> tuple[int, ...]:
        return dims[:2] if len(dims) == 3 and dims[2] == 1 else dims

    grid, block = trim(launch.grid), trim(launch.block)
    if len(grid) > 2 or len(block) > 2:
        raise KernelSourceError(
            f"the file launches the kernel with a 3-D {'grid' if len(grid) > 2 else 'block'} "
            f"({launch}); ThreadMap runs 1-D and 2-D launches: give --grid and --block",
            path, launch.line)
    return grid, block


def covering_launch(request: RunRequest, plan) -> RunRequest:
    """``request``'s block, with the grid that covers C once with one thread
    per element (x along the dimension of C the kernel indexes with x)."""
    m, n = request.m, request.n
    if len(request.block) == 1:
        return request.with_(grid=(-(-(m * n) // request.block[0]),))
    x, y = (m, n) if plan.x_indexes == "rows" else (n, m)
    bx, by = request.block2
    return request.with_(grid=(-(-x // bx), -(-y // by)))
