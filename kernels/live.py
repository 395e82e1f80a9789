"""ThreadMap on a live kernel: the ``@cuda.jit`` dispatcher itself, defined in
a script, a module or a notebook cell.

    from kernels import threadmap
    r = threadmap(matmul, shape=(M, K, N), grid=..., block=..., dtype="float32")
    r.verdict, r.reasons, r.maps, r.save("out/"), r.image("count"), r.show()

The kernel is never called.  Its source is read as for a kernel file and
parsed: the text of the file it was defined in (``linecache``, which also
holds a notebook cell's text), and, for a notebook, the constants and imports
the kernel uses that other cells defined, taken from its globals as literal
values (numbers only) and import lines.  The run is a kernel-file run: in a
child process with a time limit, so a kernel that hangs cannot hang the
caller.
"""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import KernelSourceError, RequestError, ThreadMapError
from .inputs import GIVEN_PREFIX
from .estimate import KERNEL_FILE_TIME_LIMIT
from .request import RunRequest
from .result import RunResult


def kernel_source(kernel) -> tuple[str, str, str]:
    """(text of the kernel's file, the kernel's name, where it came from) for a
    numba CUDA dispatcher (or its Python function)."""
    function = getattr(kernel, "py_func", kernel)
    if not isinstance(function, types.FunctionType):
        raise ThreadMapError(f"{kernel!r} is not a numba CUDA kernel (a @cuda.jit function): "
                             "ThreadMap reads a kernel's Python source")
    name = function.__name__
    if name == "<lambda>":
        raise ThreadMapError("a lambda has no source ThreadMap can parse: define the kernel "
                             "with def and @cuda.jit")
    filename = function.__code__.co_filename
    lines = linecache.getlines(filename, function.__globals__)
    text = "".join(lines)
    if not text or f"def {name}" not in text:
        raise ThreadMapError(
            f"the source of kernel {name!r} cannot be found (it was defined with exec, or "
            f"its file {filename!r} is gone): ThreadMap parses a kernel's source and never "
            "runs it; define the kernel in a file, a module or a notebook cell")
    origin = filename if os.path.isfile(filename) else f"a notebook cell ({filename})"
    return text + _borrowed_names(function, text), name, origin


def _borrowed_names(function: types.FunctionType, text: str) -> str:
    """Lines that bind what the kernel uses from elsewhere (another notebook
    cell): module imports, and numbers as literal constants.  Appended, so
    the kernel keeps its line numbers."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    lines = []
    for used in sorted(set(function.__code__.co_names) - bound):
        value = function.__globals__.get(used)
        if isinstance(value, types.ModuleType):
            if value.__name__ == "numba.cuda":
                lines.append("from numba import cuda" + ("" if used == "cuda" else f" as {used}"))
            elif value.__name__ in ("math", "numpy", "numba"):
                lines.append(f"import {value.__name__}"
                             + ("" if used == value.__name__ else f" as {used}"))
        elif isinstance(value, (bool, int, float)):
            lines.append(f"{used} = {value!r}")
    if not lines:
        return ""
    return ("\n\n# Bound in other cells; added by ThreadMap from the kernel's globals:\n"
            + "\n".join(lines) + "\n")


def _kernel_file(text: str, name: str) -> Path:
    """The kernel's text as a file (named by its content) that the engine
    parses, in the user's private cache folder (never a shared /tmp folder,
    where a file planted under the same name would be read instead)."""
    from .cache import cache_dir
    from .outputs import write_atomically

    folder = cache_dir().parent / "live"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{name}_{hashlib.sha256(text.encode()).hexdigest()[:16]}.py"
    try:
        same = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        write_atomically(path, text)
    return path


def _whole(value, what: str) -> int:
    """A whole number given to the API (a numpy integer too), never a float or a
    bool silently truncated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise RequestError(f"{what} must be a whole number, not {value!r}")
    return int(value)


