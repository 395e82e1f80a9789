"""What to run: a frozen request, and the checks made before anything runs."""
from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .element_types import mixed_element_types
from .errors import RequestError
from .records import record_nbytes
from .words import whole_number

DTYPES = ("float32", "float64")
#: What a described kernel's output may hold (its inputs too): the integer
#: types numba and numpy share.  (float16 is not run: numba's CPU arithmetic
#: on it goes through float32.)
DESCRIBED_DTYPES = DTYPES + ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                             "uint64")
PATTERNS = ("random", "ones", "identity", "arange")
BACKENDS = ("auto", "gpu", "sim", "cpu")
#: Tiers of the CPU emulation: "instant" (numpy, no compile), "compiled"
#: (numba), or "auto" (chosen by the estimated work: backends/tiers.py).
TIERS = ("auto", "instant", "compiled")

# CUDA's launch limits (compute capability 3.0 and later).
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
#: Largest matrix dimension accepted; the memory estimate decides below it.
MAX_DIMENSION = 1 << 20
#: Share of the memory available now that one run may plan to use.
MEMORY_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run: which kernel on which shapes, launched how, where.

    ``C = A @ B`` with A of ``m x k`` and B of ``k x n``.  ``grid`` and
    ``block`` have 1 or 2 dimensions (x first).  ``kernel`` names a built-in
    kernel, or, with ``kernel_file``, a kernel of that file (``None``: its only
    kernel).  ``scalars`` gives values of a kernel's extra scalar parameters.
    """

    kernel: str | None = "grid-stride"
    m: int = 128
    k: int = 256
    n: int = 128
    dtype: str = "float32"
    grid: tuple[int, ...] = (1,)
    block: tuple[int, ...] = (1024,)
    backend: str = "auto"
    pattern: str = "random"
    seed: int = 0
    kernel_file: str | None = None
    scalars: tuple[tuple[str, float], ...] = ()
    #: timed launches of the plain kernel (after one warm-up); median reported
    repeats: int = 5
    #: where grid and block came from when they were not given: "from the
    #: file, line 12", "guessed: ...", "the built-in kernel's preset"
    launch_source: str = "given"
    #: set when the kernel's own signature changed the dtype asked for
    dtype_note: str = ""
    #: the CPU emulation's tier (TIERS); other backends ignore it
    tier: str = "auto"
    #: why ``tier`` was chosen, when not by the user (a sweep picks one for all)
    tier_source: str = ""
    #: the kernel's arguments as described (sources/arguments.py), for a kernel
    #: run as it is rather than as C = A @ B: its arrays (inputs made from
    #: these, the output of its own shape) and scalars.  Then M x N is the
    #: output drawn as a matrix (a 1-D output wrapped into rows) and K is 1.
    arguments: tuple = ()
    #: ``file.py:function``, the user's own host code that gives the expected
    #: output of a described run (run in the command's process, never in the
    #: kernel's sandbox); none: maps and checks only
    reference: str | None = None
    #: the reference is imported and called in the kernel's sandboxed child,
    #: not in the command's process: one ``check`` found on its own (the
    #: course's references.py at the top of the folder checked)
    reference_in_child: bool = False
    #: a ``.npz`` of the arrays the caller gave (the Python API's ``args``),
    #: by parameter name, used in place of made ones: the inputs, and the
    #: output's starting values where the kernel reads it (inputs.py)
    given_inputs: str | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.k, self.n)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def total_threads(self) -> int:
        return self.blocks * self.threads_per_block

    @property
    def grid2(self) -> tuple[int, int]:
        return (self.grid[0], self.grid[1] if len(self.grid) > 1 else 1)

    @property
    def block2(self) -> tuple[int, int]:
        return (self.block[0], self.block[1] if len(self.block) > 1 else 1)

    @property
    def element_types(self) -> str:
        """The arrays' element types as the derived forms are keyed and typed
        by (element_types.py): ``dtype``, or a described kernel's arrays'
        own when they differ."""
        return mixed_element_types([(a.name, a.dtype) for a in self.arguments
                                    if hasattr(a, "shape")], self.dtype)

    @property
    def shape_label(self) -> str:
        """``128x256x128`` (M x K x N), or a described run's arrays
        (``x=float32[4096], out=float32[4096]``)."""
        if self.arguments:
            return ", ".join(str(a) for a in self.arguments if hasattr(a, "shape"))
        return f"{self.m}x{self.k}x{self.n}"

    @property
    def kernel_label(self) -> str:
        if self.kernel_file:
            name = os.path.basename(self.kernel_file)
            return f"{name}:{self.kernel}" if self.kernel else name
        return self.kernel or "?"

    def with_(self, **changes) -> "RunRequest":
        """A copy with some fields changed."""
        return replace(self, **changes)


def _whole(text: str) -> int:
    """A whole number written in ASCII digits: ``int`` alone took "4_4" as 44
    and other scripts' digits too; ValueError for anything else."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
        raise ValueError(text)
    return int(text)


