"""Notice when a kernel file is saved: ``threadmap run --watch`` and the app's
"follow the file" both run the shown request again then."""
from __future__ import annotations

import hashlib
import os


class FileWatcher:
    """Whether a file changed since it was last looked at.  Cheap to ask often:
    its size and modification time first, its contents' hash only when those
    moved (an editor that saves the same text twice is not a change; one that
    writes a new file and renames it over the old one is seen)."""

    def __init__(self, path: str):
        self.path = path
        self._stamp = self._stat()
        self._digest = self._hash()

    def _stat(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def _hash(self) -> str | None:
        try:
            with open(self.path, "rb") as handle:
                return hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return None

    def changed(self) -> bool:
        stamp = self._stat()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        digest = self._hash()
        if digest is None or digest == self._digest:
            return False  # gone for a moment (mid-save), or saved unchanged
        self._digest = digest
        return True
