"""Input matrices for a run.

``random`` is the default on purpose: all-ones inputs hide index bugs (every
wrong element of A or B is also 1), which is the seed answer's lesson.
"""
from __future__ import annotations

import numpy as np

from .errors import RequestError


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
    return np.zeros((m, n), dtype) if zero else np.full((m, n), poison_value(dtype), dtype)


def poison_value(dtype) -> float | int:
    """What an output holds before a run: NaN, or for an integer output (which
    cannot hold NaN) the value furthest from any count or index, its type's
    lowest (highest when unsigned).  The write counts show an unwritten element
    either way; the poison makes it fail against a reference too."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    info = np.iinfo(dtype)
    return info.max if dtype.kind == "u" else info.min


#: Integer inputs of the ``random`` pattern are uniform in [0, INTEGER_SPAN):
#: small and never negative, so that one used as an index stays in bounds of
#: any array that long (a histogram's keys, a gather's indices).
INTEGER_SPAN = 16


def make_described_inputs(arguments, names: tuple[str, ...], pattern: str,
                          seed: int = 0) -> tuple[np.ndarray, ...]:
    """The input arrays ``names`` of a described run (``arguments``: the
    descriptions, sources/arguments.py), each of its own shape and dtype, in
    that order, filled as :func:`make_inputs` fills A and B:

    * ``random``: uniform in [-1, 1), one generator for all, in order
      (integers: uniform in [0, INTEGER_SPAN));
    * ``ones``: every element 1;
    * ``identity``: a 2-D array the identity (ones on its diagonal), others random;
    * ``arange``: element e of an array of S elements is e / S (integers: e,
      wrapped to the type).
    """
    rng = np.random.default_rng(seed)
    by_name = {a.name: a for a in arguments}
    arrays = []
    for name in names:
        argument = by_name[name]
        dtype, shape = np.dtype(argument.dtype), tuple(argument.shape)
        size = int(np.prod(shape))
        if pattern == "ones":
            array = np.ones(shape, dtype)
        elif pattern == "arange" and dtype.kind in "iu":
            array = np.arange(size, dtype=np.int64).reshape(shape).astype(dtype)
        elif pattern == "arange":
            array = (np.arange(size, dtype=np.float64) / size).reshape(shape).astype(dtype)
        elif pattern == "identity" and len(shape) == 2:
            array = np.eye(*shape, dtype=dtype)
        elif pattern in ("random", "identity"):
            array = _uniform(rng, shape, dtype)
        else:
            raise ValueError(f"unknown input pattern {pattern!r}")
        arrays.append(np.ascontiguousarray(array))
    return tuple(arrays)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Uniform in [-1, 1), made in place in ``dtype`` where numpy can (float32
    and float64): no float64 temporaries three times the array's size, for
    fresh memory takes up to 2.5 ms a MB to fault in on a VM (a 4096 x 4096
    float32 input made through float64 touched ~470 MB, not 67)."""
    if dtype.kind in "iu":
        return rng.integers(0, INTEGER_SPAN, shape, dtype=dtype)
    if dtype in (np.float32, np.float64):
        array = rng.random(shape, dtype=dtype)
        array *= 2
        array -= 1
        return array
    return (rng.random(shape) * 2.0 - 1.0).astype(dtype)


def reads_output_in_place(plan) -> bool:
    """The kernel loads elements of its output (``x[i] = x[i] * 2``): its
    starting values matter.  One that only updates it atomically (a
    histogram) accumulates into zeros, as its host code would give it."""
    from .derived.transform import access_sites

    return plan.reads_output and any(site.array == plan.output and site.kind == "load"
                                     for site in access_sites(plan))


#: How the given arrays are named in their ``.npz`` (before the parameter's name).
GIVEN_PREFIX = "arg_"


def load_given_inputs(path: str, arguments, names: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """The arrays ``names`` from the caller's ``.npz`` (written by the Python
    API, live.py), each checked against its description; never unpickled."""
    by_name = {a.name: a for a in arguments}
    arrays = []
    try:
        with np.load(path, allow_pickle=False) as given:
            for name in names:
                argument = by_name[name]
                array = given[GIVEN_PREFIX + name]
                if array.dtype != np.dtype(argument.dtype) or array.shape != tuple(argument.shape):
                    raise RequestError(f"the given array {name} is {array.dtype}{list(array.shape)}, "
                                       f"not {argument} as described")
                arrays.append(np.ascontiguousarray(array))
    except (OSError, KeyError, ValueError) as exc:
        raise RequestError(f"the given arrays cannot be read back from {path}: {exc}") from None
    return tuple(arrays)


def starts_from_given_values(request, plan) -> bool:
    """Whether the output starts from values it is given or made: it is read
    in place (its starting values matter), or the caller gave them for a
    kernel that accumulates into it (atomics: the caller's zeros, or not)."""
    return reads_output_in_place(plan) or bool(request.given_inputs and plan.reads_output)


def described_arrays(request, plan):
    """A described run's inputs, in the plan's order, and the output's
    starting values when the kernel reads it in place (made as the inputs
    are, right after them, or the caller's; shaped as the maps draw it), else
    None.  The reference (reference_code.py) makes the same again."""
    in_place = starts_from_given_values(request, plan)
    names = plan.inputs + ((plan.output,) if in_place else ())
    if request.given_inputs:
        arrays = load_given_inputs(request.given_inputs, request.arguments, names)
    else:
        arrays = make_described_inputs(request.arguments, names, request.pattern, request.seed)
    if not in_place:
        return arrays, None
    return arrays[:-1], arrays[-1].reshape(request.m, request.n)
