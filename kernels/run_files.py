"""What one run writes: ``result.json`` and its ``maps.npz``, together or not
at all (``outputs.py``), named by one run id.  Used by ``threadmap run``,
``hunt``, ``check`` and the Python API's ``save``."""
from __future__ import annotations

import json
from pathlib import Path

from .outputs import OnThread, OutputFolder

RUN_FILES = ("maps.npz", "result.json")


def write_outputs(result, out: Path, occupancy: dict | None = None,
                  folder: OutputFolder | None = None,
                  maps: "MapsWrittenAhead | None" = None) -> None:
    """``result.json`` and ``maps.npz`` into ``out``, together or not at all
    (outputs.py): a full disk or a Ctrl-C leaves the previous pair.  Given the
    ``folder`` a command holds, its files join that folder's; given ``maps``,
    its maps.npz, staged there while the run ended, is the one kept."""
    if folder is None:
        with OutputFolder(out, files=RUN_FILES) as own:
            stage_outputs(own, result, occupancy)
            own.publish()
    else:
        stage_outputs(folder, result, occupancy, maps=maps)


def stage_outputs(folder: OutputFolder, result, occupancy: dict | None = None,
                  prefix: str = "", maps: "MapsWrittenAhead | None" = None) -> None:
    """Stage ``result.json`` and its ``maps.npz`` (named by one run id) in
    ``folder``; ``maps``: a maps.npz already staged (or under way) for
    ``result``'s maps."""
    summary = result.summary()
    if occupancy is not None:
        summary["occupancy"] = occupancy
    if maps is None or not maps.started:
        maps = MapsWrittenAhead(folder, prefix)
        maps.write(result)
    # how maps.npz restores each map (maps_file.load_maps), and the run id it carries
    summary["maps"] = maps.layout()
    folder.write_text(f"{prefix}result.json", json.dumps(summary, indent=2))


def update_result_json(result, folder: OutputFolder, occupancy: dict | None,
                       maps: "MapsWrittenAhead") -> None:
    """Stage ``result.json`` again for the same run (its maps.npz, written
    by ``maps``, unchanged): a result that a second backend's run confirmed."""
    summary = result.summary()
    if occupancy is not None:
        summary["occupancy"] = occupancy
    summary["maps"] = maps.layout()
    folder.write_text("result.json", json.dumps(summary, indent=2))


class MapsWrittenAhead:
    """A run's ``maps.npz``, staged in ``folder`` on a thread of its own as
    soon as its maps are final (``engine.run``'s ``maps_final``): a 4096 x
    4096 run's maps take 0.3 s to write and 0.2 s to flush to disk, which
    then overlap its reference check and its ``result.json``.  The verdict
    is not in maps.npz, so nothing written there waits for it."""

    def __init__(self, folder: OutputFolder, prefix: str = ""):
        import uuid

        self.folder, self.prefix = folder, prefix
        #: the id that maps.npz and its result.json share
        self.run_id = uuid.uuid4().hex
        self._written: OnThread | None = None
        self._layout: dict | None = None

    @property
    def started(self) -> bool:
        return self._written is not None

    def start(self, result) -> None:
        """Write ``result``'s maps.npz on a thread (once: a later call does nothing)."""
        if self._written is None:
            self._written = self.folder.write_later(f"{self.prefix}maps.npz",
                                                    self._saving(result))

    def write(self, result) -> None:
        """Write ``result``'s maps.npz on this thread."""
        self._layout = self.folder.write(f"{self.prefix}maps.npz", self._saving(result))

    def layout(self) -> dict:
        """How maps.npz restores each map (``maps_file.load_maps``), once it
        is written; raises what its writing raised (an ``OutputError``)."""
        if self._written is not None:
            return self._written.result()
        assert self._layout is not None, "MapsWrittenAhead.layout before its maps were written"
        return self._layout

    def _saving(self, result):
        from .maps_file import save_maps

        return lambda path: save_maps(path, result.maps_arrays(), result.request.dtype,
                                      run_id=self.run_id)

