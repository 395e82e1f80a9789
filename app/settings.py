"""What the app remembers between sessions (QSettings)."""
from __future__ import annotations

from pathlib import Path

from kernels import BACKENDS, DTYPES, PATTERNS, RunRequest

from .qt import QtCore

_REQUEST_INTS = ("m", "k", "n", "seed")


class Settings(QtCore.QSettings):
    """QSettings with typed accessors; ``Settings(path)`` uses an ini file (tests)."""

    def __init__(self, path: str | None = None):
        if path is None:
            super().__init__("ThreadMap", "ThreadMap")
        else:
            super().__init__(path, QtCore.QSettings.Format.IniFormat)

    def request(self) -> RunRequest | None:
        if not self.contains("request/m"):
            return None
        try:
            values = {name: int(self.value(f"request/{name}")) for name in _REQUEST_INTS}
            grid = tuple(int(x) for x in str(self.value("request/grid")).split("x"))
            block = tuple(int(x) for x in str(self.value("request/block")).split("x"))
        except (TypeError, ValueError):
            return None
        dtype = str(self.value("request/dtype", "float32"))
        pattern = str(self.value("request/pattern", "random"))
        backend = str(self.value("request/backend", "auto"))
        # (where the launch came from: a kernel file's, a preset's; "given"
        # when typed, or saved before this was kept)
        launch_source = self._text("request/launch_source") or "given"
        kernel_file = self.value("request/kernel_file") or None
        scalars = []
        for item in str(self.value("request/scalars", "") or "").split(","):
            name, _, value = item.partition("=")
            try:
                scalars.append((name.strip(), float(value) if "." in value else int(value)))
            except ValueError:
                continue
        return RunRequest(
            scalars=tuple(scalars),
            kernel=str(self.value("request/kernel", "grid-stride")) or None,
            kernel_file=str(kernel_file) if kernel_file else None,
            dtype=dtype if dtype in DTYPES else "float32",
            pattern=pattern if pattern in PATTERNS else "random",
            backend=backend if backend in BACKENDS else "auto",
            grid=grid, block=block, launch_source=str(launch_source), **values)

    def set_request(self, request: RunRequest,
                    described: tuple[str, str] | None = None) -> None:
        """Save ``request``: the Run panel's C = A @ B fields, the kernel and
        the launch.  ``described``: the kernel runs as it is, on (the
        Arguments typed in the app, "" where they are the file's own
        THREADMAP_ARGS, which a restart reads again; the Reference)."""
        for name in _REQUEST_INTS:
            self.setValue(f"request/{name}", getattr(request, name))
        self.setValue("request/kernel", request.kernel or "")
        self.setValue("request/kernel_file", request.kernel_file or "")
        self.setValue("request/dtype", request.dtype)
        self.setValue("request/pattern", request.pattern)
        self.setValue("request/backend", request.backend)
        self.setValue("request/launch_source", request.launch_source)
        self.setValue("request/grid", "x".join(map(str, request.grid)))
        self.setValue("request/block", "x".join(map(str, request.block)))
        self.setValue("request/scalars", ",".join(f"{n}={v}" for n, v in request.scalars))
        typed, reference = described or ("", "")
        self.setValue("request/described", described is not None)
        self.setValue("request/arguments", typed)
        self.setValue("request/reference", reference)

    def described(self) -> tuple[str, str] | None:
        """How the saved request's kernel ran as it is: (the Arguments typed,
        "" for the file's own; the Reference); None: it ran as C = A @ B."""
        if str(self.value("request/described", "false")).lower() != "true":
            return None
        return self._text("request/arguments"), self._text("request/reference")

    def _text(self, key: str) -> str:
        value = self.value(key, "") or ""
        if isinstance(value, list):  # (an unquoted "a, b" read as a list)
            value = ", ".join(map(str, value))
        return str(value)

    def sweep_lists(self) -> tuple[str | None, str | None]:
        return self.value("sweep/blocks"), self.value("sweep/threads")

    def set_sweep_lists(self, blocks: str, threads: str) -> None:
        self.setValue("sweep/blocks", blocks)
        self.setValue("sweep/threads", threads)

    def export_size(self) -> tuple[int, int]:
        try:
            return int(self.value("export/width", 1200)), int(self.value("export/height", 900))
        except (TypeError, ValueError):
            return 1200, 900

    def set_export_size(self, width: int, height: int) -> None:
        self.setValue("export/width", width)
        self.setValue("export/height", height)

    def memory_budget_mb(self) -> int | None:
        """Megabytes of maps the session keeps in memory (None: a quarter of RAM)."""
        try:
            value = int(self.value("memory/budget_mb", 0))
        except (TypeError, ValueError):
            return None
        return value if value > 0 else None

    def set_memory_budget_mb(self, megabytes: int) -> None:
        self.setValue("memory/budget_mb", int(megabytes))

    def dialog_folder(self, purpose: str) -> str:
        """The folder the last dialog for ``purpose`` ("kernel", "export")
        ended in (the home folder the first time, or if it went away)."""
        folder = self.value(f"dialog/{purpose}")
        return str(folder) if folder and Path(str(folder)).is_dir() else str(Path.home())

    def remember_dialog_folder(self, purpose: str, chosen: str) -> None:
        """Remember where a dialog for ``purpose`` ended (a file or a folder)."""
        path = Path(chosen)
        self.setValue(f"dialog/{purpose}", str(path if path.is_dir() else path.parent))

    def kernel_files(self) -> list[str]:
        value = self.value("kernel_files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value or []]

    def set_kernel_files(self, paths: list[str]) -> None:
        self.setValue("kernel_files", paths)
