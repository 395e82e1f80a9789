"""``maps.npz``: a result's maps, every one whole, read back exactly.

``np.load("maps.npz")[name]`` gives each map the README lists, with numpy
alone: no map is left out, encoded or shared with another.  Each map has one
type, whatever the run (:data:`MAP_TYPES`): the same in
``RunResult.maps_arrays``, in the file and from :func:`load_maps`.  On disk:

* integer maps are in that type (int32: counts, thread ids, iterations; a
  writer map int64 only for a launch past 2**31 - 1 threads) and deflated
  (npz_writer.py: level 1, on every core; numpy's own ``savez_compressed``
  took 17.5 s on a 4096 x 4096 run's maps, against a goal of 3 s for the
  whole run).  Earlier versions stored each in the smallest type that held
  its values: a ``min_writer`` of int8 beside a ``max_writer`` of int16 in
  one run, uint8 and uint16 in another, where ``max_writer - min_writer``
  wrapped.  Deflate takes back most of what narrowing saved: on 4096 x 4096
  runs (grid-stride, tiled) the file grew by 0.1% and was written as fast,
  the narrowing pass (0.1-0.3 s of a core) gone; on maps of random small
  values, the worst case, 14% larger and written in 0.7 s instead of 0.4 s;
* floating-point maps are stored, as random mantissas do not compress;
* ``C`` is stored as the kernel wrote it, in its own type (a histogram's
  int32 bins stay int32);
* ``reference`` is the float64 reference rounded to the run's dtype: for
  float32 within half an ulp (6e-8 relative), 20x under the float32
  tolerance; the error figures in ``result.json`` come from the float64 one.

``result.json``'s ``maps`` names each map's dtype in memory; :func:`load_maps`
gives every map back in it, checking an untrusted file as it reads.  It also
reads the files of earlier versions, which stored some maps as runs or
differences, or left them out, or narrowed them (given back in int32, with
or without ``result.json``).
"""
from __future__ import annotations

import errno
import os
import stat
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from .errors import ThreadMapError
from .machine import usable_cores
from .npz_writer import write_npz
from .sources.limits import file_kind

#: The type of each map (by its name; ``<map>_<array>`` as ``<map>``), the
#: same in every run.  Integer maps are counts or thread ids, never
#: narrowed, so that arithmetic on them does not wrap: the difference of two
#: writer maps fits their int32 (thread ids below 2**31 - 1, -1 for none).
MAP_TYPES = {
    "count, atomics, iteration, stores_per_thread, oob_per_thread, reads_<input>, "
    "oob_margin_<side>": "int32",
    "min_writer, max_writer": "int32 (int64 for a launch of 2**31 - 1 threads or more: "
                              "records.writer_dtype)",
    "sectors_site<n>, ways_site<n>, active_lanes_branch<n>": "float64 (NaN: no request)",
    "C": "the output's own type, as the kernel wrote it",
    "reference": "in the file, the run's dtype (float32 or float64; an integer output's "
                 "own type); in memory, and from load_maps with result.json's layout, "
                 "float64 (its values as stored)",
}

#: The output and its reference: values, not counts or thread ids.
_VALUES = ("C", "reference")

#: The narrowest integer map :func:`load_maps` gives back: an earlier
#: version's narrowed map is widened to it.
_MAP_INTEGER = np.dtype(np.int32)


def compact_maps(arrays: dict[str, np.ndarray], dtype: str) -> tuple[dict, dict]:
    """What to store (every map whole: ``np.load`` alone reads each one), and
    the layout for ``result.json``: ``{"stored": {name: {stored, dtype,
    shape, encoding}}}``, ``stored`` the dtype on disk and ``dtype`` the one
    :func:`load_maps` gives back."""
    stored = {name: stored_form(name, np.asarray(array), dtype)
              for name, array in arrays.items()}
    return stored, _layout(arrays, stored)