def threadmap(kernel, shape: tuple[int, int, int] | None = None, grid=None, block=None,
              backend: str = "auto", dtype: str = "float32", pattern: str = "random",
              seed: int = 0, scalars: dict | None = None,
              time_limit: float | None = KERNEL_FILE_TIME_LIMIT, *, args=None,
              reference=None) -> ThreadMapResult:
    """Run ThreadMap on ``kernel`` (a ``@cuda.jit`` dispatcher), either

    * for ``C = A @ B`` with ``shape = (M, K, N)`` (inputs made by
      ``pattern``, checked against a float64 ``A @ B``), or
    * on ``args``, the kernel's own arguments in order (numpy arrays and
      numbers), whatever it computes: the arrays it reads are its inputs as
      given; the one it stores into is poisoned with NaN first (unless it
      reads or accumulates into it: then it starts from the values given).
      ``reference`` is a function of the inputs (float64 copies, in the
      kernel's parameter order, scalars too) that returns the expected
      output, or that output itself; without one there is no correctness
      verdict, only maps and checks (``verdict`` is ``"CHECKED"``).

    ``grid`` and ``block`` as ints or tuples (x first), or None for the
    file's own launch or a guessed one, said so."""
    from .engine import confirm, run
    from .presets import default_launch
    from .request import check_request

    text, name, origin = kernel_source(kernel)
    path = Path(origin) if os.path.isfile(origin) and Path(origin).read_text() == text \
        else _kernel_file(text, name)
    if (shape is None) == (args is None):
        raise RequestError("give shape=(M, K, N) for C = A @ B, or args=(...), the kernel's "
                           "own arguments: one of them")
    if reference is not None and args is None:
        raise RequestError("reference= is for a run on args=(...); a shape run is checked "
                           "against A @ B")
    if shape is not None:
        if not isinstance(shape, (tuple, list)) or len(shape) != 3:
            raise RequestError(f"shape must be (M, K, N), three whole numbers, not {shape!r}")
        m, k, n = (_whole(v, f"shape's {'MKN'[i]}") for i, v in enumerate(shape))
    else:
        m = k = n = 1  # (set from the output's shape below)

    def dims(value, what):
        if value is None:
            return None
        value = (value,) if not isinstance(value, (tuple, list)) else tuple(value)
        if not 1 <= len(value) <= 2:
            raise RequestError(f"{what} takes 1 or 2 dimensions, not {value!r}")
        return tuple(_whole(v, what) for v in value)

    given = {}
    for key, value in (scalars or {}).items():
        if not isinstance(key, str) or not key.isidentifier():
            raise RequestError(f"scalar names are parameter names, not {key!r}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
                or isinstance(value, complex):
            raise RequestError(f"scalar {key} must be a number, not {value!r}")
        given[key] = int(value) if isinstance(value, (int, np.integer)) else float(value)
    if given and args is not None:
        raise RequestError("with args=(...), scalars are given in args, in the kernel's "
                           "parameter order: scalars= is for a shape run")
    seed = _whole(seed, "seed")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(
            time_limit, (int, float)) or not time_limit > 0 or time_limit != time_limit):
        raise RequestError(f"time_limit must be a positive number of seconds or None, not "
                           f"{time_limit!r}")
    grid, block = dims(grid, "grid"), dims(block, "block")
    request = RunRequest(kernel=name, kernel_file=str(path), m=m, k=k, n=n, dtype=dtype,
                         backend=backend, pattern=pattern, seed=seed,
                         scalars=tuple(given.items()),
                         grid=grid or (1,), block=block or (1,))
    values_file = None
    try:
        if args is not None:
            request, values_file = _given_request(request, args)
        if grid is None or block is None:
            chosen = default_launch(request)
            request = request.with_(grid=grid or chosen.grid, block=block or chosen.block,
                                    launch_source=chosen.launch_source if grid is None and
                                    block is None else "given in part; the rest "
                                    + chosen.launch_source)
        check_request(request)
        try:
            # (on a GPU machine auto answers from the CPU emulation, and the
            # GPU's run follows here, before the caller's arrays are let go)
            result = run(request, isolate=True, time_limit=time_limit, reference=reference,
                         gpu_follows=True)
            if result.follows:
                result = confirm(result, isolate=True, time_limit=time_limit,
                                 reference=reference)
        except KernelSourceError as exc:
            raise ThreadMapError(f"{exc} (the kernel's source from {origin})") from None
    finally:
        if values_file is not None:
            values_file.unlink(missing_ok=True)
    return ThreadMapResult(result, origin)


#: A handed-over .npz older than this was left by a process that was killed.
STALE_ARRAYS_SECONDS = 24 * 3600


def _remove_stale_arrays(folder: Path) -> None:
    import time

    for path in folder.glob("args_*.npz"):
        try:
            if time.time() - path.stat().st_mtime > STALE_ARRAYS_SECONDS:
                path.unlink()
        except OSError:
            pass


