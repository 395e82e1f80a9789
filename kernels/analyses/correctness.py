"""Is C right?  A float64 reference and a tolerance derived from the dtype and K.

The tolerance is the standard a-priori bound for a dot product of length K
computed in floating point (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., eq. 3.5):

    |C_hat - C| <= gamma_K * (|A| @ |B|)    elementwise, gamma_K = K u / (1 - K u)

with u the unit roundoff of the dtype (2**-24 for float32, 2**-53 for
float64).  We use gamma_{K+1} (one more rounding: the store to C, which may be
of a narrower type than the accumulator) and add the float64 reference's own
bound, which matters for float64 runs.  The bound holds whatever the order of
summation or use of FMA, so a correct kernel never fails it, while an index bug
changes elements by O(|A| @ |B|), far above it.
"""
from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field

import numpy as np

from ..blas import one_blas_thread
from ..words import counted

UNIT_ROUNDOFF = {"float32": 2.0**-24, "float64": 2.0**-53}


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u)."""
    if n * u >= 1:
        return float("inf")
    return n * u / (1 - n * u)


#: Rows of C compared per block: bounds the temporary |A| @ |B| block.
_BLOCK_ROWS = 512
#: Bounds of a C up to this many elements (8 MB of float64) are kept.
_KEPT_BOUND_ELEMENTS = 1 << 20


@dataclass(frozen=True, eq=False)
class Reference:
    """The float64 reference product, and what the elementwise bound needs."""

    c: np.ndarray
    abs_a: np.ndarray
    abs_b: np.ndarray
    scale: float
    floor: float
    #: bounds already worked out, by rows, for a C small enough to keep them
    #: (a sweep compares 64 runs against one reference)
    _bounds: dict = field(default_factory=dict, repr=False)

    def bound(self, rows: slice = slice(None)) -> np.ndarray:
        """The elementwise tolerance for ``rows`` of C."""
        key = (rows.start, rows.stop)
        bound = self._bounds.get(key)
        if bound is None:
            bound = self.scale * (self.abs_a[rows] @ self.abs_b) + self.floor
            if self.c.size <= _KEPT_BOUND_ELEMENTS:
                self._bounds[key] = bound
        return bound


def reference(a: np.ndarray, b: np.ndarray) -> Reference:
    """``A @ B`` in float64, and the elementwise tolerance for ``a.dtype``."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[1]
    u = UNIT_ROUNDOFF[a.dtype.name]
    # A tiny absolute floor covers underflow of products (never met with the
    # built-in patterns, whose products are far above the smallest normal).
    with one_blas_thread():
        product = a64 @ b64
    return Reference(c=product, abs_a=np.abs(a64), abs_b=np.abs(b64),
                     scale=gamma(k + 1, u) + gamma(k, UNIT_ROUNDOFF["float64"]),
                     floor=k * float(np.finfo(a.dtype).tiny))


