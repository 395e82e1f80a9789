"""Write the derived kernels as a module, import it, and map errors back.

Each derived module is a plain ``.py`` file named by the hash of its text, in a
cache directory on ``sys.path``, imported by module name: numba's on-disk
cache works for such modules (not for ``exec``'d code), so a second process
pays no emulation compile.  One module per (kernel source, target, dtype, and
for the CPU the types of the kernel's locals).

* CUDA: the kernel as written, and its recording form (``transform.py``).
* CPU: the lockstep emulation (``lockstep.py``), recording and plain.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from ..sources.plan import KernelPlan
from .helper_library import helper_library
from .local_types import KernelTypes
from .lockstep import LockstepLayout, lockstep_code
from .transform import access_sites, derive_cuda_record

GENERATED_PREFIX = "tm_gen_"
# Compiled CPU emulation: numpy's error model matches CUDA (a division by zero
# gives inf, not an exception); no bounds checks (the helpers do them); no NRT,
# because the emulation never allocates and NRT's reference counting of the
# arrays passed to every helper made the inner loop ~20x slower (measured in
# benchmarks/bench_engine.py, section 4).
# nogil lets several workers run blocks at once, on several cores.
_CPU_OPTIONS = "dict(cache=True, nogil=True, error_model='numpy', boundscheck=False, _nrt=False)"


def cache_dir() -> Path:
    """Where generated modules live: ``$THREADMAP_CACHE_DIR`` or ~/.cache/threadmap."""
    env = os.environ.get("THREADMAP_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "threadmap"
    path = base / "generated"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError:
        path = Path(tempfile.gettempdir()) / f"threadmap-{os.getuid()}" / "generated"
        path.mkdir(parents=True, exist_ok=True)
    return path


#: The cache keeps the most recently used modules (with numba's compiled code
#: and the register figures) up to this size.
CACHE_LIMIT_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class CacheEntry:
    """A generated module and the files that go with it."""

    name: str
    files: tuple[Path, ...]
    last_used: float

    @property
    def nbytes(self) -> int:
        return sum(f.stat().st_size for f in self.files if f.exists())


def cache_entries(directory: Path | None = None) -> list[CacheEntry]:
    """The cache's modules, least recently used first: each module's .py, and
    numba's compiled code for it in __pycache__."""
    directory = directory or cache_dir()
    compiled: dict[str, list[Path]] = {}
    pycache = directory / "__pycache__"
    if pycache.is_dir():
        with os.scandir(pycache) as found:
            for file in found:
                compiled.setdefault(file.name.split(".", 1)[0], []).append(Path(file.path))
    entries = []
    with os.scandir(directory) as found:
        for file in found:
            if not (file.name.startswith(GENERATED_PREFIX) and file.name.endswith(".py")):
                continue
            name = file.name[:-3]
            try:
                used = file.stat().st_mtime
            except FileNotFoundError:  # pruned meanwhile by another process
                continue
            entries.append(CacheEntry(name, (Path(file.path), *compiled.get(name, ())), used))
    return sorted(entries, key=lambda e: e.last_used)


def prune_cache(directory: Path | None = None, limit: int = CACHE_LIMIT_BYTES,
                keep: str | None = None) -> int:
    """Remove least recently used modules until the cache holds at most
    ``limit`` bytes (never ``keep``, the module in use); returns how many."""
    entries = cache_entries(directory)
    total = sum(e.nbytes for e in entries)
    removed = 0
    for entry in entries:
        if total <= limit:
            break
        if entry.name == keep:
            continue
        total -= entry.nbytes
        for file in entry.files:
            try:
                file.unlink()
            except OSError:
                pass
        removed += 1
    return removed


