"""A described run's reference: the user's own host code, named by ``--reference FILE:FUNCTION``.

It is run here, in the command's own process, after the kernel has run
(never in the sandboxed child that runs a kernel file, and never by
``check``, whose files are untrusted).  It is given float64 copies of the
run's inputs and its scalars, in the kernel's parameter order without the
output, and returns the expected output (any array of the output's shape, or
of as many elements).  A reference that cannot be loaded, raises, or returns
something else leaves the run's maps and checks as they are, and the verdict
says why there is no correctness verdict.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import traceback

import numpy as np

from .analyses.correctness import compare, elementwise_reference
from .errors import RequestError
from .inputs import make_described_inputs
from .result import RunResult, make_verdict
from .sources.loader import resolve_scalars


def parse_reference(spec: str) -> tuple[str, str]:
    """``file.py:function`` -> (path, function name); RequestError if not."""
    path, sep, function = spec.rpartition(":")
    if not sep or not path or not function.isidentifier():
        raise RequestError(f"--reference takes FILE.py:FUNCTION (your host code that returns "
                           f"the expected output), not {spec!r}")
    if not os.path.isfile(path):
        raise RequestError(f"--reference {spec}: no file {path}")
    return path, function


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
                           f"{_where(exc)}") from None
    found = getattr(module, function, None)
    if not callable(found):
        raise RequestError(f"--reference {spec}: {path} has no function {function!r}")
    return found


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    line = f" (line {frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{line}"


def check_against_reference(result: RunResult, plan) -> RunResult:
    """``result`` with its output compared with the reference's (the maps
    kept whatever happens; the verdict says why when there is none)."""
    request = result.request
    try:
        function = load_reference(request.reference)
        inputs = make_described_inputs(request.arguments, plan.inputs, request.pattern,
                                       request.seed)
        arrays = {name: x.astype(np.float64) for name, x in zip(plan.inputs, inputs)}
        scalars = {name: value for name, value, _ in resolve_scalars(plan, request)}
        arguments = [arrays[p] if p in arrays else scalars[p]
                     for p in plan.kernel.params if p != plan.output]
        try:
            expected = function(*arguments)
        except Exception as exc:  # noqa: BLE001 (the user's code)
            raise RequestError(f"the reference {request.reference} raised {_where(exc)}") \
                from None
        expected = np.asarray(expected, dtype=np.float64) \
            if not isinstance(expected, np.ndarray) else expected.astype(np.float64)
        if expected.size != result.c.size:
            output = next(a for a in request.arguments if a.name == plan.output)
            raise RequestError(f"the reference {request.reference} returned an array of shape "
                               f"{expected.shape}, not one of the output's {output}")
    except RequestError as exc:
        verdict = dataclasses.replace(result.verdict, reference_note=str(exc))
        return dataclasses.replace(result, verdict=verdict)
    reference = elementwise_reference(expected.reshape(result.c.shape), request.dtype)
    errors = compare(result.c, reference)
    verdict = make_verdict(result.maps, errors, result.analysis, plan.output)
    return dataclasses.replace(result, verdict=verdict, reference=reference.c)
