"""``maps.npz``: a result's maps, lean on disk, read back exactly.

A 4096 x 4096 run's maps are ~0.5 GB in memory (int32 counts, int64 reads,
a float64 reference).  On disk each map takes what its values need:

* integer maps in the smallest integer type that holds their range (a write
  count of 0-1 in uint8, thread ids in 32 bits only past 65,535 threads), or,
  where that deflates to less than half, as differences from one element to
  the next (thread ids step by one along a row);
* an integer map made of long runs of one value (a write count of 1
  everywhere; the differences of a grid-stride writer map: +1 but at every
  stride) as its runs, each a value and a length ("runs", "delta+runs"):
  found in one pass, where deflating 67 MB of differences took 0.11 s;
* a map that is zero everywhere (``atomics`` without atomic updates) is left
  out, and so is ``max_writer`` where it equals ``min_writer`` (no element
  stored by two threads); ``result.json`` says so under ``maps``;
* ``reference`` is the float64 reference rounded to the run's dtype: for
  float32 within half an ulp (6e-8 relative), 20x under the float32
  tolerance; the error figures in ``result.json`` come from the float64 one;
* integer maps are deflated (level 1: runs of equal counts shrink to
  nothing, at ~0.5 GB/s); floating-point maps are stored, as random
  mantissas do not compress.

:func:`load_maps` gives back every map with its dtype in memory.
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

#: Integer types tried, smallest first.
_INTEGER_TYPES = (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64)


def smallest_integer_type(array: np.ndarray) -> np.dtype:
    """The smallest integer dtype that holds every value of ``array``."""
    if array.size == 0:
        return np.dtype(np.uint8)
    low, high = int(array.min()), int(array.max())
    for candidate in _INTEGER_TYPES:
        info = np.iinfo(candidate)
        if info.min <= low and high <= info.max:
            return np.dtype(candidate)
    return np.dtype(np.int64)


def compact_maps(arrays: dict[str, np.ndarray], dtype: str) -> tuple[dict, dict]:
    """What to store, and the layout (for ``result.json``) that restores the
    rest: ``{"stored": {name: {stored, dtype, encoding}}, "left_out": {name:
    {why, shape, dtype, value}}, "same_as": {name: other}}``."""
    stored: dict[str, np.ndarray] = {}
    layout: dict = {"stored": {}, "left_out": {}, "same_as": {}}
    for name, array in arrays.items():
        array = np.asarray(array)
        if name == "max_writer" and "min_writer" in arrays and np.array_equal(
                array, arrays["min_writer"]):
            layout["same_as"][name] = "min_writer"
            continue
        encoding = "raw"
        if array.dtype.kind in "iub":
            if array.size and not array.any():
                layout["left_out"][name] = {"why": "zero everywhere", "value": 0,
                                            "shape": list(array.shape),
                                            "dtype": array.dtype.str}
                continue
            value, encoding = _smallest_encoding(array)
        elif name == "reference" and array.dtype != np.dtype(dtype):
            value = array.astype(np.dtype(dtype))
        else:
            value = array
        stored[name] = value
        layout["stored"][name] = {"stored": value.dtype.str, "dtype": array.dtype.str,
                                  "shape": list(array.shape), "encoding": encoding}
    return stored, layout


#: Maps this large (elements) are tried with delta encoding, judged on their
#: first _SAMPLE elements (deflating 2 x 1 MB samples cost 5 ms a map, 0.3 s of
#: a 64-configuration sweep; the verdict was the same on 128 KB).
_DELTA_FROM = 1 << 16
_SAMPLE = 1 << 15
#: Runs are stored where they average this many elements or more (in the
#: sample, then over the whole map): shorter ones deflate as well, and the
#: pass that finds them would be wasted.
_RUN_LENGTH = 256


def _run_count(flat: np.ndarray) -> int:
    return 1 + int(np.count_nonzero(flat[1:] != flat[:-1])) if flat.size else 0


def _runs(flat: np.ndarray) -> np.ndarray | None:
    """``flat`` as a 2 x R array of run values and run lengths, in the
    smallest integer type that holds both; None where its runs are short."""
    starts = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    if (starts.size + 1) * _RUN_LENGTH > flat.size:
        return None
    starts = np.concatenate(([0], starts))
    runs = np.stack([flat[starts].astype(np.int64), np.diff(starts, append=flat.size)])
    return runs.astype(smallest_integer_type(runs))


def _differences(flat: np.ndarray) -> np.ndarray:
    """Each element minus the one before (the first as it is), wide enough."""
    low, high = int(flat.min()), int(flat.max())
    wide = np.int64 if high - low >= 2**31 else np.int32
    delta = np.empty(flat.shape, wide)
    delta[0] = flat[0]
    np.subtract(flat[1:], flat[:-1], out=delta[1:], dtype=wide)
    return delta


def _smallest_encoding(array: np.ndarray) -> tuple[np.ndarray, str]:
    """``array`` as its runs where they are long, else in its smallest integer
    type, or as its differences from one element to the next ("delta") where
    a sample deflates to less than half: thread ids along a row of C step by
    one, so their differences shrink to almost nothing, and quickly, where the
    ids themselves do not."""
    if array.size < _DELTA_FROM:
        return _in_smallest_type(array), "raw"
    flat = array.reshape(-1)
    sample = flat[:_SAMPLE].astype(np.int64)
    steps = np.diff(sample)
    short = _SAMPLE // _RUN_LENGTH
    if _run_count(sample) <= short:
        runs = _runs(flat)
        if runs is not None:
            return runs, "runs"
    if _run_count(steps) <= short:
        runs = _runs(_differences(flat))
        if runs is not None:
            return runs, "delta+runs"
    small = _stored_type(array)
    if len(zlib.compress(steps.astype(smallest_integer_type(steps)).tobytes(), 1)) * 2 \
            < len(zlib.compress(sample.astype(small).tobytes(), 1)):
        return _in_smallest_type(_differences(flat)), "delta"
    return _in_smallest_type(array, small), "raw"


def _in_smallest_type(array: np.ndarray, small: np.dtype | None = None) -> np.ndarray:
    """``array`` in ``small`` (its smallest stored type, worked out if not given)."""
    small = _stored_type(array) if small is None else small
    return array if small == array.dtype else array.astype(small)


def _stored_type(array: np.ndarray) -> np.dtype:
    small = smallest_integer_type(array)
    return array.dtype if small.itemsize == array.dtype.itemsize else small  # no copy


def _unrun(runs: np.ndarray, size: int) -> np.ndarray:
    """The flat array whose runs ``runs`` holds."""
    values, lengths = runs[0], runs[1].astype(np.int64)
    if values.size > 4096:
        return np.repeat(values, lengths)
    flat = np.empty(size, runs.dtype)
    start = 0
    for value, length in zip(values.tolist(), lengths.tolist()):
        flat[start:start + length] = value  # a fill: np.repeat is 10x slower on long runs
        start += length
    return flat


def save_maps(path: Path, arrays: dict[str, np.ndarray], dtype: str) -> dict:
    """Write ``arrays`` to ``path`` (an .npz numpy reads); return the layout."""
    stored, layout = compact_maps(arrays, dtype)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True,
                         compresslevel=1) as archive:
        for name, array in stored.items():
            # Each member takes the archive's compression at the time it opens.
            archive.compression = (zipfile.ZIP_DEFLATED if array.dtype.kind in "iub"
                                   else zipfile.ZIP_STORED)
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, np.ascontiguousarray(array),
                                       allow_pickle=False)
    layout["bytes"] = Path(path).stat().st_size
    return layout


def load_maps(path: Path, layout: dict | None = None) -> dict[str, np.ndarray]:
    """Every map of a ``maps.npz``, in its in-memory dtype (``layout`` from
    ``result.json``'s ``maps``; without it, as stored)."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    if not layout:
        return arrays
    for name, spec in layout.get("stored", {}).items():
        value, encoding = arrays[name], spec["encoding"]
        if encoding in ("runs", "delta+runs"):
            value = _unrun(value, int(np.prod(spec["shape"], dtype=np.int64)))
        if encoding in ("delta", "delta+runs"):
            # The running sums are the map's own values, so its own integer
            # type holds each of them (wrapping, where the differences were
            # wider, back to the same value): no 8-byte temporary, which
            # cost 0.4 s of fresh memory for 4096 x 4096.
            dtype = np.dtype(spec["dtype"])
            value = np.cumsum(value, dtype=dtype if dtype.kind in "iu" else np.int64)
        value = value.reshape(spec["shape"])
        arrays[name] = value.astype(np.dtype(spec["dtype"]), copy=False)
    for name, spec in layout.get("left_out", {}).items():
        arrays[name] = np.full(spec["shape"], spec["value"], np.dtype(spec["dtype"]))
    for name, other in layout.get("same_as", {}).items():
        arrays[name] = arrays[other].copy()
    for name, spec in layout.get("shared", {}).items():
        # a map every configuration of a sweep has, in one file beside them
        with np.load(Path(path).parent / spec["file"], allow_pickle=False) as archive:
            arrays[name] = archive[name].astype(np.dtype(spec["dtype"]))
    return arrays