def clear_cache(directory: Path | None = None) -> tuple[int, int]:
    """Remove every generated module, numba's code for them and the stored
    register figures; returns (files, bytes) removed."""
    directory = directory or cache_dir()
    files = [f for f in directory.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    for file in files:
        try:
            file.unlink()
        except OSError:
            pass
    return len(files), size


@dataclass(frozen=True)
class GeneratedModule:
    """An imported derived module, and how to find its lines in the user's file."""

    module: ModuleType = field(repr=False)
    path: Path
    source_path: str
    #: generated line -> line of the kernel's source file
    line_map: dict[int, int] = field(repr=False)
    #: what the CPU emulation's functions take (None for CUDA)
    layout: LockstepLayout | None = None

    def function(self, name: str):
        return getattr(self.module, name)

    def relocate(self, message: str) -> str:
        """Rewrite ``File "<generated>", line N`` in a numba message to the user's file."""
        pattern = re.compile(r'File "([^"]*)", line (\d+)')

        def replace(match: re.Match) -> str:
            if Path(match.group(1)).name != self.path.name:
                return match.group(0)
            line = self.line_map.get(int(match.group(2)))
            if line is None:
                return f'File "{self.source_path}" (generated code)'
            return f'File "{self.source_path}", line {line}'

        return pattern.sub(replace, message)


class _ModuleText:
    """Accumulates generated source and the line map of derived functions."""

    def __init__(self, source_path: str):
        self.lines: list[str] = []
        self.line_map: dict[int, int] = {}
        self.source_path = source_path

    def add(self, text: str) -> None:
        self.lines.extend(text.rstrip("\n").split("\n"))
        self.lines.append("")

    def add_function(self, decorator: str, func: ast.FunctionDef) -> None:
        text = ast.unparse(func)
        reparsed = ast.parse(text).body[0]
        start = len(self.lines) + 2  # 1-based, after the decorator line
        for old, new in zip(ast.walk(func), ast.walk(reparsed)):
            if type(old) is not type(new):
                break
            if isinstance(old, ast.stmt) and hasattr(old, "lineno"):
                self.line_map.setdefault(start + new.lineno - 1, old.lineno)
        self.add(decorator + "\n" + text)

    def add_lines(self, lines) -> None:
        """Lines of generated code, each with its kernel source line (or None)."""
        for text, source_line in lines:
            self.lines.append(text)
            if source_line is not None:
                self.line_map[len(self.lines)] = source_line
        self.lines.append("")

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def module_text(plan: KernelPlan, target: str, dtype: str, types: KernelTypes | None = None,
                cpu_options: str = _CPU_OPTIONS) -> tuple[_ModuleText, LockstepLayout | None]:
    """The full text of the derived module for ``target`` ("cuda" or "cpu";
    the CPU needs the types of the kernel's locals), and for the CPU the
    layout of its functions' arguments."""
    module = plan.module
    text = _ModuleText(module.path)
    text.add(f"# Generated by ThreadMap from {module.path}, kernel {plan.name!r}, for the "
             f"{'CUDA' if target == 'cuda' else 'CPU emulation'} target ({dtype}). Do not edit.")
    deferred = []
    for line in module.imports:
        if target == "cpu" and _imports_numba_cuda(line):
            deferred.append(line)  # see below
        else:
            text.add(line)
    text.add("import numpy as _tm_np")
    text.add("import numba as _tm_numba")
    text.add("_tm_i64 = _tm_numba.int64")
    if target == "cuda":
        text.add("from numba import cuda as _tm_cuda")
    else:
        text.add("from numba import njit as _tm_njit")
        text.add(f"_TM_OPTS = {cpu_options}")
    for name in plan.constants:
        value, _ = module.constants[name]
        text.add(f"{name} = {ast.unparse(value)}")
    text.add(f"_TM_ZERO = _tm_numba.{dtype}(0)")
    if target == "cuda":
        text.add(helper_library("cuda", "record"))
        original = copy.deepcopy(plan.kernel.node)
        original.decorator_list = []
        text.add_function("@_tm_cuda.jit", original)
        text.add_function("@_tm_cuda.jit", derive_cuda_record(plan))
        return text, None
    if types is None:
        raise ValueError("the CPU emulation needs the types of the kernel's locals")
    text.add(f"_TM_ITEM = _tm_i64({np.dtype(dtype).itemsize})")
    text.add(f"_TM_I32MAX = _tm_i64({np.iinfo(np.int32).max})")  # encoded store numbers
    text.add("_TM_NO_WORD = _tm_i64(1 << 62)")
    # The rows of room below the sites' rows in _tm_req (records.py).
    text.add(f"_TM_SCRATCH = _tm_i64({max(len(access_sites(plan)), 1)})")
    layout = None
    for mode in ("record", "plain"):
        text.add(helper_library("cpu", mode))
        code = lockstep_code(plan, types, mode)
        layout = layout or code.layout
        text.add_lines(code.lines)
    # numba.cuda takes ~0.2 s to import and the emulation rarely names it (its
    # coordinates, barriers and arrays are rewritten): imported only when the
    # code still does, at the end (numba reads globals at the first call).
    body = text.text
    for line in deferred:
        names = [a.asname or a.name.split(".")[0] for a in ast.parse(line).body[0].names]
        if any(re.search(rf"\b{re.escape(n)}\b", body) for n in names):
            text.add(line)
    return text, layout


def _imports_numba_cuda(line: str) -> bool:
    """``from numba import cuda``, ``import numba.cuda as cuda`` and the like."""
    node = ast.parse(line).body[0]
    if isinstance(node, ast.ImportFrom):
        return node.module == "numba.cuda" or (
            node.module == "numba" and any(a.name == "cuda" for a in node.names))
    return isinstance(node, ast.Import) and any(
        a.name.startswith("numba.cuda") for a in node.names)


def load_module(plan: KernelPlan, target: str, dtype: str, types: KernelTypes | None = None,
                cpu_options: str = _CPU_OPTIONS) -> GeneratedModule:
    """Generate (or reuse) and import the derived module.  ``cpu_options`` (the
    numba options of the emulation, as source text) is for benchmarks."""
    # Writing the text takes ~12 ms; a sweep asks for the same module 64 times.
    # (The cache folder is part of the key: a module is written where it is asked for.)
    key = (plan.module.path, plan.module.text, plan.name, plan.inputs, plan.output, target,
           dtype, repr(types), cpu_options, cache_dir())
    loaded = _LOADED.get(key)
    if loaded is not None:
        try:
            os.utime(loaded.path)  # last used now, as below
        except FileNotFoundError:  # pruned by another process: write it again
            loaded = None
    if loaded is None:
        loaded = _LOADED[key] = _load_module(plan, target, dtype, types, cpu_options)
        while len(_LOADED) > 32:
            _LOADED.pop(next(iter(_LOADED)))
    return loaded


#: Modules loaded by this process, by what their text is made from.
_LOADED: dict[tuple, GeneratedModule] = {}


def _load_module(plan: KernelPlan, target: str, dtype: str, types: KernelTypes | None,
                 cpu_options: str) -> GeneratedModule:
    text, layout = module_text(plan, target, dtype, types, cpu_options)
    digest = hashlib.sha256(text.text.encode()).hexdigest()[:20]
    name = f"{GENERATED_PREFIX}{target}_{digest}"
    directory = cache_dir()
    path = directory / f"{name}.py"
    written = not path.exists() or path.read_text() != text.text
    if written:
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(text.text)
        os.replace(tmp, path)
    else:
        os.utime(path)  # last used now: the cache keeps the most recently used
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    module = sys.modules.get(name) or importlib.import_module(name)
    if written:  # the cache only grows here
        prune_cache(directory, keep=name)
    return GeneratedModule(module=module, path=path, source_path=plan.module.path,
                           line_map=text.line_map, layout=layout)