@dataclass(frozen=True)
class ErrorFigures:
    """How far C is from the reference.

    The relative and max abs errors are NaN ("not computed") when any element
    of C is NaN or infinite: an error over the finite elements alone would read
    0 for a kernel that wrote nothing."""

    rel_error: float  # ||C - ref||_F / ||ref||_F; NaN when non_finite > 0
    max_abs_error: float
    #: the tolerance rel_error is held to: ||bound||_F / ||ref||_F
    rel_tolerance: float
    abs_tolerance: float  # max of the elementwise bound
    #: elements whose error exceeds their own bound
    wrong: int
    #: elements that are NaN or infinite (never written, or poisoned values read)
    non_finite: int
    #: worst error / bound ratio (<= 1 for a correct kernel)
    worst_ratio: float

    #: elements of C compared
    elements: int = 0
    #: an integer output, held to its reference exactly (as float64: exact up
    #: to 2**53 in magnitude)
    exact: bool = False

    @property
    def within_tolerance(self) -> bool:
        return self.wrong == 0 and self.non_finite == 0

    @property
    def computed(self) -> bool:
        """Whether the error figures mean anything (every element finite)."""
        return self.non_finite == 0

    def not_computed(self) -> str:
        """``"not computed: 12 of 16 elements NaN or infinite"`` (or "")."""
        if self.computed:
            return ""
        total = f" of {self.elements:,}" if self.elements else ""
        return (f"not computed: {self.non_finite:,}{total} element"
                f"{'s' if self.non_finite != 1 else ''} NaN or infinite")


    def describe(self, digits: int = 3) -> str:
        """The error figures in words, or why there are none."""
        if not self.computed:
            return f"relative error {self.not_computed()}"
        if self.exact:
            return (f"compared exactly (integers): {counted(self.wrong, 'element')} of "
                    f"{self.elements:,} differ; max abs error {self.max_abs_error:.{digits}g}")
        # Two figures, each with what it is compared with: the whole C against
        # the reference (Frobenius norms), and the worst element against its
        # own bound (the verdict checks every element against its bound).
        return (f"relative error ||C - ref|| / ||ref|| = {self.rel_error:.{digits}g} (the "
                f"bounds' norm: {self.rel_tolerance:.{digits}g}); max abs error "
                f"{self.max_abs_error:.{digits}g}; the worst element "
                f"{self.worst_ratio:.{digits}g}x its own bound")

    def summary(self) -> dict:
        """JSON-ready: the figures not computed are null, with the reason."""
        figures = asdict(self)
        if not self.computed:
            figures.update(rel_error=None, max_abs_error=None, not_computed=self.not_computed())
        if not math.isfinite(self.worst_ratio):
            figures["worst_ratio"] = None
        return figures


#: Below this many elements a block is compared with numpy: numba's compile of
#: the loop (~0.5 s in a new process with an empty cache) would be most of a
#: small run's time (the instant tier answers in tens of milliseconds).
NUMPY_COMPARE_ELEMENTS = 1 << 18