def _given_request(request: RunRequest, args) -> tuple[RunRequest, Path]:
    """``request`` run as it is on the caller's ``args``, and the ``.npz``
    that hands their arrays to the run (in the user's private cache folder;
    the caller removes it after the run)."""
    import tempfile

    from .cache import cache_dir
    from .sources.arguments import describe_given, describe_value
    from .sources.loader import load_plan

    params = load_plan(request, matmul=False).kernel.params
    if not isinstance(args, (tuple, list)):
        raise RequestError(f"args must be a tuple of the kernel's arguments in order ({', '.join(params)}), "
                           f"numpy arrays and numbers, not {type(args).__name__}")
    if len(args) != len(params):
        raise RequestError(f"kernel {request.kernel} takes {len(params)} argument"
                           f"{'s' if len(params) != 1 else ''} ({', '.join(params)}); args "
                           f"gives {len(args)}")
    where = {name: f"args[{i}] ({name})" for i, name in enumerate(params)}
    # (in this machine's byte order: an array read from a big-endian file is
    # described and handed over as the numbers it holds)
    args = [np.ascontiguousarray(value, value.dtype.newbyteorder("="))
            if isinstance(value, np.ndarray) and value.dtype.kind in "iufb" else value
            for value in args]
    described = tuple(describe_value(name, value, where[name])
                      for name, value in zip(params, args))
    request = describe_given(request, described, where)
    # (by a prefixed name: a parameter called `file` or `allow_pickle` is
    # savez's own keyword)
    arrays = {f"{GIVEN_PREFIX}{name}": value for name, value in zip(params, args)
              if isinstance(value, np.ndarray) and value.ndim > 0}
    folder = cache_dir().parent / "live"
    folder.mkdir(mode=0o700, exist_ok=True)
    _remove_stale_arrays(folder)
    handle = tempfile.NamedTemporaryFile(dir=folder, prefix="args_", suffix=".npz", delete=False)
    path = Path(handle.name)
    try:
        with handle:
            np.savez(handle, **arrays)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return request.with_(given_inputs=str(path)), path


@dataclass(frozen=True, eq=False)
class ThreadMapResult:
    """What :func:`threadmap` gives: the verdict, its reasons, the maps, and
    ways to keep or look at them."""

    result: RunResult
    #: where the kernel's source was read from (a file, or a notebook cell)
    origin: str

    @property
    def verdict(self) -> str:
        """``"PASS"`` or ``"FAIL"``; ``"CHECKED"`` where the checks passed but
        there was no reference to hold the output to (``reference_note``)."""
        return self.result.verdict.shown_word

    @property
    def passed(self) -> bool:
        """The checks passed and, where there was a reference, the output matched it."""
        return self.result.verdict.passed

    @property
    def reference_note(self) -> str:
        """Why the output was not held to a reference ("" where it was)."""
        return self.result.verdict.reference_note

    @property
    def reasons(self) -> list[str]:
        note = self.reference_note
        return list(self.result.verdict.reasons) + (
            [f"no correctness verdict: {note}"] if note else [])

    @property
    def diagnoses(self) -> tuple:
        """The causes of the failure at their lines (``Diagnosis``: rule, lines,
        message, evidence, fix); empty where no rule's pattern and evidence
        both hold."""
        return self.result.diagnoses

    @property
    def maps(self) -> dict[str, np.ndarray]:
        """The arrays of ``maps.npz``: count, min_writer, iteration, C, reference, ...
        (a run on ``args``: ``C`` is the output, whatever its name, and
        ``reads_<input>`` each input's read counts)."""
        return self.result.maps_arrays()

    def save(self, folder: str | Path) -> Path:
        """``result.json`` and ``maps.npz`` into ``folder``, as ``threadmap run`` writes them."""
        from .run_files import write_outputs

        folder = Path(folder)
        write_outputs(self.result, folder)
        return folder

    def image(self, map: str = "count", size: tuple[int, int] = (800, 600)) -> bytes:
        """The map as PNG bytes, titled and with its colour bar (drawn by the
        app's exporter: needs PySide6, as the desktop app does)."""
        from .viewers import viewer  # (the app, found through its entry point)

        return viewer().png_bytes(self.result, map, size)

    def show(self) -> None:
        """Open the desktop window on this result."""
        from .viewers import viewer

        viewer().show_result(self.result)

    def summary(self) -> dict:
        return self.result.summary()

    def _repr_png_(self) -> bytes:
        return self.image("count")

    def _repr_html_(self) -> str:
        import base64
        import html

        r = self.result.request
        colour = "#1a7f37" if self.passed else "#c62828"
        reasons = "".join(f"<li>{reason}</li>" for reason in self.reasons)
        reasons += "".join(
            f"<li><b>why</b> (line {d.line_list}): {html.escape(d.message)}"
            f"<br><i>evidence:</i> {html.escape(d.evidence)}<br><i>fix:</i> "
            f"<code>{html.escape(d.fix)}</code></li>" for d in self.diagnoses)
        kernel = self.result.kernel_timing
        png = base64.b64encode(self.image("count", (640, 480))).decode()
        return (f"<div><b style='color:{colour}; font-size:1.3em'>{self.verdict}</b> "
                f"{self.result.kernel_name} {html.escape(r.shape_label)} {r.dtype}, grid "
                f"{'x'.join(map(str, r.grid))} x block {'x'.join(map(str, r.block))} "
                f"({r.launch_source}), {self.result.backend_note}"
                + (f"<ul>{reasons}</ul>" if reasons else "<br>")
                + (f"kernel: {kernel.describe()}<br>" if kernel else "")
                + f"<img src='data:image/png;base64,{png}'/></div>")

    def __repr__(self) -> str:
        return (f"ThreadMapResult({self.verdict}, {self.result.kernel_name}, "
                f"reasons={json.dumps(self.reasons)})")
