"""Input matrices for a run.

``random`` is the default on purpose: all-ones inputs hide index bugs (every
wrong element of A or B is also 1), which is the seed answer's lesson.
"""
from __future__ import annotations

import numpy as np


def make_inputs(pattern: str, m: int, k: int, n: int, dtype: str,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n), C-contiguous, of ``dtype``.

    * ``random``: uniform in [-1, 1), from ``numpy.random.default_rng(seed)``.
    * ``ones``: every element 1.
    * ``identity``: A is the m x k identity (ones on the diagonal), B random,
      so C holds B's first rows exactly: easy to read off.
    * ``arange``: A[r, c] = (r * k + c) / (m * k), B likewise: every element
      distinct and in [0, 1).
    """
    np_dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)

    def uniform(rows: int, cols: int) -> np.ndarray:
        return (rng.random((rows, cols)) * 2.0 - 1.0).astype(np_dtype)

    if pattern == "random":
        a, b = uniform(m, k), uniform(k, n)
    elif pattern == "ones":
        a, b = np.ones((m, k), np_dtype), np.ones((k, n), np_dtype)
    elif pattern == "identity":
        a, b = np.eye(m, k, dtype=np_dtype), uniform(k, n)
    elif pattern == "arange":
        a = (np.arange(m * k, dtype=np.float64).reshape(m, k) / (m * k)).astype(np_dtype)
        b = (np.arange(k * n, dtype=np.float64).reshape(k, n) / (k * n)).astype(np_dtype)
    else:
        raise ValueError(f"unknown input pattern {pattern!r}")
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def poisoned_output(m: int, n: int, dtype: str, zero: bool = False) -> np.ndarray:
    """C before a run: NaN everywhere, so that an element never written shows;
    zeros for kernels that accumulate into C (their author's host code zeroes it)."""
    return np.zeros((m, n), dtype) if zero else np.full((m, n), np.nan, dtype)
