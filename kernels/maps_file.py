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

from .errors import ThreadMapError

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


def save_maps(path: Path, arrays: dict[str, np.ndarray], dtype: str,
              run_id: str | None = None) -> dict:
    """Write ``arrays`` to ``path`` (an .npz numpy reads); return the layout.
    ``run_id`` goes into the archive's comment and the layout, so that
    :func:`load_maps` can tell that a ``result.json`` and a ``maps.npz`` come
    from one run."""
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
        if run_id:
            archive.comment = f"{_RUN_ID_PREFIX}{run_id}".encode()
            layout["run_id"] = run_id
    layout["bytes"] = Path(path).stat().st_size
    return layout


_RUN_ID_PREFIX = "threadmap run "


class MapsFileError(ThreadMapError):
    """A maps file that cannot be read back: damaged, from another run, or
    asking for more than its run could hold."""


#: The types a map is stored and restored in (no objects: nothing is unpickled).
_MAP_KINDS = "biuf"
_ENCODINGS = ("raw", "runs", "delta", "delta+runs")


def load_maps(path: Path, layout: dict | None = None) -> dict[str, np.ndarray]:
    """Every map of a ``maps.npz``, in its in-memory dtype (``layout`` from
    ``result.json``'s ``maps``; without it, as stored).

    The file is untrusted: each member's header is read and checked (a plain
    numeric type, a size that matches the member, the shape ``layout`` gives)
    before its data is read, the whole is bounded by the memory available,
    files it names must lie beside it, and anything wrong is one
    :class:`MapsFileError`, never a traceback or a huge allocation."""
    path = Path(path)
    try:
        return _load_maps(path, layout)
    except MapsFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile,
            zlib.error, OverflowError, MemoryError, IndexError, AttributeError) as exc:
        raise MapsFileError(f"{path}: not a maps file ThreadMap can read, or damaged "
                            f"({type(exc).__name__}: {exc})") from None


