"""Write the derived kernels as a module, import it, and map errors back.

Each derived module is a plain ``.py`` file named by the hash of its text, in a
cache directory on ``sys.path``, imported by module name: numba's on-disk
cache works for such modules (not for ``exec``'d code), so a second process
pays no emulation compile.  One module per (kernel source, target, dtype).
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

from .plan import RECORDED_ATOMICS, KernelPlan
from .records import RECORD_PARAMS, reads_param
from .transform import COORDINATE_PARAMS, derive

GENERATED_PREFIX = "tm_gen_"
# Compiled CPU emulation: numpy's error model matches CUDA (a division by zero
# gives inf, not an exception); no bounds checks (the helpers do them); no NRT,
# because the emulation never allocates and NRT's reference counting of the
# arrays passed to every helper made the inner loop ~20x slower (measured in
# benchmarks/bench_engine.py, section 4).
# nogil lets several threads of the grid-range run at once, on several cores.
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


@dataclass(frozen=True)
class GeneratedModule:
    """An imported derived module, and how to find its lines in the user's file."""

    module: ModuleType = field(repr=False)
    path: Path
    source_path: str
    #: generated line -> line of the kernel's source file
    line_map: dict[int, int] = field(repr=False)

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


def helper_library(target: str, mode: str) -> str:
    """Source of the checked-access helpers for one target and mode."""
    if target == "cuda":
        decorator = '@_tm_cuda.jit(device=True, inline="always")'

        def atomic(op, array, index, value):
            return f"_tm_cuda.atomic.{op}({array}, {index}, {value})"
    else:
        decorator = '@_tm_njit(inline="always", **_TM_OPTS)'

        def atomic(op, array, index, value):
            if op == "add":
                return f"{array}[{index}] += {value}"
            compare = "<" if op == "min" else ">"
            return f"if {value} {compare} {array}[{index}]: {array}[{index}] = {value}"

    out = []

    def emit(text: str) -> None:
        out.append(decorator + "\n" + text.strip("\n") + "\n")

    if mode == "record":
        emit(f"""
def _tm_oob_hit(oob, oobmin, oobt, oobf, sl, d, g, i, j):
    {atomic("add", "oob", "(sl, d)", 1)}
    {atomic("min", "oobmin", "(sl, d)", "g")}
    if oobf[g, d, 0] < 0:
        oobf[g, d, 0] = sl
        oobf[g, d, 1] = i
        oobf[g, d, 2] = j
    oobt[g] += 1
""")
        # Per thread and access site: the element offset of its first few
        # accesses (-1: out of bounds), and how many of those it made (the
        # count stops at the trace's capacity: later accesses cost one load).
        # Each thread writes only its own entries: no atomics needed.
        emit("""
def _tm_trace(tcnt, taddr, site, g, offset):
    if site >= 0:
        occurrence = tcnt[site, g]
        if occurrence < taddr.shape[1]:
            taddr[site, occurrence, g] = offset
            tcnt[site, g] = occurrence + 1
""")
    rec = "sl, site, oob, oobmin, oobt, oobf, tcnt, taddr, g"
    for nd in (1, 2):
        idx = "i, j" if nd == 2 else "i"
        tup = "(i, j)" if nd == 2 else "i"
        jv = "j" if nd == 2 else "0"
        offset = "i * x.shape[1] + j" if nd == 2 else "i"
        out_of_bounds = ("i < 0 or i >= x.shape[0] or j < 0 or j >= x.shape[1]" if nd == 2
                         else "i < 0 or i >= x.shape[0]")
        if mode == "plain":
            emit(f"""
def _tm_ld{nd}(x, {idx}):
    if {out_of_bounds}:
        return _TM_ZERO
    return x[{idx}]
""")
            emit(f"""
def _tm_st{nd}(x, {idx}, v):
    if {out_of_bounds}:
        return
    x[{idx}] = v
""")
            for op in RECORDED_ATOMICS:
                emit(f"""
def _tm_at{op}{nd}(x, {idx}, v):
    if {out_of_bounds}:
        return _TM_ZERO
{_atomic_update(target, op, tup)}
""")
            continue
        miss = "        _tm_trace(tcnt, taddr, site, g, -1)\n"
        hit = f"    _tm_trace(tcnt, taddr, site, g, {offset})\n"
        hit_read = miss + f"        _tm_oob_hit(oob, oobmin, oobt, oobf, sl, 0, g, i, {jv})"
        hit_write = miss + f"        _tm_oob_hit(oob, oobmin, oobt, oobf, sl, 1, g, i, {jv})"
        emit(f"""
def _tm_ld{nd}_in(x, {idx}, reads, {rec}):
    if {out_of_bounds}:
{hit_read}
        return _TM_ZERO
{hit}    {atomic("add", "reads", tup, 1)}
    return x[{idx}]
""")
        emit(f"""
def _tm_ld{nd}_x(x, {idx}, {rec}):
    if {out_of_bounds}:
{hit_read}
        return _TM_ZERO
{hit}    return x[{idx}]
""")
        record_write = f"""
    s = stores[g]
    stores[g] = s + 1
    {atomic("add", "cnt", tup, 1)}
    {atomic("min", "minw", tup, "g")}
    {atomic("max", "maxw", tup, "g")}
    {atomic("min", "itr", tup, "s")}"""
        writer_args = "sl, site, cnt, minw, maxw, itr, stores, oob, oobmin, oobt, oobf, tcnt, taddr, g"
        emit(f"""
def _tm_st{nd}_out(x, {idx}, v, {writer_args}):
    if {out_of_bounds}:
{hit_write}
        return
{hit}    x[{idx}] = v{record_write}
""")
        emit(f"""
def _tm_st{nd}_x(x, {idx}, v, {rec}):
    if {out_of_bounds}:
{hit_write}
        return
{hit}    x[{idx}] = v
""")
        for op in RECORDED_ATOMICS:
            emit(f"""
def _tm_at{op}{nd}_out(x, {idx}, v, {writer_args}):
    if {out_of_bounds}:
{hit_write}
        return _TM_ZERO
{hit.rstrip()}{record_write}
{_atomic_update(target, op, tup)}
""")
            emit(f"""
def _tm_at{op}{nd}_x(x, {idx}, v, {rec}):
    if {out_of_bounds}:
{hit_write}
        return _TM_ZERO
{hit}{_atomic_update(target, op, tup)}
""")
    return "\n\n".join(out)


