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
import contextlib
import copy
import hashlib
import importlib
import os
import re
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from ..cache import (  # noqa: F401  (the cache's functions, as they were found here)
    CACHE_LIMIT_BYTES,
    GENERATED_PREFIX,
    CacheEntry,
    CacheError,
    cache_dir,
    cache_entries,
    clear_cache,
    prune_cache,
)
from ..element_types import dtype_of, is_uniform
from ..sources.allow import constant_source
from ..sources.plan import RECORDED_ATOMICS, KernelPlan, cuda_attribute
from .helper_library import helper_library
from .local_types import KernelTypes
from .lockstep import lockstep_code
from .lowering import LockstepLayout, lower
from .native import load_native, native_path
from .transform import access_sites, derive_cuda_record
from .warp_ops import uses_syncwarp

# Compiled CPU emulation: numpy's error model matches CUDA (a division by zero
# gives inf, not an exception); no bounds checks (the helpers do them); no NRT,
# because the emulation never allocates and NRT's reference counting of the
# arrays passed to every helper made the inner loop ~20x slower (measured in
# benchmarks/bench_engine.py, section 4).
# nogil lets several workers run blocks at once, on several cores.
_CPU_OPTIONS = "dict(cache=True, nogil=True, error_model='numpy', boundscheck=False, _nrt=False)"


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
    # The path is the user's: repr() escapes any newline in it, so it stays a comment.
    text.add(f"# Generated by ThreadMap from {module.path!r}, kernel {plan.name!r}, for the "
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
        # The value allow.evaluate gave, rebuilt: never the file's own text.
        text.add(f"{name} = {constant_source(module.values[name])}")
    if target == "cuda":
        text.add(helper_library("cuda", "record", atomic_updates(plan), ranks=helper_ranks(plan)))
        original = copy.deepcopy(plan.kernel.node)
        original.decorator_list = []
        # Annotations would be evaluated when the module is imported: dropped.
        original.returns = None
        for argument in original.args.args:
            argument.annotation = None
        # cache=True: numba-cuda keeps the compiled kernels on disk beside this module
        # (keyed by the GPU's compute capability), so a second command on a GPU compiles
        # nothing; the JIT of the recording kernel had cost 1.2-1.9 s at every command.
        # (The simulator ignores it.)
        text.add_function("@_tm_cuda.jit(cache=True)", original)
        text.add_function("@_tm_cuda.jit(cache=True)", derive_cuda_record(plan))
        return text, None
    if types is None:
        raise ValueError("the CPU emulation needs the types of the kernel's locals")
    text.add(_item_function(plan, dtype))
    text.add(f"_TM_I32MAX = _tm_i64({np.iinfo(np.int32).max})")  # encoded store numbers
    text.add("_TM_NO_WORD = _tm_i64(1 << 62)")
    text.add(f"_TM_WARP_SYNC = {uses_syncwarp(plan)}")  # (helper_library: _tm_synced)
    # The rows of room below the sites' rows in _tm_req (records.py).
    text.add(f"_TM_SCRATCH = _tm_i64({max(len(access_sites(plan)), 1)})")
    layout = None
    lowered = lower(plan, types)
    for mode in ("record", "plain"):
        text.add(helper_library("cpu", mode, atomic_updates(plan),
                                races=bool(lowered.race_arrays), ranks=helper_ranks(plan)))
        code = lockstep_code(lowered, mode)
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


def _item_function(plan: KernelPlan, element_types: str) -> str:
    """``_tm_item(site)``: the bytes of an element of the global array an
    access site reads or writes, for its 32-byte sectors.  One constant when
    the arrays share a dtype (numba folds it); else a table by site."""
    if is_uniform(element_types):
        return (f"_TM_ITEM = _tm_i64({np.dtype(element_types).itemsize})\n\n\n"
                "@_tm_njit(inline=\"always\", **_TM_OPTS)\ndef _tm_item(site):\n"
                "    return _TM_ITEM\n")
    items = tuple(np.dtype(dtype_of(element_types, site.array)).itemsize
                  if site.space == "global" else 4 for site in access_sites(plan))
    return (f"_TM_SITE_ITEM = _tm_np.array({list(items) or [4]}, _tm_np.int64)\n\n\n"
            "@_tm_njit(inline=\"always\", **_TM_OPTS)\ndef _tm_item(site):\n"
            "    return _TM_SITE_ITEM[site]\n")


def helper_ranks(plan: KernelPlan) -> tuple[int, ...]:
    """The ranks of the access helpers the derived module defines: 1 and 2
    always (shared and local arrays), 3 when a parameter array has 3."""
    return (1, 2, 3) if 3 in plan.ndim.values() else (1, 2)


def atomic_updates(plan: KernelPlan) -> tuple[str, ...]:
    """The atomic updates the kernel makes (``("add",)``), in RECORDED_ATOMICS'
    order: the only ones whose helpers its module needs."""
    used = {what.split(".", 1)[1] for node in ast.walk(plan.kernel.node)
            if isinstance(node, ast.Call)
            and (what := cuda_attribute(node.func, plan.module.aliases) or "")
            .startswith("atomic.")}
    if "compare_and_swap" in used:  # (rewritten as cas: transform.py)
        used.add("cas")
    return tuple(op for op in RECORDED_ATOMICS if op in used)


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
    # One thread at a time: a child compiling ahead in the background and its
    # next run may load the same module, and a module half executed by one
    # thread is already in sys.modules for the other.
    with _LOAD_LOCK:
        return _load_once(key, plan, target, dtype, types, cpu_options)


_LOAD_LOCK = threading.RLock()


def _load_once(key, plan, target, dtype, types, cpu_options) -> GeneratedModule:
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


def damaged_cache(exc: BaseException) -> bool:
    """Whether ``exc`` came from reading numba's cache files (a garbled index
    raises UnpicklingError, EOFError, ... from numba/core/caching.py)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("numba/core/caching.py"):
            return True
        tb = tb.tb_next
    return False


def purge_compiled(gen: GeneratedModule) -> int:
    """Remove numba's cached code for a generated module (beside it, or under
    $NUMBA_CACHE_DIR, as in a sandboxed child); how many files."""
    name = gen.path.stem
    removed = 0
    files = list((gen.path.parent / "__pycache__").glob(f"{name}.*"))
    if os.environ.get("NUMBA_CACHE_DIR"):
        files += Path(os.environ["NUMBA_CACHE_DIR"]).rglob(f"{name}.*")
    for file in files:
        with contextlib.suppress(OSError):
            file.unlink()
            removed += 1
    return removed


#: Modules loaded by this process, by what their text is made from.
_LOADED: dict[tuple, GeneratedModule] = {}


def _load_module(plan: KernelPlan, target: str, dtype: str, types: KernelTypes | None,
                 cpu_options: str) -> GeneratedModule:
    text, layout = module_text(plan, target, dtype, types, cpu_options)
    digest = hashlib.sha256(text.text.encode()).hexdigest()[:20]
    name = f"{GENERATED_PREFIX}{target}_{digest}"
    directory = cache_dir()
    path = directory / f"{name}.py"
    try:
        written = not path.exists() or path.read_text() != text.text
        if written:
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as handle:
                    handle.write(text.text)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        else:
            os.utime(path)  # last used now: the cache keeps the most recently used
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheError(f"cannot write the generated kernel into the cache {directory}: "
                         f"{getattr(exc, 'strerror', None) or exc} (threadmap cache --clear "
                         "empties the cache)") from None
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))

    def imported() -> ModuleType:
        return sys.modules.get(name) or importlib.import_module(name)

    # The CPU emulation's drivers as native code where numba made them
    # before: no numba to import (native.py).
    native = None if target != "cpu" or written else load_native(native_path(path), imported)
    if native is not None:
        return GeneratedModule(module=native, path=path, source_path=plan.module.path,
                               line_map=text.line_map, layout=layout)
    module = imported()
    if written:  # the cache only grows here
        prune_cache(directory, keep=name)
    return GeneratedModule(module=module, path=path, source_path=plan.module.path,
                           line_map=text.line_map, layout=layout)