def _load_maps(path: Path, layout: dict | None) -> dict[str, np.ndarray]:
    from .request import available_memory, format_bytes

    budget = int(0.6 * (available_memory() or 8 * 2**30))
    spent = [0]

    def spend(nbytes: int, what: str) -> None:
        spent[0] += nbytes
        if spent[0] > budget:
            raise MapsFileError(f"{path}: {what} asks for {format_bytes(spent[0])} in all, more "
                                f"than the {format_bytes(budget)} this machine can spare; the "
                                "file or its result.json is damaged")

    layout = layout if isinstance(layout, dict) else None
    with zipfile.ZipFile(path) as archive:
        if layout and layout.get("run_id"):
            comment = archive.comment.decode("utf-8", "replace")
            if comment != f"{_RUN_ID_PREFIX}{layout['run_id']}":
                raise MapsFileError(
                    f"{path} is not the maps file of its result.json (it comes from another "
                    "run, or was cut short): run the command again")
        arrays = {}
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            spec = (layout or {}).get("stored", {}).get(name)
            arrays[name] = _read_member(archive, info, spec, spend)
    if not layout:
        return arrays
    for name, spec in layout.get("stored", {}).items():
        if name not in arrays:
            raise MapsFileError(f"{path}: the map {name!r} that result.json lists is missing")
        value, encoding = arrays[name], spec["encoding"]
        dtype = _map_dtype(spec["dtype"], name)
        shape = _shape(spec["shape"], name)
        elements = int(np.prod(shape, dtype=np.int64))
        if encoding not in _ENCODINGS:
            raise MapsFileError(f"{path}: unknown encoding {encoding!r} of {name!r}")
        if encoding in ("runs", "delta+runs"):
            if value.ndim != 2 or value.shape[0] != 2 or value.dtype.kind not in "iu":
                raise MapsFileError(f"{path}: the runs of {name!r} are damaged")
            lengths = value[1].astype(np.int64)
            # Each length checked before they are summed: int64 sums wrap (runs of
            # 2**62 once added up to 64 and overran np.repeat's buffer).
            if lengths.size > max(elements, 1) or (lengths < 0).any() \
                    or (lengths > elements).any() \
                    or int(lengths.max(initial=0)) * lengths.size >= 2**63 \
                    or int(lengths.sum()) != elements:
                raise MapsFileError(f"{path}: the runs of {name!r} do not add up to its shape")
            spend(elements * max(value.dtype.itemsize, dtype.itemsize), f"the map {name!r}")
            value = _unrun(value, elements)
        elif value.size != elements:
            raise MapsFileError(f"{path}: the map {name!r} holds {value.size:,} elements, "
                                f"not the {elements:,} of its shape {shape}")
        if encoding in ("delta", "delta+runs"):
            # The running sums are the map's own values, so its own integer
            # type holds each of them (wrapping, where the differences were
            # wider, back to the same value): no 8-byte temporary, which
            # cost 0.4 s of fresh memory for 4096 x 4096.
            spend(elements * dtype.itemsize, f"the map {name!r}")
            value = np.cumsum(value, dtype=dtype if dtype.kind in "iu" else np.int64)
        value = value.reshape(shape)
        arrays[name] = value.astype(dtype, copy=False)
    for name, spec in layout.get("left_out", {}).items():
        dtype = _map_dtype(spec["dtype"], name)
        shape = _shape(spec["shape"], name)
        spend(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, f"the map {name!r}")
        value = spec.get("value", 0)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise MapsFileError(f"{path}: the value of {name!r} is not a number")
        arrays[name] = np.full(shape, value, dtype)
    for name, other in layout.get("same_as", {}).items():
        if other not in arrays:
            raise MapsFileError(f"{path}: {name!r} is said to equal {other!r}, which is missing")
        spend(arrays[other].nbytes, f"the map {name!r}")
        arrays[name] = arrays[other].copy()
    for name, spec in layout.get("shared", {}).items():
        # a map every configuration of a sweep has, in one file beside them:
        # the one that sweep wrote (its run id), of the shape it names
        beside = _file_beside(path, spec.get("file"))
        with zipfile.ZipFile(beside) as archive:
            if spec.get("run_id") and archive.comment.decode("utf-8", "replace") \
                    != f"{_RUN_ID_PREFIX}{spec['run_id']}":
                raise MapsFileError(f"{beside} is not the {name} of {path}'s run (it comes "
                                    "from another sweep, or was cut short)")
            info = archive.getinfo(f"{name}.npy")
            value = _read_member(archive, info, None, spend)
        if "shape" in spec and tuple(value.shape) != _shape(spec["shape"], name):
            raise MapsFileError(f"{beside}: {name} is {value.shape}, not the "
                                f"{tuple(spec['shape'])} its layout names")
        arrays[name] = value.astype(_map_dtype(spec["dtype"], name))
    return arrays


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, spec: dict | None,
                 spend) -> np.ndarray:
    """One ``.npy`` member, its header checked before its data is read."""
    with archive.open(info) as member:
        version = npy_format.read_magic(member)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise MapsFileError(f"{info.filename}: unknown .npy version {version}")
        reader = npy_format.read_array_header_1_0 if version == (1, 0) \
            else npy_format.read_array_header_2_0
        shape, fortran, dtype = reader(member, max_header_size=10_000)
        if dtype.kind not in _MAP_KINDS or dtype.hasobject or dtype.fields:
            raise MapsFileError(f"{info.filename}: holds {dtype}, not numbers")
        elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = elements * dtype.itemsize
        header = member.tell()
        if nbytes != info.file_size - header:
            raise MapsFileError(f"{info.filename}: its header asks for {nbytes:,} bytes, the "
                                f"member holds {info.file_size - header:,}")
        if spec is not None and spec.get("stored") not in (None, dtype.str):
            raise MapsFileError(f"{info.filename}: stored as {dtype.str}, result.json says "
                                f"{spec.get('stored')}")
        spend(nbytes, f"the member {info.filename}")
        array = np.empty(elements, dtype)
        view = memoryview(array).cast("B")
        done = 0
        while done < nbytes:
            chunk = member.read(min(_CHUNK, nbytes - done))
            if not chunk:
                raise MapsFileError(f"{info.filename}: cut short")
            view[done:done + len(chunk)] = chunk
            done += len(chunk)
        return array.reshape(shape, order="F" if fortran else "C")


#: Bytes read at a time from a member (no copy of the whole member in memory).
_CHUNK = 1 << 22


def _map_dtype(text, name: str) -> np.dtype:
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise MapsFileError(f"the map {name!r} has no valid type ({text!r})") from None
    if dtype.kind not in _MAP_KINDS or dtype.hasobject or dtype.fields:
        raise MapsFileError(f"the map {name!r} is said to hold {dtype}, not numbers")
    return dtype


def _shape(shape, name: str) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or len(shape) > 4 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40 for d in shape):
        raise MapsFileError(f"the map {name!r} has no valid shape ({shape!r})")
    return tuple(shape)


def _file_beside(path: Path, name) -> Path:
    """A file named in a layout: a plain name in the same folder, nothing else."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name \
            or "\\" in name or "\0" in name or Path(name).name != name:
        raise MapsFileError(f"{path}: names the file {name!r}, which is not a file beside it")
    return path.parent / name
