"""What every backend is given and gives back."""
from __future__ import annotations

import ast
import re
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from ..derived.transform import ArraySlot, array_slots
from ..errors import RunCancelled
from ..inputs import poisoned_output
from ..request import RunRequest
from ..result import Timing
from ..sources.plan import KernelPlan
from .callbacks import CancelCallback, ProgressCallback, _never, _no_progress  # noqa: F401

#: Held while a run times itself (the CPU emulation's timed plain runs).  Work
#: that shares the process with a run and would skew its times takes it too:
#: a sweep writes one configuration's files while the next one runs
#: (sweep.run_sweep_ahead), but never while it is being timed.
TIMING = threading.Lock()


@dataclass
class KernelJob:
    """One kernel to run on one backend, with its inputs."""

    request: RunRequest
    plan: KernelPlan
    #: the input arrays, in the order of ``plan.inputs`` (A and B for a matmul)
    inputs: tuple[np.ndarray, ...]
    scalars: tuple
    #: start C at zero instead of NaN (the kernel accumulates into C)
    zero_output: bool
    progress: ProgressCallback = _no_progress
    cancel: CancelCallback = _never
    #: the output's starting values (M x N) where it is not NaN or zero: a
    #: described kernel that reads its output (engine.described_arrays)
    initial_output: np.ndarray | None = None

    @property
    def a(self) -> np.ndarray:
        return self.inputs[0]

    @property
    def b(self) -> np.ndarray:
        return self.inputs[1]

    @cached_property
    def slots(self) -> tuple[ArraySlot, ...]:
        return array_slots(self.plan)

    @property
    def scalar_types(self) -> tuple[str, ...]:
        """numpy types of the scalar arguments, as the emulation is compiled for."""
        return scalar_types(self.scalars)

    @property
    def flops(self) -> float | None:
        """A matmul's floating-point operations; None for a described run
        (ThreadMap does not know what its kernel computes)."""
        if self.request.arguments:
            return None
        m, k, n = self.request.shape
        return 2.0 * m * n * k

    def check_cancel(self) -> None:
        if self.cancel():
            raise RunCancelled("run cancelled")

    def fresh_output(self) -> np.ndarray:
        m, _, n = self.request.shape
        dtype = self.request.dtype
        if self.initial_output is not None:
            return self.initial_output.astype(dtype, copy=True)
        return poisoned_output(m, n, dtype, self.zero_output)

    def arguments(self, c: np.ndarray) -> list:
        """The kernel's own arguments in parameter order; flattened arrays
        (indexed with one index) get 1-D views, a 3-D output (held as its
        drawn matrix) its own shape."""
        arrays = dict(zip(self.plan.inputs, self.inputs))
        arrays[self.plan.output] = c
        scalars = dict(zip(self.plan.scalars, self.scalars))
        args = []
        for name in self.plan.kernel.params:
            if name in arrays:
                args.append(arrays[name].reshape(self.kernel_shape(name, arrays[name].shape)))
            else:
                args.append(scalars[name])
        return args

    def fresh_records(self, encoded: bool = False) -> list[np.ndarray]:
        """Recording arrays for every thread of the launch, initialised
        (``encoded``: see ``records.allocate_records``)."""
        from ..records import allocate_records

        output_shape, input_shapes = self.record_shapes()
        m, _, n = self.request.shape
        return allocate_records(output_shape, input_shapes, len(self.slots),
                                self.request.total_threads,
                                atomics=updates_output_atomically(self.plan), encoded=encoded,
                                shape_c=(m, n), written=self.written_shapes())

    def written_shapes(self) -> tuple:
        """``records.WrittenShape`` of each array besides the output that the
        kernel stores into (``transform.written_arrays``: a described
        kernel's), in parameter order."""
        from ..derived.transform import written_arrays
        from ..records import WrittenShape
        from ..sources.arguments import drawn_shape

        found = []
        arrays = dict(zip(self.plan.inputs, self.inputs))
        for name in written_arrays(self.plan):
            shape = self.kernel_shape(name, arrays[name].shape)
            found.append(WrittenShape(name, shape, drawn_shape(shape),
                                      updates_atomically(self.plan, name)))
        return tuple(found)

    def kernel_shape(self, name: str, whole: tuple[int, ...]) -> tuple[int, ...]:
        """The shape the kernel indexes array ``name`` with, held as ``whole``:
        flat when it takes one index; the output's own (3-D: its argument's)
        where the engine holds it as the matrix it is drawn as."""
        if self.plan.ndim[name] == 1:
            return (int(np.prod(whole)),)
        if self.plan.ndim[name] == 3 and len(whole) != 3:
            described = next(tuple(a.shape) for a in self.request.arguments if a.name == name)
            if int(np.prod(described)) == int(np.prod(whole)):
                return described
            # (a compile's job of one element, cpu.compile_emulation: the types matter only)
            return (int(whole[0]), 1, int(np.prod(whole[1:])))
        return tuple(whole)

    def record_shapes(self) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """Shapes of the output maps and of the read maps (one per input), as
        the kernel sees the arrays (1-D when flattened)."""
        shape = self.kernel_shape
        m, _, n = self.request.shape
        inputs = tuple(shape(name, array.shape)
                       for name, array in zip(self.plan.inputs, self.inputs))
        return shape(self.plan.output, (m, n)), inputs


    def array_elements(self) -> dict[str, int]:
        """Elements of each array parameter, by name."""
        m, _, n = self.request.shape
        sizes = {name: int(array.size) for name, array in zip(self.plan.inputs, self.inputs)}
        sizes[self.plan.output] = m * n
        return sizes


