"""Resource files of the app, all looked up here through importlib.resources."""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """Path of resource ``name`` (files are installed with the package)."""
    return Path(str(resources.files(__name__).joinpath(name)))


def read_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


ICON = "threadmap.svg"
