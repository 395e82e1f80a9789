"""``threadmap kernels`` and ``threadmap cache``: what there is."""
from __future__ import annotations

import argparse

from ..cache import CACHE_LIMIT_BYTES, cache_dir, cache_entries, clear_cache
from ..request import format_bytes
from ..sources.catalogue import CATALOGUE


def kernels_command() -> int:
    for name, spec in CATALOGUE.items():
        launch = spec.default_launch(128, 256, 128)
        print(f"{name:22s} {spec.title}\n{'':22s} {spec.summary} Preset launch on "
              f"128x256x128: {launch}")
    return 0


def cache_command(args: argparse.Namespace) -> int:

    directory = cache_dir()
    if args.clear:
        files, size = clear_cache(directory)
        print(f"removed {files:,} files ({format_bytes(size)}) from {directory}")
        return 0
    entries = cache_entries(directory)
    size = sum(e.nbytes for e in entries)
    print(f"{directory}: {len(entries):,} generated module{'s' if len(entries) != 1 else ''}, "
          f"{format_bytes(size)} "
          f"(kept to {format_bytes(CACHE_LIMIT_BYTES)}, least recently used removed first)")
    sandboxes = directory.parent / "sandboxed"
    if sandboxes.is_dir():
        folders = [f for f in sandboxes.iterdir() if f.is_dir()]
        used = sum(f.stat().st_size for folder in folders for f in folder.rglob("*")
                   if f.is_file() and not f.is_symlink())
        print(f"{sandboxes}: {len(folders):,} sandboxed kernel{'s' if len(folders) != 1 else ''}"
              f" (each its own folder), {format_bytes(used)}")
    return 0
