"""What a run gives back: C, the maps, the verdict and labelled timings."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .analyses.correctness import ErrorFigures
from .analyses.lockstep_analysis import LockstepAnalysis
from .analyses.record_clients import LOCKSTEP_ORDER, unmeasured_summary
from .records import AccessMaps, WriteMaps
from .request import RunRequest
from .sources.arguments import drawn_shape
from .words import counted

#: The strips of ``AccessMaps.oob_margin``, in order, as ``maps_arrays`` names
#: them (``oob_margin_<side>``).
MARGIN_SIDES = ("top", "bottom", "left", "right")

#: What each backend's kernel time is, in words shown next to every figure.
BACKEND_LABELS = {
    "gpu": "GPU",
    "sim": "CUDA simulator (Python threads on the CPU, not a GPU time)",
    "cpu": "CPU emulation (compiled numba loop on the CPU, not a GPU time)",
    "cpu-instant": "CPU emulation, numpy lockstep: no compile (an interpreter on the CPU, not a "
                   "GPU time, and not the compiled loop's)",
    "numpy": "numpy on the CPU",
    "cublas": "cuBLAS via CuPy on the GPU",
}
BACKEND_SHORT = {"gpu": "GPU", "sim": "simulator", "cpu": "CPU emulation",
                 "cpu-instant": "CPU emulation (instant tier)",
                 "numpy": "numpy CPU", "cublas": "cuBLAS"}


@dataclass(frozen=True)
class Timing:
    """One measured time and exactly what it measures."""

    what: str  # "kernel", "instrumented kernel", "compile", "host to device", ...
    backend: str  # a key of BACKEND_LABELS
    seconds: float
    method: str  # how it was measured, e.g. "CUDA events, median of 5 launches"
    samples: int = 1
    flops: float | None = None  # floating-point operations of the timed work

    @property
    def is_gpu_time(self) -> bool:
        return self.backend in ("gpu", "cublas")

    @property
    def gflops(self) -> float | None:
        if not self.flops or self.seconds <= 0:
            return None
        return self.flops / self.seconds / 1e9

    @property
    def label(self) -> str:
        return f"{self.what} [{BACKEND_SHORT.get(self.backend, self.backend)}]"

    def describe(self) -> str:
        text = f"{self.what}: {format_seconds(self.seconds)} ({BACKEND_LABELS.get(self.backend, self.backend)}; {self.method})"
        if self.gflops is not None:
            text += f", {self.gflops:.3g} GFLOP/s"
        return text


#: Which launch's prints a result keeps (backends/kernel_output.py).
KERNEL_OUTPUT_SOURCE = ("the kernel's print output, from its instrumented launch only (every "
                        "thread runs once there; the timed launches' prints are dropped)")

#: Lines of it shown in a summary (all of it is in result.json).
KERNEL_OUTPUT_LINES = 20


def format_seconds(seconds: float) -> str:
    """Three significant figures in s, ms or us; whole seconds from 1,000 s
    ("7,110 s", never "7.11e+03 s")."""
    if seconds >= 1000:
        return f"{seconds:,.0f} s"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


@dataclass(frozen=True)
class Verdict:
    """PASS only with every element written once, no out-of-bounds access and
    the error within tolerance; otherwise FAIL with each reason."""

    passed: bool
    reasons: tuple[str, ...]
    unwritten: int
    collided: int
    out_of_bounds: int
    errors: ErrorFigures
    #: barriers reached divergently, elements of shared memory raced on
    #: (each block's own), reads of shared memory the block had not written
    #: (CPU lockstep emulation)
    barrier_divergence: int = 0
    shared_races: int = 0
    uninitialised_shared_reads: int = 0
    divisions_by_zero: int = 0
    #: calls of warp operations with an undefined result (hazards.WarpHazard)
    warp_hazards: int = 0
    #: elements of global memory raced on (hazards.GlobalRaces)
    global_races: int = 0
    #: why the output was not checked against a reference (a described run
    #: without one, or whose reference failed): then PASS is the checks' alone
    reference_note: str = ""

    @property
    def word(self) -> str:
        return "PASS" if self.passed else "FAIL"

    @property
    def shown_word(self) -> str:
        """``word``, but ``CHECKED`` where the checks passed and there was no
        reference to hold the output to: never a PASS it did not earn."""
        return "CHECKED" if self.passed and self.reference_note else self.word

    @property
    def short_reasons(self) -> str:
        """``"unwritten, collisions"`` (the kinds of failure, for a table cell)."""
        kinds = []
        if self.unwritten:
            kinds.append("unwritten")
        if self.collided:
            kinds.append("collisions")
        if self.out_of_bounds:
            kinds.append("out-of-bounds")
        if self.barrier_divergence:
            kinds.append("barrier divergence")
        if self.shared_races:
            kinds.append("shared races")
        if self.uninitialised_shared_reads:
            kinds.append("uninitialised shared reads")
        if self.divisions_by_zero:
            kinds.append("division by zero")
        if self.warp_hazards:
            kinds.append("warp operations")
        if self.global_races:
            kinds.append("global races")
        if self.errors.wrong or self.errors.non_finite > self.unwritten:
            kinds.append("error")
        return ", ".join(kinds)

    def summary(self) -> str:
        unchecked = f"; {self.reference_note}" if self.reference_note else ""
        if self.passed:
            # (CHECKED, as the word shown: a PASS it did not earn said PASS in
            # the status bar beside the header's CHECKED)
            return f"CHECKED ({self.reference_note})" if self.reference_note else "PASS"
        return f"FAIL ({self.short_reasons}{unchecked})"


def make_verdict(maps: AccessMaps, errors: ErrorFigures,
                 analysis: LockstepAnalysis | None = None, output: str = "C",
                 reference_note: str = "", counts_from: Verdict | None = None) -> Verdict:
    """PASS or FAIL with each reason; ``output`` is the output array's name in
    the kernel (its reasons name it); ``reference_note``: why it was not
    compared with a reference (its PASS is then the checks' alone);
    ``counts_from``: a verdict made before from these same ``maps``, whose counts
    of unwritten and collided elements are taken, not counted again."""
    reasons = []
    total = maps.count.size
    # Each is a pass over every element of C (25-60 ms for 4096 x 4096): once.
    if counts_from is not None:
        unwritten, collided = counts_from.unwritten, counts_from.collided
    else:
        unwritten, collided = maps.unwritten, maps.collided
    if unwritten:
        reasons.append(f"{unwritten:,} of {counted(total, 'element')} of {output} never written")
    if collided:
        reasons.append(f"{counted(collided, 'element')} of {output} written by more than one "
                       "thread (collisions: the value depends on which thread came last)")
    for oob in maps.out_of_bounds:
        reasons.append(oob.describe())
    for division in maps.divisions_by_zero:
        reasons.append(division.describe())
    poisoned = errors.non_finite - unwritten
    if poisoned > 0:
        reasons.append(f"{counted(poisoned, 'written element')} of {output} "
                       f"{'is' if poisoned == 1 else 'are'} NaN or infinite")
    if errors.wrong and errors.exact:
        reasons.append(f"{counted(errors.wrong, 'element')} of {output} "
                       f"{'differs' if errors.wrong == 1 else 'differ'} from the reference "
                       "(integers, compared exactly)")
    elif errors.wrong:
        reasons.append(f"{counted(errors.wrong, 'element')} off by more than its bound "
                       f"(the worst {errors.worst_ratio:.3g}x its bound)")
    hazards = {}
    if analysis is not None:
        reasons.extend(analysis.reasons())
        hazards = analysis.fault_counts()
    passed = not reasons and errors.within_tolerance
    if reasons and errors.within_tolerance and errors.elements and not reference_note:
        why = values_right_all_the_same(maps, errors, analysis, output, unwritten, collided)
        if why:
            reasons.append(why)
    return Verdict(passed=passed, reasons=tuple(reasons), unwritten=unwritten,
                   collided=collided, out_of_bounds=maps.oob_total, errors=errors,
                   divisions_by_zero=sum(d.count for d in maps.divisions_by_zero),
                   reference_note=reference_note, **hazards)


#: Why an output can come out right in the emulation with a check of the
#: maps failed, by check: what the emulation does there that a GPU need not
#: (the lockstep analyses' checks say their own: record_clients.py).
_WHY_RIGHT = {
    "unwritten element": "the elements never written kept their starting values, which "
                         "the reference has there",
    "collision": LOCKSTEP_ORDER,
    "out-of-bounds read": "out-of-bounds reads read 0 in the emulation",
    "out-of-bounds write": "out-of-bounds writes are skipped in the emulation",
    "division by zero": "a division by zero gave a value the output did not take (numba "
                        "gives 0 for an integer // or %, inf or NaN for floats)",
}


def values_right_all_the_same(maps: AccessMaps, errors: ErrorFigures,
                              analysis: LockstepAnalysis | None, output: str, unwritten: int,
                              collided: int) -> str:
    """The reason a FAIL with every value right adds: which checks failed,
    and why the values still came out right in the emulation (what it does
    where a GPU's result is undefined), so that a right output is not read
    as a kernel that works.  ("" where no check it knows failed.)"""
    failed = []
    why_right = dict(_WHY_RIGHT)
    if unwritten:
        failed.append("unwritten element")
    if collided:
        failed.append("collision")
    for direction in ("read", "write"):
        if any(o.direction == direction for o in maps.out_of_bounds):
            failed.append(f"out-of-bounds {direction}")
    if maps.divisions_by_zero:
        failed.append("division by zero")
    if analysis is not None:
        for check, why in analysis.failed_checks():
            failed.append(check)
            why_right[check] = why
    if not failed:
        return ""
    how = "matches the reference exactly" if errors.exact \
        else "is within its bound of the reference"
    checks = f"{_joined(failed)} check{'s' if len(failed) > 1 else ''}"
    whys = _joined(list(dict.fromkeys(why_right[check] for check in failed)))
    return (f"every element of {output} {how} all the same: the FAIL comes from the {checks}, "
            f"not from its values, which come out right here because {whys}; on a GPU they "
            "need not")


def _joined(parts: list[str]) -> str:
    """``["a", "b", "c"]`` as "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass(frozen=True)
class KernelSnapshot:
    """The kernel as it was when it ran: views show this, never the file as
    it is now (an edited kernel file cannot make a shown result stale)."""

    name: str
    path: str  # the kernel file, or the built-in kernel's module file
    source: str  # the whole file's text
    first_line: int  # the kernel's def line
    barrier_lines: tuple[int, ...] = ()
    launch_dims: int = 1
    #: the kernel's last line
    last_line: int = 0
    #: its accesses to arrays: (line, "load" | "store" | "atomic", array, role)
    accesses: tuple[tuple[int, str, str, str], ...] = ()

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()


@dataclass(frozen=True)
class Confirmation:
    """The same request run again on a second backend (the GPU) after the
    first (the CPU emulation) answered: its own verdict, and where its maps
    disagree with the ones shown.  A disagreement is a bug in ThreadMap or
    in the hardware: it is shown as a fault, never hidden."""

    backend: str  # a key of BACKEND_LABELS
    #: its verdict word ("PASS", "FAIL", "CHECKED"), and in a line; "" when it failed
    verdict: str = ""
    summary: str = ""
    #: each figure of the shown result that the second backend did not give
    disagreements: tuple[str, ...] = ()
    #: what was compared ("verdict", "write counts", ...)
    compared: tuple[str, ...] = ()
    #: why the second run gave nothing, in one sentence (None when it ran)
    error: str | None = None

    @property
    def agrees(self) -> bool:
        return self.error is None and not self.disagreements

    def line(self) -> str:
        """One line for a summary or a status bar."""
        who = BACKEND_SHORT.get(self.backend, self.backend)
        if self.error is not None:
            return f"{who}: not run ({self.error})"
        if self.disagreements:
            return (f"{who}: {self.verdict}; DISAGREES with the figures shown (a bug in "
                    f"ThreadMap or in the hardware): {'; '.join(self.disagreements)}")
        return f"{who}: {self.verdict}, and its maps agree with the figures shown"

    def as_dict(self) -> dict:
        return {"backend": self.backend, "verdict": self.verdict, "summary": self.summary,
                "agrees": self.agrees, "disagreements": list(self.disagreements),
                "compared": list(self.compared), "error": self.error}


@dataclass(frozen=True, eq=False)
class RunResult:
    """Everything one run produced."""

    request: RunRequest  # as run: backend resolved, launch explicit
    kernel_name: str  # the kernel function's name
    backend_note: str  # why this backend (e.g. "no CUDA device: CPU emulation")
    c: np.ndarray
    #: where ``c`` comes from: the plain kernel, or the instrumented one when the
    #: plain kernel was not launched (out-of-bounds accesses found)
    c_source: str
    reference: np.ndarray
    maps: AccessMaps
    verdict: Verdict
    timings: tuple[Timing, ...]
    notes: tuple[str, ...]
    #: "nan" (poisoned) or "zeros" (for kernels that accumulate into C)
    output_init: str
    slots: tuple[tuple[str, str, int], ...] = ()
    #: warp requests, branches and shared-memory hazards, from the CPU
    #: lockstep emulation (None where it cannot run the kernel)
    analysis: LockstepAnalysis | None = None
    #: where ``analysis`` comes from, or why there is none
    analysis_note: str | None = None
    #: the kernel's output array (C of C = A @ B), and why it is the one
    output: str = "C"
    output_reason: str = ""
    #: what the kernel printed, from its instrumented launch only (each thread
    #: that prints, once), and how many characters past the kept part were cut
    kernel_output: str = ""
    kernel_output_cut: int = 0
    #: the kernel's registers and shared memory on every GPU model, measured
    #: once where the run happened (kernels.api.with_occupancy); empty until then
    kernel_resources: dict = field(default_factory=dict)
    #: occupancy of this launch on every GPU model, with ``assumed_registers``
    #: where no register count could be measured
    occupancy: dict = field(default_factory=dict)
    assumed_registers: int | None = None
    #: the kernel as it ran (None only for results made outside the engine)
    kernel: KernelSnapshot | None = None
    #: where its maps are while they are out of memory (stow.Stowed), else None:
    #: its arrays are then placeholders of the right shape that hold zeros
    stowed: object | None = None
    #: the causes of its failure, named at their lines (analyses/diagnoses.py)
    diagnoses: tuple = ()
    #: the backend whose run of the same request follows this one, to add its
    #: times and its own verdict (engine.confirm): "gpu" for a first answer
    #: from the CPU emulation on a machine with a GPU; None when none follows
    follows: str | None = None
    #: that run, once it came (maps, findings and verdict stay this result's)
    confirmation: Confirmation | None = None
    #: the backend the run was asked for, where it differs from the one it ran
    #: on (``auto``, resolved in ``request``); "" where they are the same
    asked_backend: str = ""

    @property
    def backend(self) -> str:
        return self.request.backend

    @property
    def asked_request(self) -> RunRequest:
        """The request as it was asked for (``auto`` stays ``auto``): what
        running it again runs, and what a form showing it shows."""
        if not self.asked_backend or self.asked_backend == self.request.backend:
            return self.request
        return self.request.with_(backend=self.asked_backend)

    @property
    def coalescing(self) -> tuple:
        """Sectors per warp request at each global access site, in source order."""
        return self.analysis.coalescing if self.analysis is not None else ()

    def timing(self, what: str) -> Timing | None:
        for timing in self.timings:
            if timing.what == what:
                return timing
        return None

    @property
    def tier(self) -> str | None:
        """The CPU emulation's tier that ran it ("instant" or "compiled"), or
        None for another backend."""
        if self.backend != "cpu":
            return None
        return "instant" if any(t.backend == "cpu-instant" for t in self.timings) \
            else "compiled"

    @property
    def labelled_backend(self) -> str:
        """The key of BACKEND_LABELS that says what ran it: the CPU
        emulation's instant tier has its own ("cpu-instant": numpy lockstep,
        no compile), never the compiled loop's label."""
        return "cpu-instant" if self.tier == "instant" else self.backend

    def measured(self, what: str) -> Timing | None:
        """The timing of ``what``: the GPU's where a GPU ran it too (a
        confirmed result holds the CPU emulation's as well)."""
        return next((t for t in self.timings if t.what == what and t.is_gpu_time),
                    None) or self.timing(what)

    @property
    def kernel_timing(self) -> Timing | None:
        return self.measured("kernel")

    @property
    def shown_timing(self) -> Timing | None:
        """The time a summary shows: the kernel's, or the instrumented
        kernel's where the plain kernel was not launched."""
        return self.kernel_timing or self.measured("instrumented kernel")

    @property
    def reference_timing(self) -> Timing | None:
        return next((t for t in self.timings if t.what.startswith("reference")), None)

    def summary(self) -> dict:
        """A JSON-ready summary (request, verdict, error figures, counts, timings)."""
        request = asdict(self.request)
        if self.request.arguments:  # (as written on the command line)
            request["arguments"] = [str(a) for a in self.request.arguments]
        if self.request.given_inputs:  # (a file removed after the run)
            request["given_inputs"] = "the caller's own arrays (threadmap(args=...))"
            request["pattern"] = "given"
        request["grid"] = list(self.request.grid)
        request["block"] = list(self.request.block)
        request["scalars"] = {name: value for name, value in self.request.scalars}
        return {
            "request": request,
            "kernel_function": self.kernel_name,
            "backend": self.backend,
            "backend_label": BACKEND_LABELS[self.labelled_backend],
            "backend_note": self.backend_note,
            "tier": self.tier,
            "verdict": self.verdict.word,
            "reasons": list(self.verdict.reasons),
            **({"not_checked_against_a_reference": self.verdict.reference_note}
               if self.verdict.reference_note else {}),
            "diagnoses": [d.as_dict() for d in self.diagnoses],
            "output": {"array": self.output, "why": self.output_reason,
                       **self._output_shapes()},
            **({"arrays": self.array_shapes(), "maps_shape_rule": MAPS_SHAPE_RULE}
               if self.request.arguments else {}),
            **({"kernel_output": {
                "from": KERNEL_OUTPUT_SOURCE, "text": self.kernel_output,
                "lines": self.kernel_output.count("\n"),
                "characters_cut": self.kernel_output_cut}} if self.kernel_output else {}),
            "errors": self.verdict.errors.summary(),
            "counts": {
                "elements": int(self.maps.count.size),
                "unwritten": self.verdict.unwritten,
                "collided": self.verdict.collided,
                "out_of_bounds": self.verdict.out_of_bounds,
                "atomic_updates": int(self.maps.atomics.sum()),
                "threads": int(self.maps.stores_per_thread.size),
                "threads_without_output": self.maps.threads_without_output,
                # (the same number, under the name earlier files gave it)
                "idle_threads": self.maps.threads_without_output,
            },
            **({"written_arrays": {w.name: written_counts(w) for w in self.maps.written}}
               if self.maps.written else {}),
            "out_of_bounds": [asdict(o) for o in self.maps.out_of_bounds],
            "divisions_by_zero": [asdict(d) for d in self.maps.divisions_by_zero],
            **self._analysis_summary(),
            "load_balance": load_balance(self.maps.stores_per_thread),
            "c_source": self.c_source,
            "output_init": self.output_init,
            "timings": [dict(asdict(t), label=BACKEND_LABELS.get(t.backend, t.backend),
                             is_gpu_time=t.is_gpu_time, gflops=t.gflops)
                        for t in self.timings],
            "notes": list(self.notes),
            **({"confirmation": self.confirmation.as_dict()} if self.confirmation else {}),
            **({"follows": self.follows} if self.follows else {}),
        }

    def _analysis_summary(self) -> dict:
        """The lockstep figures' keys; null (with the reason) where not measured."""
        if self.analysis is not None:
            return dict(self.analysis.summary(), analysis_source=self.analysis_note)
        return dict(unmeasured_summary(), analysis_source=self.analysis_note)

    def array_shapes(self) -> dict[str, dict]:
        """A described run's arrays: each one's own shape, and the shape
        every map of it has in ``maps.npz`` (``drawn_shape``: a 1-D array
        wrapped into rows, a 3-D one's slices stacked, a 2-D one as it is).
        Read maps and write maps of one array share that shape."""
        return {a.name: {"shape": list(a.shape), "maps_shape": list(drawn_shape(a.shape))}
                for a in self.request.arguments if hasattr(a, "shape")}

    def _output_shapes(self) -> dict:
        """A described run's output: its own shape, and the matrix its maps
        are drawn as (a 1-D output wrapped into rows of ``row_length``)."""
        described = next((a for a in self.request.arguments
                          if getattr(a, "name", None) == self.output), None)
        if described is None:
            return {}
        return {"shape": list(described.shape), "maps_shape": list(self.c.shape),
                **({"row_length": int(self.c.shape[1])} if len(described.shape) == 1 else {})}

    @property
    def input_names(self) -> tuple[str, ...]:
        """The kernel's input arrays, in order (A and B for a matmul)."""
        if not self.request.arguments:
            return ("A", "B")
        return tuple(a.name for a in self.request.arguments
                     if hasattr(a, "shape") and a.name != self.output)

    def read_maps(self) -> dict[str, np.ndarray]:
        """Read counts by name: ``reads_a`` and ``reads_b`` for a matmul,
        ``reads_<input>`` for a described run."""
        if not self.request.arguments:
            return {"reads_a": self.maps.reads_a, "reads_b": self.maps.reads_b}
        # (in the array's drawn shape, as its write maps and the output's are:
        # one shape per array, MAPS_SHAPE_RULE)
        shapes = self.array_shapes()
        return {f"reads_{name}": reads.reshape(shapes[name]["maps_shape"])
                if name in shapes and reads.size == np.prod(shapes[name]["maps_shape"])
                else reads for name, reads in zip(self.input_names, self.maps.reads)}

    def maps_arrays(self) -> dict[str, np.ndarray]:
        """The arrays written to ``maps.npz``.  Per-warp figures are (blocks,
        warps per block), NaN where a warp made no request there (for a branch:
        where no lane of the warp went on into it):
        ``sectors_site<n>`` (mean sectors per request at global access site
        n), ``ways_site<n>`` (mean passes at shared access site n),
        ``active_lanes_branch<n>`` (mean lanes taking branch n).
        ``oob_margin_top`` / ``_bottom`` / ``_left`` / ``_right``: where the
        out-of-bounds writes to C landed (``AccessMaps.oob_margin``).  Every
        other array a described kernel stores into has the same maps under
        names ending in ``_<array>`` (``count_sums``, ``oob_margin_top_sums``;
        ``written_maps``)."""
        if self.stowed is not None:
            raise RuntimeError("this result's maps are stowed on disk: unstow it first")
        m = self.maps
        arrays = {"count": m.count, "atomics": m.atomics, "min_writer": m.min_writer,
                  "max_writer": m.max_writer, "iteration": m.iteration,
                  "stores_per_thread": m.stores_per_thread, "oob_per_thread": m.oob_per_thread,
                  **self.read_maps(), "C": self.c}
        if self.reference.size:  # (a described run without a reference has none)
            arrays["reference"] = self.reference
        # where the out-of-bounds writes to C landed (records.OOB_MARGIN wide)
        for side, strip in zip(MARGIN_SIDES, m.oob_margin):
            arrays[f"oob_margin_{side}"] = strip
        if self.analysis is not None:
            for site in self.analysis.coalescing:
                arrays[f"sectors_site{site.site.site}"] = site.per_warp
            for site in self.analysis.bank_conflicts:
                arrays[f"ways_site{site.site.site}"] = site.per_warp
            for branch in self.analysis.divergence:
                arrays[f"active_lanes_branch{branch.branch.site}"] = branch.per_warp
        for written in m.written:
            arrays.update(written_maps(written))
        return arrays


#: How every map of an array is shaped, said once (result.json's
#: ``maps_shape_rule``, docs/own-kernels.md): the shape the app draws it in.
MAPS_SHAPE_RULE = ("every map of an array (its reads, its writes) has one shape, the one it "
                   "is drawn in: a 2-D array's own; a 1-D array of n elements wrapped into "
                   "rows, row length the divisor of n nearest above its square root (1000: "
                   "25 x 40), one row where none is near; a 3-D array d0 x d1 x d2 as its "
                   "slices stacked, (d0 * d1) x d2, row s * d1 + j holding [s, j, :]")


#: A written array's maps, by the name ``written_maps`` gives them before ``_<array>``.
WRITTEN_MAP_FIELDS = ("count", "atomics", "min_writer", "max_writer", "iteration",
                      "stores_per_thread")


def written_counts(written: WriteMaps) -> dict:
    """``result.json``'s figures of an array stored into besides the output
    (its elements never written are not a failure: a kernel may fill part
    of such an array, as a reduction fills one slot a block)."""
    return {"elements": int(written.count.size), "unwritten": written.unwritten,
            "collided": written.collided, "stores": int(written.count.sum()),
            "atomic_updates": int(written.atomics.sum()),
            "out_of_bounds_writes": written.oob_margin_total,
            "iterations": written.iterations}


def written_maps(written: WriteMaps) -> dict[str, np.ndarray]:
    """The maps of an array a kernel stores into besides its output, named
    as the output's with ``_<array>`` after them (in the shape it is drawn
    in: a 1-D array wrapped into rows)."""
    arrays = {f"{field}_{written.name}": getattr(written, field) for field in WRITTEN_MAP_FIELDS}
    for side, strip in zip(MARGIN_SIDES, written.oob_margin):
        arrays[f"oob_margin_{side}_{written.name}"] = strip
    return arrays


def load_balance(stores_per_thread: np.ndarray, bins: int = 16) -> dict:
    """Elements of the output stored per thread: the threads that stored none
    (``threads_without_output``; ``idle_threads``, its earlier name, the same
    number), min / mean / max, a histogram."""
    stores = np.asarray(stores_per_thread)
    if stores.size == 0:
        return {"threads": 0}
    top = int(stores.max())
    if top < bins:
        edges = np.arange(top + 2)  # one bin per count
    else:
        edges = np.linspace(0, top + 1, bins + 1)
    counts, edges = np.histogram(stores, bins=edges)
    without_output = int(np.count_nonzero(stores == 0))
    return {"threads": int(stores.size), "threads_without_output": without_output,
            "idle_threads": without_output,
            "min": int(stores.min()), "mean": float(stores.mean()), "max": top,
            "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}}