def stored_form(name: str, array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` as maps.npz stores it (see the module's docstring): the
    reference rounded to the run's dtype, every other map as it is, in its
    one type (:data:`MAP_TYPES`)."""
    if name in _VALUES:  # (the kernel's own numbers, in its own type: int32 bins stay so)
        return array if name == "C" or array.dtype == np.dtype(dtype) else \
            array.astype(np.dtype(dtype))
    return array


def _layout(arrays: dict[str, np.ndarray], stored: dict[str, np.ndarray]) -> dict:
    return {"stored": {name: {"stored": stored[name].dtype.str,
                              "dtype": np.asarray(array).dtype.str,
                              "shape": list(np.shape(array)), "encoding": "raw"}
                       for name, array in arrays.items()}}


def _unrun(runs: np.ndarray, size: int) -> np.ndarray:
    """The flat array whose runs ``runs`` holds (files of ThreadMap before
    maps were stored whole)."""
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
    """Write ``arrays`` to ``path``, an .npz that ``np.load`` reads, and
    return the layout.  ``run_id`` goes into the archive's comment and the
    layout, so that :func:`load_maps` can tell that a ``result.json`` and a
    ``maps.npz`` come from one run.

    The reference is rounded to the run's dtype (:func:`stored_form`) on a
    thread of the writer's pool while the maps already made are written;
    every other map is written as it is."""
    arrays = {name: np.asarray(array) for name, array in arrays.items()}
    comment = f"{_RUN_ID_PREFIX}{run_id}".encode() if run_id else b""
    with ThreadPoolExecutor(max_workers=usable_cores()) as pool:
        # the values first (the reference's conversion is the one the writer
        # waits for), then the writer maps compared, then the rest
        stored: dict = {name: arrays[name] if name == "C" else
                        pool.submit(stored_form, name, arrays[name], dtype)
                        for name in _VALUES if name in arrays}
        # equal maps (max_writer where no element was stored twice) share one deflate
        same_as = {"max_writer": "min_writer"} if pool.submit(_equal_writers, arrays).result() \
            else {}
        stored.update({name: stored_form(name, array, dtype)
                       for name, array in arrays.items()
                       if name not in stored and name not in same_as})
        write_npz(path, stored, deflate={name for name, array in arrays.items()
                                         if array.dtype.kind in "iub"},
                  same_as=same_as, comment=comment, pool=pool)
    made = {name: value if isinstance(value, np.ndarray) else value.result()
            for name, value in stored.items()}
    made.update({name: made[other] for name, other in same_as.items()})
    layout = _layout(arrays, made)
    if run_id:
        layout["run_id"] = run_id
    layout["bytes"] = Path(path).stat().st_size
    return layout


def _equal_writers(arrays: dict[str, np.ndarray]) -> bool:
    from .records import same_values

    lowest, highest = arrays.get("min_writer"), arrays.get("max_writer")
    return lowest is not None and highest is not None and same_values(lowest, highest)


_RUN_ID_PREFIX = "threadmap run "


class MapsFileError(ThreadMapError):
    """A maps file that cannot be read back: damaged, from another run, or
    asking for more than its run could hold."""


#: The types a map is stored and restored in (no objects: nothing is unpickled).
_MAP_KINDS = "biuf"
_ENCODINGS = ("raw", "runs", "delta", "delta+runs")


def load_maps(path: Path, layout: dict | None = None) -> dict[str, np.ndarray]:
    """Every map of a ``maps.npz``, in its one type (:data:`MAP_TYPES`, the
    in-memory dtype ``layout``, from ``result.json``'s ``maps``, names;
    without it, as stored, an earlier version's narrowed integer map
    widened to int32).

    The file is untrusted: it and the files it names (which must lie beside
    it) are read only if they are regular files, not links, FIFOs or devices
    (:func:`open_regular`); each member's header is read and checked (a plain
    numeric type, a size that matches the member, the shape ``layout`` gives)
    before its data is read; each member inflates to at most
    :data:`MAX_INFLATION` times its compressed bytes, and the whole to at
    most the memory available; anything wrong is one :class:`MapsFileError`,
    never a traceback, a read without end or a huge allocation."""
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
    with open_regular(path) as handle, zipfile.ZipFile(handle) as archive:
        inflate = _inflation_of(path, archive, os.fstat(handle.fileno()).st_size)
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
            arrays[name] = _read_member(path, archive, info, spec, spend, inflate)
    if not layout:
        return {name: _widened(name, value, spend) for name, value in arrays.items()}
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
        with open_regular(beside) as handle, zipfile.ZipFile(handle) as archive:
            inflate = _inflation_of(beside, archive, os.fstat(handle.fileno()).st_size)
            if spec.get("run_id") and archive.comment.decode("utf-8", "replace") \
                    != f"{_RUN_ID_PREFIX}{spec['run_id']}":
                raise MapsFileError(f"{beside} is not the {name} of {path}'s run (it comes "
                                    "from another sweep, or was cut short)")
            info = archive.getinfo(f"{name}.npy")
            value = _read_member(beside, archive, info, None, spend, inflate)
        if "shape" in spec and tuple(value.shape) != _shape(spec["shape"], name):
            raise MapsFileError(f"{beside}: {name} is {value.shape}, not the "
                                f"{tuple(spec['shape'])} its layout names")
        arrays[name] = value.astype(_map_dtype(spec["dtype"], name))
    return arrays


def _widened(name: str, value: np.ndarray, spend) -> np.ndarray:
    """An integer map narrower than int32 (an earlier version stored each in
    the smallest type that held it) in int32; the output and its reference
    in their own types."""
    if name in _VALUES or value.dtype.kind not in "iu" \
            or value.dtype.itemsize >= _MAP_INTEGER.itemsize:
        return value
    spend(value.size * _MAP_INTEGER.itemsize, f"the map {name!r}")
    return value.astype(_MAP_INTEGER)


def _read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                 spec: dict | None, spend, inflate) -> np.ndarray:
    """One ``.npy`` member, its sizes and header checked before its data is
    read, the bytes it inflates to counted as they come (``inflate``)."""
    _check_inflation(path, info)
    with archive.open(info) as member:
        version = npy_format.read_magic(member)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise MapsFileError(f"{path}: {info.filename}: unknown .npy version {version}")
        reader = npy_format.read_array_header_1_0 if version == (1, 0) \
            else npy_format.read_array_header_2_0
        shape, fortran, dtype = reader(member, max_header_size=10_000)
        if dtype.kind not in _MAP_KINDS or dtype.hasobject or dtype.fields:
            raise MapsFileError(f"{path}: {info.filename}: holds {dtype}, not numbers")
        elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = elements * dtype.itemsize
        header = member.tell()
        inflate(header)
        if nbytes != info.file_size - header:
            raise MapsFileError(f"{path}: {info.filename}: its header asks for {nbytes:,} "
                                f"bytes, the member holds {info.file_size - header:,}")
        if spec is not None and spec.get("stored") not in (None, dtype.str):
            raise MapsFileError(f"{path}: {info.filename}: stored as {dtype.str}, result.json "
                                f"says {spec.get('stored')}")
        spend(nbytes, f"the member {info.filename}")
        array = np.empty(elements, dtype)
        view = memoryview(array).cast("B")
        done = 0
        while done < nbytes:
            chunk = member.read(min(_CHUNK, nbytes - done))
            if not chunk:
                raise MapsFileError(f"{path}: {info.filename}: cut short")
            inflate(len(chunk))
            view[done:done + len(chunk)] = chunk
            done += len(chunk)
        return array.reshape(shape, order="F" if fortran else "C")


#: Bytes read at a time from a member (no copy of the whole member in memory).
_CHUNK = 1 << 22

#: The most a compressed member may inflate to, per byte of it: deflate's
#: own ceiling (a match of 258 bytes in 2 bits: 1,032:1), so that, with the
#: members' bytes counted once (:func:`_inflation_of`), a file inflates to at
#: most 1,032 times its size whatever its headers say.  No lower bound lets
#: ThreadMap's own files load: a map that is one value everywhere (a write
#: count of 1, no atomics, one iteration) deflates to within 1% of the
#: ceiling once past a few MiB (measured on npz_writer's output: 745:1 at
#: 512 x 512, where the 128-byte .npy header weighs; 1,021:1 at 4096 x 4096;
#: 1,026:1 at 16384 x 16384).  What it refuses, before anything is
#: allocated: a directory that claims more than its bytes can give, and
#: members compressed otherwise (bzip2 and LZMA, which ThreadMap never
#: writes, turn 181 bytes and 9 KB into 64 MiB).  The memory budget of
#: :func:`load_maps` bounds the rest.
MAX_INFLATION = 1_032


def _check_inflation(path: Path, info: zipfile.ZipInfo) -> None:
    """Refuse a member whose directory entry says it inflates to more than
    its compressed bytes can: past :data:`MAX_INFLATION` to 1, or, stored,
    to more than it holds."""
    stored = info.compress_type == zipfile.ZIP_STORED
    if info.file_size <= (1 if stored else MAX_INFLATION) * info.compress_size:
        return
    ratio = info.file_size / max(info.compress_size, 1)
    why = ("a stored member gives the bytes it holds" if stored else
           f"ThreadMap's maps are deflated, which gives at most {MAX_INFLATION:,}:1")
    raise MapsFileError(f"{path}: {info.filename} inflates to {info.file_size:,} bytes from "
                        f"{info.compress_size:,} ({ratio:,.0f}:1); {why}: a zip bomb, or a "
                        "damaged file")


def _inflation_of(path: Path, archive: zipfile.ZipFile, size: int):
    """A counter of the bytes ``archive`` (``size`` bytes on disk) inflates
    to, refusing past :data:`MAX_INFLATION` times ``size``; the members are
    first checked not to share their compressed bytes (64 names for one
    deflated stream are a zip bomb each entry of which looks honest)."""
    compressed = sum(info.compress_size for info in archive.infolist())
    if compressed > size:
        raise MapsFileError(f"{path}: its members' compressed sizes add up to {compressed:,} "
                            f"bytes, more than the file's {size:,}: members that share their "
                            "bytes are a zip bomb, or the file is damaged")
    allowed, inflated = MAX_INFLATION * size, [0]

    def inflate(nbytes: int) -> None:
        # (zipfile stops each member at its directory's size; counted here
        # all the same, where the bytes arrive, so no header is trusted)
        inflated[0] += nbytes
        if inflated[0] > allowed:
            raise MapsFileError(f"{path}: inflates to {inflated[0]:,} bytes and more from "
                                f"{size:,} (past {MAX_INFLATION:,}:1): a zip bomb, or a "
                                "damaged file")
    return inflate


def open_regular(path: Path):
    """``path`` opened for reading in binary, if it is a regular file: a
    link (even to a file beside it), a FIFO (whose open or read blocks), a
    device (``/dev/zero`` never ends), a socket or a folder is refused with
    a :class:`MapsFileError`.  Opened without following a link (as its last
    name: ``O_NOFOLLOW``) and without blocking, then checked on what was
    opened (``fstat``), not on the name again."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        # (O_NOFOLLOW answers ELOOP for a link: FreeBSD EMLINK)
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise MapsFileError(f"{path}: not a regular file (a symbolic link): {_ONLY_REGULAR}"
                                ) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise MapsFileError(f"{path}: not a regular file ({file_kind(mode)}): "
                                f"{_ONLY_REGULAR}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_ONLY_REGULAR = "ThreadMap reads maps only from the files a run wrote into its folder"


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
