"""Results kept on disk instead of in memory, and brought back unchanged.

A 4096 x 4096 result holds ~0.5 GB of maps; a session that keeps every run
in memory fills a 24 GiB machine in some 40 runs.  :class:`Stowage` writes
a result's maps to a private folder (``maps_file``: lossless for every map
but the reference, which is kept apart and whole) and gives back a light
copy whose arrays take no memory: each is a read-only broadcast of one zero
with the map's shape and dtype, so shapes and sizes stay true, and
``stowed`` says where the values are.  :meth:`Stowage.unstow` reads them
back, equal element for element.

Runs of the same inputs share one reference array (engine's memo): it is
written once and, read back, shared again.
"""
from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .maps_file import load_maps, save_maps
from .result import WRITTEN_MAP_FIELDS, RunResult, written_maps

#: maps of ``AccessMaps``, by their name in ``RunResult.maps_arrays``
_MAP_FIELDS = ("count", "atomics", "min_writer", "max_writer", "iteration",
               "stores_per_thread", "oob_per_thread")


@dataclass(frozen=True)
class Stowed:
    """Where a stowed result's maps are."""

    maps: Path
    layout: dict
    reference: Path
    #: bytes its arrays held in memory
    nbytes: int


def _placeholder(array: np.ndarray) -> np.ndarray:
    """An array of ``array``'s shape and dtype that takes no memory."""
    return np.broadcast_to(np.zeros((), array.dtype), array.shape)


def held_arrays(result: RunResult) -> dict[int, np.ndarray]:
    """The large arrays ``result`` holds in memory, by identity (the per-warp
    figures, a few KB, are not counted and never stowed)."""
    if result.stowed is not None:
        return {}
    m = result.maps
    arrays = [getattr(m, name) for name in _MAP_FIELDS] + list(m.reads) + [result.c,
                                                                         result.reference]
    arrays += [array for written in m.written for array in written_maps(written).values()]
    return {id(a): a for a in arrays if a.size}


def bytes_in_memory(results) -> int:
    """Bytes of the arrays ``results`` hold, each array counted once."""
    unique: dict[int, np.ndarray] = {}
    for result in results:
        unique.update(held_arrays(result))
    return sum(a.nbytes for a in unique.values())


class Stowage:
    """A private folder of stowed results (removed by :meth:`close`)."""

    def __init__(self, parent: str | Path | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="threadmap-results-", dir=parent))
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        #: reference arrays written, by identity: (the array, alive or not; its file)
        self._written: dict[int, tuple[weakref.ref, Path]] = {}
        #: references read back, by file: shared by the results that share the file
        self._read: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def stow(self, result: RunResult) -> RunResult:
        """Write ``result``'s maps here; its light copy (``stowed`` set)."""
        if result.stowed is not None:
            return result
        nbytes = bytes_in_memory([result])
        with self._lock:
            number = next(self._numbers)
        arrays = {name: getattr(result.maps, name) for name in _MAP_FIELDS}
        arrays.update({f"reads_{i}": reads for i, reads in enumerate(result.maps.reads)})
        arrays["C"] = result.c
        for index, written in enumerate(result.maps.written):
            arrays.update({f"written{index}_{field}": getattr(written, field)
                           for field in WRITTEN_MAP_FIELDS})
        path = self.folder / f"result{number}.npz"
        layout = save_maps(path, arrays, result.request.dtype)
        stowed = Stowed(path, layout, self._reference_file(result.reference, number), nbytes)
        maps = dataclasses.replace(result.maps, reads=tuple(
            _placeholder(reads) for reads in result.maps.reads), written=tuple(
            dataclasses.replace(written, **{field: _placeholder(getattr(written, field))
                                            for field in WRITTEN_MAP_FIELDS})
            for written in result.maps.written), **{
            name: _placeholder(getattr(result.maps, name)) for name in _MAP_FIELDS})
        return dataclasses.replace(result, maps=maps, c=_placeholder(result.c),
                                   reference=_placeholder(result.reference), stowed=stowed)

    def unstow(self, result: RunResult) -> RunResult:
        """``result`` with its maps read back (unchanged); as it is when not stowed."""
        stowed = result.stowed
        if stowed is None:
            return result
        arrays = load_maps(stowed.maps, stowed.layout)
        reads = tuple(arrays[f"reads_{i}"] for i in range(len(result.maps.reads)))
        written = tuple(dataclasses.replace(w, **{field: arrays[f"written{index}_{field}"]
                                                  for field in WRITTEN_MAP_FIELDS})
                        for index, w in enumerate(result.maps.written))
        maps = dataclasses.replace(result.maps, reads=reads, written=written,
                                   **{name: arrays[name] for name in _MAP_FIELDS})
        return dataclasses.replace(result, maps=maps, c=arrays["C"],
                                   reference=self._read_reference(stowed.reference),
                                   stowed=None)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _reference_file(self, reference: np.ndarray, number: int) -> Path:
        with self._lock:
            known = self._written.get(id(reference))
            if known is not None and known[0]() is reference:
                return known[1]
            path = self.folder / f"reference{number}.npy"
            self._written[id(reference)] = (weakref.ref(reference), path)
        np.save(path, reference, allow_pickle=False)
        self._read[str(path)] = reference  # (brought back, it is this one while it lives)
        return path

    def _read_reference(self, path: Path) -> np.ndarray:
        with self._lock:
            reference = self._read.get(str(path))
        if reference is None:
            reference = np.load(path, allow_pickle=False)
            with self._lock:
                self._read[str(path)] = reference
        return reference