def updates_output_atomically(plan) -> bool:
    """Whether the kernel makes atomic updates of its output (only then is
    the full-size atomics map recorded)."""
    return updates_atomically(plan, plan.output)


def deals_by_block(plan) -> bool:
    """Whether the instant tier runs ``plan`` block after block (barriers,
    shared memory, a global array checked for races), as derived/lockstep.py's
    ``LockstepLayout.warpwise`` says once the kernel is typed; else warp
    after warp (``order_matters``) or the whole grid in chunks of lanes."""
    from ..derived.transform import race_checked_arrays

    return bool(plan.barrier_lines or any(a.kind == "shared" for a in plan.local_arrays)
                or race_checked_arrays(plan))


def order_matters(plan) -> bool:
    """Whether warps may see each other's writes: then the instant tier runs
    them one after another (and the estimates count its steps so)."""
    atomics = any(isinstance(n, ast.Call) and "atomic" in ast.unparse(n.func)
                  for n in ast.walk(plan.kernel.node))
    return bool(plan.reads_output or set(plan.stored_arrays) - {plan.output}
                or updates_output_atomically(plan) or atomics)


def updates_atomically(plan, array: str) -> bool:
    """Whether the kernel makes atomic updates of ``array``."""
    from ..sources.plan import cuda_attribute

    for node in ast.walk(plan.kernel.node):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id == array:
            what = cuda_attribute(node.func, plan.module.aliases)
            if what and what.startswith("atomic."):
                return True
    return False


def scalar_types(values) -> tuple[str, ...]:
    """numpy type names of scalar argument values: whole numbers are int64,
    the rest float64 (what numba makes of Python ints and floats)."""
    return tuple("int64" if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                 else "float64" for v in values)


@dataclass
class BackendOutput:
    """Raw results of a backend: C from both kernels, the recording arrays."""

    c_record: np.ndarray
    raw_records: list[np.ndarray]
    #: None when the plain kernel was not launched
    c_plain: np.ndarray | None
    timings: list[Timing] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the lockstep emulation's records and layout (CPU runs only)
    lockstep: dict[str, np.ndarray] | None = None
    layout: object = None
    #: what the kernel printed in its instrumented launch (kernel_output.py)
    prints: object = None
    #: the CPU emulation's tier, in words ("" for other backends)
    tier: str = ""


_NOISE = ("During:", "This error may have been", "For more information", "- Resolution failure",
          "File \"<", "raised from", "There are ", "- Of which", "Overload of function",
          "Operator Overload in function", "With argument(s)", "No match", "* (", "Failed in",
          "Rejected as the implementation", "Overload in function")


def shorten_numba_error(message: str, relocate: Callable[[str], str] | None = None,
                        max_lines: int = 14) -> str:
    """Keep what matters of a numba error: what failed, and where in the user's
    file (numba's candidate lists, tracebacks and colours are dropped)."""
    message = re.sub(r"\x1b\[[0-9;]*m", "", message)  # numba's terminal colours
    if relocate:
        message = relocate(message)
    lines = message.splitlines()
    what: list[str] = []
    where: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index].rstrip()
        stripped = line.strip()
        index += 1
        if "(generated code)" in line:
            # The derived code's listing means nothing to the user: skip to its caret.
            while index < len(lines) and not re.match(r"^\s*\^+\s*$", lines[index]):
                index += 1
            index += 1
            continue
        if stripped.startswith('File "'):
            where.append(stripped)
            # numba follows the location with its listing of the (derived) code;
            # show the user's own line instead.
            while index < len(lines) and lines[index].strip() and \
                    not lines[index].strip().startswith(("File", "During")):
                index += 1
            source_line = _source_line(stripped)
            if source_line:
                where.append("    " + source_line)
            continue
        if not stripped or stripped.startswith(_NOISE) or re.match(r"^\s*\^+\s*$", line):
            continue
        if stripped not in what:
            what.append(stripped)
    kept = what[:max(3, max_lines - len(where))] + list(dict.fromkeys(where))
    return "\n".join(kept[:max_lines])


def _source_line(location: str) -> str | None:
    """The text of ``File "path", line N`` from the file itself."""
    match = re.match(r'File "([^"]+)", line (\d+)', location)
    if not match:
        return None
    try:
        with open(match.group(1), encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if number == int(match.group(2)):
                    return text.strip()
    except OSError:
        return None
    return None


def median_time(run: Callable[[], float], repeats: int, budget: float = 2.0,
                earlier: tuple[float, ...] = (), least: int = 1) -> tuple[float, int]:
    """Median of up to ``repeats`` samples: the ``earlier`` ones, then calls of
    ``run`` (each returns its own time), at least ``least`` samples in all,
    and past those no more once another call would (at the mean call's
    length) end past ``budget`` seconds; returns (median, samples).
    (Stopping only once past the budget took one call more than it allowed:
    4096 x 4096 at K = 16, ~0.13 s a call, was timed 4 times within 0.3 s,
    not 3.)"""
    times = list(earlier)
    start = time.perf_counter()
    while len(times) < repeats:
        times.append(run())
        spent = time.perf_counter() - start
        if len(times) >= least and spent + spent / (len(times) - len(earlier)) > budget:
            break
    return float(np.median(times)), len(times)
