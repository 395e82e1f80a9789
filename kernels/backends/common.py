"""What every backend is given and gives back."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import RunCancelled
from ..plan import KernelPlan
from ..request import RunRequest
from ..result import Timing
from ..transform import ArraySlot, array_slots

ProgressCallback = Callable[[float, str], None]
CancelCallback = Callable[[], bool]


def _no_progress(fraction: float, message: str) -> None:
    pass


def _never() -> bool:
    return False


@dataclass
class KernelJob:
    """One kernel to run on one backend, with its inputs."""

    request: RunRequest
    plan: KernelPlan
    a: np.ndarray
    b: np.ndarray
    scalars: tuple
    #: start C at zero instead of NaN (the kernel accumulates into C)
    zero_output: bool
    progress: ProgressCallback = _no_progress
    cancel: CancelCallback = _never

    @property
    def slots(self) -> tuple[ArraySlot, ...]:
        return array_slots(self.plan)

    @property
    def flops(self) -> float:
        m, k, n = self.request.shape
        return 2.0 * m * n * k

    def check_cancel(self) -> None:
        if self.cancel():
            raise RunCancelled("run cancelled")

    def fresh_output(self) -> np.ndarray:
        m, _, n = self.request.shape
        dtype = self.request.dtype
        return np.zeros((m, n), dtype) if self.zero_output else np.full((m, n), np.nan, dtype)

    def arguments(self, c: np.ndarray) -> list:
        """The kernel's own arguments in parameter order; flattened arrays
        (indexed with one index) get 1-D views."""
        arrays = {self.plan.inputs[0]: self.a, self.plan.inputs[1]: self.b, self.plan.output: c}
        scalars = dict(zip(self.plan.scalars, self.scalars))
        args = []
        for name in self.plan.kernel.params:
            if name in arrays:
                array = arrays[name]
                args.append(array.reshape(-1) if self.plan.ndim[name] == 1 else array)
            else:
                args.append(scalars[name])
        return args

    def record_shapes(self) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """Shapes of the output maps and of the two read maps, as the kernel sees
        the arrays (1-D when flattened)."""
        def shape(name: str, matrix: tuple[int, int]) -> tuple[int, ...]:
            return (matrix[0] * matrix[1],) if self.plan.ndim[name] == 1 else matrix

        m, k, n = self.request.shape
        inputs = (shape(self.plan.inputs[0], (m, k)), shape(self.plan.inputs[1], (k, n)))
        return shape(self.plan.output, (m, n)), inputs


@dataclass
class BackendOutput:
    """Raw results of a backend: C from both kernels, the recording arrays."""

    c_record: np.ndarray
    raw_records: list[np.ndarray]
    #: None when the plain kernel was not launched
    c_plain: np.ndarray | None
    timings: list[Timing] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def shorten_numba_error(message: str, relocate: Callable[[str], str] | None = None,
                        max_lines: int = 14) -> str:
    """Keep what matters of a numba error: drop its boilerplate and tracebacks."""
    if relocate:
        message = relocate(message)
    kept = []
    for line in message.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("During:", "This error may have been",
                                                "For more information", "- Resolution failure",
                                                "File \"<", "raised from")):
            continue
        if re.match(r"^\s*\^+\s*$", line):
            continue
        kept.append(line.rstrip())
    if len(kept) > max_lines:
        kept = kept[:max_lines] + ["..."]
    return "\n".join(kept)


def median_time(run: Callable[[], float], repeats: int, budget: float = 2.0) -> tuple[float, int]:
    """Median of up to ``repeats`` calls of ``run`` (each returns its own time),
    stopping early once ``budget`` seconds are spent; returns (median, samples)."""
    times = []
    start = time.perf_counter()
    for _ in range(repeats):
        times.append(run())
        if time.perf_counter() - start > budget:
            break
    return float(np.median(times)), len(times)
