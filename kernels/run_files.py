"""What one run writes: ``result.json`` and its ``maps.npz``, together or not
at all (``outputs.py``), named by one run id.  Used by ``threadmap run``,
``hunt``, ``check`` and the Python API's ``save``."""
from __future__ import annotations

import json
from pathlib import Path

from .outputs import OutputFolder

RUN_FILES = ("maps.npz", "result.json")


def write_outputs(result, out: Path, occupancy: dict | None = None,
                  folder: OutputFolder | None = None) -> None:
    """``result.json`` and ``maps.npz`` into ``out``, together or not at all
    (outputs.py): a full disk or a Ctrl-C leaves the previous pair.  Given the
    ``folder`` a command holds, its files join that folder's."""
    if folder is None:
        with OutputFolder(out, files=RUN_FILES) as own:
            stage_outputs(own, result, occupancy)
            own.publish()
    else:
        stage_outputs(folder, result, occupancy)


def stage_outputs(folder: OutputFolder, result, occupancy: dict | None = None,
                  prefix: str = "") -> None:
    """Stage ``result.json`` and its ``maps.npz`` (named by one run id) in ``folder``."""
    import uuid

    from .maps_file import save_maps

    summary = result.summary()
    if occupancy is not None:
        summary["occupancy"] = occupancy
    run_id = uuid.uuid4().hex
    # how maps.npz restores each map (maps_file.load_maps), and the run id it carries
    summary["maps"] = folder.write(f"{prefix}maps.npz", lambda path: save_maps(
        path, result.maps_arrays(), result.request.dtype, run_id=run_id))
    folder.write_text(f"{prefix}result.json", json.dumps(summary, indent=2))