def _atomic_update(target: str, op: str, index: str) -> str:
    """Body lines of a user's atomic update that returns the old value."""
    if target == "cuda":
        return f"    return _tm_cuda.atomic.{op}(x, {index}, v)"
    new = {"add": "old + v", "sub": "old - v", "max": "max(old, v)", "min": "min(old, v)"}[op]
    return f"    old = x[{index}]\n    x[{index}] = {new}\n    return old"


def _cpu_driver(plan: KernelPlan, mode: str) -> str:
    """The compiled loop that runs the threads ``g0 <= gtid < g1`` of the grid,
    in order of global thread id (block by block, x fastest)."""
    params = list(plan.kernel.params)
    if mode == "record":
        params += list(RECORD_PARAMS) + [reads_param(i) for i in range(2)]
    args = ", ".join(params)
    coords = ", ".join(COORDINATE_PARAMS)
    return f"""
@_tm_njit(**_TM_OPTS)
def _tm_run_{mode}({args}, _tm_gdx, _tm_gdy, _tm_bdx, _tm_bdy, _tm_g0, _tm_g1):
    _tm_tpb = _tm_bdx * _tm_bdy
    for _tm_gtid in range(_tm_g0, _tm_g1):
        _tm_b = _tm_gtid // _tm_tpb
        _tm_t = _tm_gtid - _tm_b * _tm_tpb
        _tm_by = _tm_b // _tm_gdx
        _tm_bx = _tm_b - _tm_by * _tm_gdx
        _tm_ty = _tm_t // _tm_bdx
        _tm_tx = _tm_t - _tm_ty * _tm_bdx
        {plan.name}__tm_thread_{mode}({args}, {coords})
"""


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

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def module_text(plan: KernelPlan, target: str, dtype: str,
                cpu_options: str = _CPU_OPTIONS) -> _ModuleText:
    """The full text of the derived module for ``target`` ("cuda" or "cpu")."""
    module = plan.module
    text = _ModuleText(module.path)
    text.add(f"# Generated by ThreadMap from {module.path}, kernel {plan.name!r}, for the "
             f"{'CUDA' if target == 'cuda' else 'CPU emulation'} target ({dtype}). Do not edit.")
    for line in module.imports:
        text.add(line)
    text.add("import numba as _tm_numba")
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
        text.add_function("@_tm_cuda.jit", derive(plan, "cuda", "record"))
    else:
        for mode in ("record", "plain"):
            text.add(helper_library("cpu", mode))
            text.add_function("@_tm_njit(**_TM_OPTS)", derive(plan, "cpu", mode))
            text.add(_cpu_driver(plan, mode))
    return text


def load_module(plan: KernelPlan, target: str, dtype: str,
                cpu_options: str = _CPU_OPTIONS) -> GeneratedModule:
    """Generate (or reuse) and import the derived module.  ``cpu_options`` (the
    numba options of the emulation, as source text) is for benchmarks."""
    text = module_text(plan, target, dtype, cpu_options)
    digest = hashlib.sha256(text.text.encode()).hexdigest()[:20]
    name = f"{GENERATED_PREFIX}{target}_{digest}"
    directory = cache_dir()
    path = directory / f"{name}.py"
    if not path.exists() or path.read_text() != text.text:
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(text.text)
        os.replace(tmp, path)
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    module = sys.modules.get(name) or importlib.import_module(name)
    return GeneratedModule(module=module, path=path, source_path=plan.module.path,
                           line_map=text.line_map)
