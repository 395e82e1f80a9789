"""``maps.npz``: a result's maps, lean on disk, read back exactly.

A 4096 x 4096 run's maps are ~0.5 GB in memory (int32 counts, int64 reads,
a float64 reference).  On disk each map takes what its values need:

* integer maps in the smallest integer type that holds their range (a write
  count of 0-1 in uint8, thread ids in 32 bits only past 65,535 threads), or,
  where that deflates to less than half, as differences from one element to
  the next (thread ids step by one along a row);
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


def _smallest_encoding(array: np.ndarray) -> tuple[np.ndarray, str]:
    """``array`` in its smallest integer type, or its differences from one
    element to the next ("delta") where a sample deflates to less than half:
    thread ids along a row of C step by one, so their differences shrink to
    almost nothing, and quickly, where the ids themselves do not."""
    small = smallest_integer_type(array)
    if small.itemsize == array.dtype.itemsize:
        small = array.dtype  # no smaller: no copy
    if array.size >= _DELTA_FROM:
        flat = array.reshape(-1)
        sample = flat[:_SAMPLE].astype(np.int64)
        steps = np.diff(sample)
        if len(zlib.compress(steps.astype(smallest_integer_type(steps)).tobytes(), 1)) * 2 \
                < len(zlib.compress(sample.astype(small).tobytes(), 1)):
            low, high = int(flat.min()), int(flat.max())
            wide = np.int64 if high - low >= 2**31 else np.int32
            delta = np.empty(flat.shape, wide)
            delta[0] = flat[0]
            np.subtract(flat[1:], flat[:-1], out=delta[1:], dtype=wide)
            narrow = smallest_integer_type(delta)
            return (delta if narrow.itemsize == delta.itemsize else delta.astype(narrow)), \
                "delta"
    return (array if small == array.dtype else array.astype(small)), "raw"


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
        value = arrays[name]
        if spec["encoding"] == "delta":
            value = np.cumsum(value, dtype=np.int64).reshape(spec["shape"])
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