def parse_dims(text: str, what: str) -> tuple[int, ...]:
    """``"4"`` -> ``(4,)``; ``"4x2"`` -> ``(4, 2)``."""
    parts = text.lower().replace("*", "x").replace(",", "x").split("x")
    try:
        dims = tuple(_whole(p) for p in parts)
    except ValueError:
        raise RequestError(f"{what} must be N or NxM with whole numbers, not {text!r}") from None
    if not 1 <= len(dims) <= 2:
        raise RequestError(f"{what} takes 1 or 2 dimensions, not {len(dims)} ({text!r})")
    return dims


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"128x256x128"`` -> ``(128, 256, 128)`` (M x K x N)."""
    parts = text.lower().replace("*", "x").split("x")
    try:
        dims = tuple(_whole(p) for p in parts)
    except ValueError:
        raise RequestError(f"shape must be MxKxN with whole numbers, not {text!r}") from None
    if len(dims) != 3:
        raise RequestError(f"shape must have three numbers, MxKxN, not {text!r}")
    return dims  # type: ignore[return-value]


def _check_dims(dims: tuple[int, ...], limits: tuple[int, ...], what: str) -> None:
    if not isinstance(dims, tuple) or not 1 <= len(dims) <= 2:
        raise RequestError(f"{what} must have 1 or 2 dimensions, got {dims!r}")
    for axis, (value, limit) in enumerate(zip(dims, limits)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise RequestError(f"{what} must hold whole numbers, got {dims!r}")
        if value < 1:
            raise RequestError(f"{what} {'xyz'[axis]} must be at least 1, got {value}")
        if value > limit:
            raise RequestError(f"{what} {'xyz'[axis]} = {value:,} is past CUDA's limit of "
                               f"{limit:,}")


def check_launch(grid: tuple[int, ...], block: tuple[int, ...]) -> None:
    """Raise :class:`RequestError` for a launch past CUDA's limits (the Run
    panel says so as it is typed, not only at Run)."""
    _check_dims(block, MAX_BLOCK_DIMS, "block")
    _check_dims(grid, MAX_GRID_DIMS, "grid")
    threads = math.prod(block)
    if threads > MAX_THREADS_PER_BLOCK:
        raise RequestError(f"a block of {' x '.join(map(str, block))} = {threads:,} threads is "
                           f"past CUDA's limit of {MAX_THREADS_PER_BLOCK:,} threads per block")


def check_request(request: RunRequest) -> None:
    """Raise :class:`RequestError` for anything that cannot run, before it runs.

    Checks shapes, dtype, pattern, backend name, CUDA's launch limits and the
    host memory the run would need.  Kernel-specific checks (is there such a
    kernel, does it parse) are made when the kernel is loaded.
    """
    for name, value in (("M", request.m), ("K", request.k), ("N", request.n)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise RequestError(f"{name} must be a whole number, got {value!r}")
        if value < 1:
            raise RequestError(f"{name} must be at least 1, got {value}")
        if value > MAX_DIMENSION:
            raise RequestError(f"{name} = {value:,} is too large (at most {MAX_DIMENSION:,})")
    if request.dtype not in (DESCRIBED_DTYPES if request.arguments else DTYPES):
        raise RequestError(f"dtype must be one of {', '.join(DTYPES)}, not {request.dtype!r}")
    if request.pattern not in PATTERNS:
        raise RequestError(f"pattern must be one of {', '.join(PATTERNS)}, "
                           f"not {request.pattern!r}")
    if request.backend not in BACKENDS:
        raise RequestError(f"backend must be one of {', '.join(BACKENDS)}, "
                           f"not {request.backend!r}")
    if request.tier not in TIERS:
        raise RequestError(f"tier must be one of {', '.join(TIERS)}, not {request.tier!r}")
    if not isinstance(request.seed, int) or isinstance(request.seed, bool) or request.seed < 0:
        raise RequestError(f"seed must be a whole number >= 0, got {request.seed!r}")
    if not isinstance(request.repeats, int) or isinstance(request.repeats, bool) \
            or not 1 <= request.repeats <= 1000:
        raise RequestError(f"repeats must be between 1 and 1000, got {request.repeats!r}")
    for name, value in request.scalars:
        if not isinstance(name, str) or not name.isidentifier():
            raise RequestError(f"a scalar's name must be a parameter's name, not {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RequestError(f"scalar {name} must be a number, not {value!r}")
    check_launch(request.grid, request.block)
    if request.kernel_file is None and not request.kernel:
        raise RequestError("no kernel given")
    needed = host_bytes_needed(request)
    available = available_memory()
    if available is not None and needed > MEMORY_SHARE * available:
        raise RequestError(
            f"this run would need about {format_bytes(needed)} of memory (matrices, reference "
            f"and maps for {request.total_threads:,} threads), more than "
            f"{int(MEMORY_SHARE * 100)}% of the {format_bytes(available)} available; "
            "use smaller shapes or fewer threads")


def host_bytes_needed(request: RunRequest) -> int:
    """Estimate of the host memory a run needs, from the shapes and thread count."""
    m, k, n = request.shape
    item = 4 if request.dtype == "float32" else 8
    if request.arguments:  # (the widest described array's: a bound)
        item = max([8 if a.dtype.endswith("64") else 4 for a in request.arguments
                    if hasattr(a, "shape")] + [4])
    sizes = (m * k, k * n)
    if request.arguments:  # (every described array counted as an input: a bound)
        sizes = tuple(math.prod(a.shape) for a in request.arguments if hasattr(a, "shape"))
    inputs = sum(sizes) * (item + 2 * 8)  # the inputs, and float64 copies for the reference
    outputs = m * n * (2 * item + 3 * 8)  # C twice; reference, error bound, error
    return inputs + outputs + record_nbytes(m * n, sizes, request.total_threads)


#: (when, bytes) of the last reading: a sweep checks 64 requests at once, and
#: reading /proc/meminfo 64 times on the GUI thread stalled a busy machine's
#: window ~50 ms; memory available changes slowly next to that
_last_reading: tuple[float, int | None] = (-1.0, None)
#: how long a reading of the memory available is used again (seconds)
MEMORY_READING_LIFE = 0.5


def available_memory() -> int | None:
    """Bytes of memory available now (Linux ``MemAvailable``; read again at
    most every MEMORY_READING_LIFE seconds), or None if unknown."""
    global _last_reading
    now = time.monotonic()
    if now - _last_reading[0] < MEMORY_READING_LIFE:
        return _last_reading[1]
    _last_reading = (now, _read_available_memory())
    return _last_reading[1]


def _read_available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def parse_scalars(items: Sequence[str]) -> tuple[tuple[str, float], ...]:
    scalars = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise RequestError(f"--scalar takes NAME=VALUE, not {item!r}")
        text = value.strip()
        # (ASCII alone: int() and float() took "4_4" as 44 and other scripts' digits)
        if not text.isascii() or "_" in text:
            raise RequestError(f"--scalar {name} needs a number, not {value!r}")
        digits = len(text.lstrip("+-"))
        if re.fullmatch(r"[+-]?[0-9]+", text) and digits > 4000:  # (past what int() reads)
            raise RequestError(f"--scalar {name}: a {digits:,}-digit number does not fit a "
                               "64-bit integer")
        try:
            number = _whole(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise RequestError(f"--scalar {name} needs a number, not {value!r}") from None
        # (a number past what a kernel's int64 holds had crashed the run:
        # "OverflowError: Python int too large to convert to C long")
        if isinstance(number, int) and not -(1 << 63) <= number < (1 << 63):
            raise RequestError(f"--scalar {name}: {whole_number(number)} does not fit a 64-bit "
                               "integer")
        if any(name == given for given, _ in scalars):
            raise RequestError(f"--scalar {name} is given twice")
        scalars.append((name, number))
    return tuple(scalars)
