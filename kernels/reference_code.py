"""A described run's reference: the user's own host code, named by ``--reference FILE:FUNCTION``.

It is run here, in the command's own process, while the kernel runs in its
child process, or after it when the run is in this process (never in the sandboxed child that runs a kernel file, and never by
``check``, whose files are untrusted).  It is given float64 copies of the
run's inputs (int64 of its integer ones, uint64 of uint64 ones: an index
stays an index) and its scalars, in the kernel's parameter order without the
output (with it, its starting values, where the kernel reads it: an in-place
kernel), and returns the expected output, an array of the output's shape.  A
reference that cannot be loaded, raises, or returns anything else (another
shape, NaN, not numbers) leaves the run's maps and checks as they are, and the
verdict says why there is no correctness verdict.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import sys
import threading
import traceback

import numpy as np

from .analyses.correctness import (
    ElementwiseReference,
    compare,
    elementwise_reference,
    prepare_compare,
)
from .errors import RequestError, ThreadMapError
from .inputs import described_arrays
from .result import RunResult, make_verdict
from .sources.arguments import drawn_shape
from .sources.limits import read_source
from .sources.loader import resolve_scalars


def parse_reference(spec: str) -> tuple[str, str]:
    """``file.py:function`` -> (path, function name); RequestError if not."""
    path, sep, function = spec.rpartition(":")
    if not sep or not path or not function.isidentifier():
        raise RequestError(f"--reference takes FILE.py:FUNCTION (your host code that returns "
                           f"the expected output), not {spec!r}")
    if not os.path.isfile(path):
        raise RequestError(f"--reference {spec}: no file {path}")
    defined = _top_level_names(path)
    if defined is not None and function not in defined:
        functions = sorted(defined) or ["none"]
        raise RequestError(f"--reference {spec}: {path} has no function {function!r} (it "
                           f"defines: {', '.join(functions[:12])}"
                           f"{', ...' if len(functions) > 12 else ''})")
    return path, function


def _top_level_names(path: str) -> set[str] | None:
    """The names a reference's file defines at its top level, read without
    running it, so that a function it lacks is refused before the run (the
    run had gone ahead and said PASS (checks only), exit 0); None where that
    cannot be told so (a star import, a definition under a condition or a
    loop, a module ``__getattr__``, a file that does not read or parse:
    importing it says why)."""
    try:
        tree = ast.parse(read_source(path), path)
    except (ThreadMapError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif _runs_as_a_script(node):
            statements[:0] = node.orelse  # (its body never runs on an import; its else does)
        elif not isinstance(node, (ast.Expr, ast.Pass)):
            return None  # (a condition, a loop, a match...: told by importing it)
    return None if "__getattr__" in names else names


def load_reference(spec: str):
    """The function ``spec`` names; importing its file runs that file (your
    own host code: never a kernel file's)."""
    path, function = parse_reference(spec)
    name = f"threadmap_reference_{abs(hash(os.path.abspath(path)))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise RequestError(f"--reference {spec}: {path} cannot be imported")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 (the user's code: said, with where)
        raise RequestError(f"--reference {spec}: importing {path} raised "
                           f"{_where(exc, path)}") from None
    found = getattr(module, function, None)
    if not callable(found):
        raise RequestError(f"--reference {spec}: {path} has no function {function!r}")
    return found


def _runs_as_a_script(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _where(exc: BaseException, path: str) -> str:
    """``KeyError: 'x' (line 22)``, the line the last in the reference's own file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path)]
    line = f" (line {frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{line}"


def check_against_reference(result: RunResult, plan, given=None,
                            expected: "Expected | None" = None) -> RunResult:
    """``result`` with its output compared with the reference's (the maps
    kept whatever happens; the verdict says why when there is none).

    The reference is ``given`` (the Python API's ``reference=``: a function,
    called as a file's is, or the expected output itself), else
    ``request.reference`` (``FILE:FUNCTION``); ``expected``, when given, is
    what :func:`expected_output` made of it already (while the kernel ran)."""
    if expected is None:
        expected = expected_output(result.request, plan, given)
    if expected.reference is None:
        verdict = dataclasses.replace(result.verdict, reference_note=expected.why_none)
        return dataclasses.replace(result, verdict=verdict)
    reference = _in_shape(expected.reference, result.c.shape)
    errors = compare(result.c, reference)
    # (the maps' counts as the run's own verdict made them: in its child)
    verdict = make_verdict(result.maps, errors, result.analysis, plan.output,
                           counts_from=result.verdict)
    return dataclasses.replace(result, verdict=verdict, reference=reference.c)


def with_expected_output(result: RunResult, expected: "Expected") -> RunResult:
    """``result`` carrying the reference's expected output (as its
    ``reference``, which maps.npz holds), its verdict not yet changed;
    unchanged where the reference gave none."""
    if expected.reference is None:
        return result
    return dataclasses.replace(result,
                               reference=_in_shape(expected.reference, result.c.shape).c)


def _in_shape(reference: ElementwiseReference, shape: tuple) -> ElementwiseReference:
    if reference.c.shape == shape:
        return reference
    # (made in the drawn shape: the same elements)
    return dataclasses.replace(reference, c=reference.c.reshape(shape))


@dataclasses.dataclass(frozen=True)
class Expected:
    """What a described run's reference gave: the expected output with its
    tolerance, in the output's drawn shape, or why there is none."""

    reference: ElementwiseReference | None
    why_none: str = ""


def expected_output(request, plan, given=None) -> Expected:
    """The reference's expected output for ``request`` (its inputs made
    again from its pattern and seed, as the run makes them), checked, or
    why there is none.  Needs nothing from the run: it can go on while the
    kernel runs (:class:`ExpectedInBackground`)."""
    output = next(a for a in request.arguments if a.name == plan.output)
    try:
        if given is None:
            spec = request.reference
            path, _ = parse_reference(spec)
            function = load_reference(spec)
        elif callable(given):
            function, spec = given, f"reference={getattr(given, '__qualname__', given)!r}"
            path = getattr(getattr(given, "__code__", None), "co_filename", "")
        else:
            function, spec, path = None, "reference= (the expected output given)", ""
        if function is None:
            said, expected = "reference= (the expected output) is", given
        else:
            inputs, initial = described_arrays(request, plan)
            arrays = {name: _widened(x) for name, x in zip(plan.inputs, inputs)}
            if initial is not None:  # (an in-place kernel: the output's starting values)
                arrays[plan.output] = _widened(initial.reshape(output.shape))
            scalars = {name: value for name, value, _ in resolve_scalars(plan, request)}
            names = [p for p in plan.kernel.params if p in arrays or p in scalars]
            called = f"{spec}, called with ({', '.join(names)}),"
            said = f"the reference {called} returned"
            try:
                expected = function(*[arrays[p] if p in arrays else scalars[p] for p in names])
            except Exception as exc:  # noqa: BLE001 (the user's code)
                raise RequestError(f"the reference {called} raised {_where(exc, path)}") from None
        try:
            expected = np.asarray(expected)
            if expected.dtype.kind not in "biuf":
                raise TypeError(f"an array of {expected.dtype}")
            # (one copy, in C order: the reference's own array is never kept,
            # and a view such as a transpose's a.T is made contiguous in the
            # same pass, not copied as it is and then again)
            expected = np.array(expected, dtype=np.float64, order="C")
        except (TypeError, ValueError) as exc:
            raise RequestError(f"{said} what is not an array of real "
                               f"numbers ({exc})") from None
        if expected.shape != tuple(output.shape):
            raise RequestError(f"{said} an array of shape "
                               f"{expected.shape}, not the output's {output}")
        bad = int(expected.size - np.count_nonzero(np.isfinite(expected)))
        if bad:
            raise RequestError(f"{said} {bad:,} NaN or infinite "
                               "value" + ("s" if bad != 1 else "") + ": nothing to hold the "
                               "output to there")
    except RequestError as exc:
        return Expected(None, str(exc))
    return Expected(elementwise_reference(expected.reshape(drawn_shape(output.shape)),
                                          request.dtype))


class ExpectedInBackground:
    """:func:`expected_output` on a thread of its own, started as the kernel
    starts in its child process: the inputs made again, the reference run,
    its float64 copy and bound, and the comparison's compiled loop loaded
    (its native code: ~0.05 s; where there is none yet, numba's import and
    cache: ~0.6 s) all overlap the child's start-up and its run.  A daemon
    thread: a run that fails or is cancelled does not wait for it."""

    def __init__(self, request, plan, given=None):
        self._request, self._plan, self._given = request, plan, given
        self._expected: Expected | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._work, daemon=True,
                                        name="threadmap reference")
        self._thread.start()

    def _work(self) -> None:
        try:
            self._expected = expected_output(self._request, self._plan, self._given)
            if self._expected.reference is not None:
                output = next(a for a in self._request.arguments if a.name == self._plan.output)
                prepare_compare(np.dtype(output.dtype), self._expected.reference)
        except BaseException as exc:  # noqa: BLE001 (raised where the result is taken)
            self._failure = exc

    def result(self) -> Expected:
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        assert self._expected is not None
        return self._expected


def _widened(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` as the reference gets it: float64, or int64 for
    integers (uint64 stays uint64: int64 cannot hold all of it)."""
    if array.dtype == np.uint64:
        return array.copy()
    return array.astype(np.int64 if array.dtype.kind in "iu" else np.float64)