def _compare_block(c: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Sums for one block of rows: [sum diff^2, max diff, sum bound^2, max bound,
    wrong, non-finite, worst ratio, sum ref^2]."""
    if c.size <= NUMPY_COMPARE_ELEMENTS:
        return _compare_block_numpy(c, ref, bound)
    out = np.zeros(8)
    _compiled_compare(c.dtype)(c, ref, bound, 0.0, 0.0, out)
    return out


def _compare_block_elementwise(c: np.ndarray, ref: "ElementwiseReference",
                               rows: slice) -> np.ndarray:
    """:func:`_compare_block`'s sums against a user's reference, its bound
    ``rtol * |ref| + floor`` worked out element by element inside the loop:
    made as arrays first, it was three more passes over 128 MB and a fresh
    temporary per block, 0.1 s of a 4096 x 4096 run's end."""
    expected = ref.c[rows]
    if c.size <= NUMPY_COMPARE_ELEMENTS:
        return _compare_block_numpy(c, expected, ref.bound(rows))
    out = np.zeros(8)
    _compiled_compare(c.dtype)(c, expected, NO_BOUNDS, float(ref.rtol), float(ref.floor), out)
    return out


#: The bounds the compiled loop is given where it makes each element's bound
#: itself, ``rtol * |ref| + floor`` (no rows: none given).
NO_BOUNDS = np.zeros((0, 0))

#: The compiled comparison, by C's dtype: native code loaded without numba
#: where numba made it before (derived/native.py), else numba's.
_compare_compiled: dict[np.dtype, object] = {}
_compiling_lock = threading.Lock()


def _compiled_compare(dtype: np.dtype):
    with _compiling_lock:  # (one per dtype, whichever thread asks first)
        found = _compare_compiled.get(np.dtype(dtype))
        if found is None:
            found = _compare_compiled[np.dtype(dtype)] = _load_compare(np.dtype(dtype))
    return found


def _load_compare(dtype: np.dtype):
    """The comparison for ``dtype``: its native code if kept (no numba import
    in a process that only compares: ~0.5 s of a core, which the reference
    made while the kernel runs took from the kernel's run), else numba's,
    kept as native code for the next process."""
    import functools
    import hashlib
    import inspect
    from types import SimpleNamespace

    from ..cache import cache_dir
    from ..derived.native import keep_native, load_native

    @functools.cache
    def compiled():
        from numba import njit

        function = njit(cache=True, nogil=True, error_model="numpy", _nrt=False)(
            _compare_block_py)
        return SimpleNamespace(compare=function)

    code = hashlib.sha256(inspect.getsource(_compare_block_py).encode()).hexdigest()[:16]
    path = cache_dir() / "__pycache__" / f"compare_{dtype.name}_{code}.native.json"
    native = load_native(path, compiled)
    if native is not None:
        return native.compare.once  # (new blocks each call: none kept alive)
    function = compiled().compare
    first = np.zeros((1, 1), dtype), np.zeros((1, 1)), np.ones((1, 1)), 0.0, 0.0, np.zeros(8)
    function(*first)  # (compiled, or loaded from numba's cache, here)
    keep_native(path, {"compare": function})
    return function


def prepare_compare(dtype: np.dtype, ref: "ElementwiseReference") -> None:
    """Load :func:`compare`'s compiled loop for an output of ``dtype`` now,
    if its blocks will use it (numba's import and its cache are ~0.6 s of a
    new process; its native code ~0.05 s), off the run's end."""
    rows, columns = ref.c.shape
    if not rows or min(rows, _BLOCK_ROWS) * columns <= NUMPY_COMPARE_ELEMENTS:
        return
    _compiled_compare(dtype)


def _compare_block_py(c, ref, bound, rtol, floor, out):
    # (``bound`` without rows: each element's bound is made here from
    # ``rtol`` and ``floor``, a user's reference's, never made as arrays)
    given = bound.shape[0] > 0
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            value = np.float64(c[i, j])
            r = ref[i, j]
            t = bound[i, j] if given else rtol * abs(r) + floor
            out[2] += t * t
            out[3] = max(out[3], t)
            out[7] += r * r
            if not np.isfinite(value):
                out[5] += 1
                continue
            d = abs(value - r)
            out[0] += d * d
            out[1] = max(out[1], d)
            if d > t:
                out[4] += 1
            if d > 0:
                out[6] = max(out[6], d / t if t > 0 else np.inf)
    return 0


def _compare_block_numpy(c, ref, bound):
    """``_compare_block_py``'s figures, with whole-array operations."""
    out = np.zeros(8)
    value = c.astype(np.float64)
    out[2] = float(np.sum(bound * bound)) if bound.size else 0.0
    out[3] = max(0.0, float(bound.max())) if bound.size else 0.0
    out[7] = float(np.sum(ref * ref)) if ref.size else 0.0
    finite = np.isfinite(value)
    out[5] = float(np.count_nonzero(~finite))
    d = np.abs(value - ref)[finite]
    t = bound[finite]
    if d.size:
        out[0] = float(np.sum(d * d))
        out[1] = max(0.0, float(d.max()))
        out[4] = float(np.count_nonzero(d > t))
        positive = d > 0
        if positive.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = np.where(t[positive] > 0, d[positive] / t[positive], np.inf)
            out[6] = max(0.0, float(ratios.max()))
    return out


def compare(c: np.ndarray, ref: Reference) -> ErrorFigures:
    """Error figures of ``c`` against ``ref``, in blocks of rows (no full-size
    temporaries: C can be 4096 x 4096)."""
    totals = np.zeros(8)
    elementwise = isinstance(ref, ElementwiseReference)
    for start in range(0, c.shape[0], _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        if elementwise:
            part = _compare_block_elementwise(np.ascontiguousarray(c[rows]), ref, rows)
        else:
            with one_blas_thread():
                bound = ref.bound(rows)
            part = _compare_block(np.ascontiguousarray(c[rows]), ref.c[rows], bound)
        totals[[0, 2, 4, 5, 7]] += part[[0, 2, 4, 5, 7]]
        totals[[1, 3, 6]] = np.maximum(totals[[1, 3, 6]], part[[1, 3, 6]])
    ref_norm = float(np.sqrt(totals[7]))
    denominator = ref_norm if ref_norm > 0 else 1.0
    finite = totals[5] == 0
    return ErrorFigures(
        rel_error=float(np.sqrt(totals[0])) / denominator if finite else math.nan,
        max_abs_error=float(totals[1]) if finite else math.nan,
        rel_tolerance=float(np.sqrt(totals[2])) / denominator,
        abs_tolerance=float(totals[3]),
        wrong=int(totals[4]),
        non_finite=int(totals[5]),
        worst_ratio=float(totals[6]),
        elements=int(c.size),
        exact=c.dtype.kind in "iu",
    )


# -- a described run (issue 22): the user's own reference ------------------------------

#: A described run's reference array when it has none: empty, left out of maps.npz.
NO_REFERENCE_ARRAY = np.empty((0, 0))
#: Why a described run without a reference has no correctness verdict.
NO_REFERENCE = "no reference given (--reference FILE:FUNCTION): maps and checks only"
#: the same, for the Python API's run on the caller's arrays
NO_REFERENCE_GIVEN = "no reference given (threadmap's reference=): maps and checks only"


def unchecked(c: np.ndarray) -> ErrorFigures:
    """Error figures of a run with no reference: nothing compared; the
    output's NaN or infinite elements (never written) still counted."""
    non_finite = int(c.size - np.count_nonzero(np.isfinite(c)))
    return ErrorFigures(rel_error=math.nan, max_abs_error=math.nan, rel_tolerance=math.nan,
                        abs_tolerance=math.nan, wrong=0, non_finite=non_finite,
                        worst_ratio=math.nan, elements=int(c.size))


def described_rtol(dtype: str) -> float:
    """The elementwise relative tolerance of a described run: the square
    root of the dtype's unit roundoff (2**-12 for float32, 2**-26.5 for
    float64).  A kernel whose elements each sum up to 1 / sqrt(u) terms
    (4,096 in float32) stays within it by the same a-priori bound as the
    matmul's (n u, Higham eq. 3.5); an index bug moves an element by the
    size of the data, far past it.  Integers are exact: 0 (a count off by
    one is wrong)."""
    if np.dtype(dtype).kind in "iu":
        return 0.0
    return math.sqrt(UNIT_ROUNDOFF[dtype])


@dataclass(frozen=True, eq=False)
class ElementwiseReference:
    """A user's expected output (float64) and its bound, per element
    ``rtol * |ref| + floor``, the floor ``rtol`` times the rms of the
    expected values (for elements that cancel to near zero)."""

    c: np.ndarray
    rtol: float
    floor: float

    def bound(self, rows: slice = slice(None)) -> np.ndarray:
        return self.rtol * np.abs(self.c[rows]) + self.floor


def elementwise_reference(expected: np.ndarray, dtype: str) -> ElementwiseReference:
    """``expected`` (the user's reference's output) with the tolerance of
    ``dtype`` (:func:`described_rtol`)."""
    c = np.ascontiguousarray(expected, dtype=np.float64)
    flat = c.reshape(-1)
    # (one dot product, no temporaries: 16M elements took 2.5 s through masks)
    square = float(np.dot(flat, flat)) if flat.size else 0.0
    if not math.isfinite(square):  # NaN or infinite expected values: over the rest
        finite = flat[np.isfinite(flat)]
        square = float(np.dot(finite, finite)) * flat.size / max(finite.size, 1)
    rms = math.sqrt(square / max(flat.size, 1))
    rtol = described_rtol(dtype)
    return ElementwiseReference(c, rtol, rtol * rms)
