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

from dataclasses import dataclass

import numpy as np

UNIT_ROUNDOFF = {"float32": 2.0**-24, "float64": 2.0**-53}


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u)."""
    if n * u >= 1:
        return float("inf")
    return n * u / (1 - n * u)


@dataclass(frozen=True, eq=False)
class Reference:
    """The float64 reference product and the elementwise error bound."""

    c: np.ndarray
    bound: np.ndarray


def reference(a: np.ndarray, b: np.ndarray) -> Reference:
    """``A @ B`` in float64, and the elementwise tolerance for ``a.dtype``."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[1]
    magnitude = np.abs(a64) @ np.abs(b64)
    u = UNIT_ROUNDOFF[a.dtype.name]
    scale = gamma(k + 1, u) + gamma(k, UNIT_ROUNDOFF["float64"])
    # A tiny absolute floor covers underflow of products (never met with the
    # built-in patterns, whose products are far above the smallest normal).
    floor = k * np.finfo(a.dtype).tiny
    return Reference(c=a64 @ b64, bound=scale * magnitude + floor)


@dataclass(frozen=True)
class ErrorFigures:
    """How far C is from the reference, over the elements that were written."""

    rel_error: float  # ||C - ref||_F / ||ref||_F over finite elements
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

    @property
    def within_tolerance(self) -> bool:
        return self.wrong == 0 and self.non_finite == 0


def compare(c: np.ndarray, ref: Reference) -> ErrorFigures:
    """Error figures of ``c`` against ``ref``."""
    c64 = c.astype(np.float64)
    finite = np.isfinite(c64)
    diff = np.where(finite, np.abs(c64 - ref.c), 0.0)
    ref_norm = float(np.linalg.norm(ref.c))
    denominator = ref_norm if ref_norm > 0 else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff > 0, diff / ref.bound, 0.0)
    return ErrorFigures(
        rel_error=float(np.linalg.norm(diff)) / denominator,
        max_abs_error=float(diff.max()) if diff.size else 0.0,
        rel_tolerance=float(np.linalg.norm(ref.bound)) / denominator,
        abs_tolerance=float(ref.bound.max()),
        wrong=int(np.count_nonzero(diff > ref.bound)),
        non_finite=int(np.count_nonzero(~finite)),
        worst_ratio=float(ratio.max()) if ratio.size else 0.0,
    )
