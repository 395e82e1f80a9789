"""Turn a request's kernel (built-in name or user file) into a kernel plan."""
from __future__ import annotations

import dataclasses
import os
from functools import lru_cache

from ..errors import KernelSourceError, RequestError
from ..request import RunRequest
from .catalogue import CATALOGUE, builtin
from .plan import KernelPlan, make_plan
from .source import parse_module, read_module

#: Names of scalar parameters that mean a matrix dimension.
DIMENSION_NAMES = {
    "m": "m", "M": "m", "rows": "m", "num_rows": "m", "n_rows": "m", "height": "m",
    "k": "k", "K": "k", "inner": "k",
    "n": "n", "N": "n", "cols": "n", "num_cols": "n", "n_cols": "n", "width": "n",
    "size": None, "dim": None, "matrix_size": None, "n_size": None,
}


def load_plan(request: RunRequest, matmul: bool | None = None) -> KernelPlan:
    """The plan of the request's kernel; errors name the file and line.
    ``matmul``: whether it must follow the matmul convention (by default,
    unless the request describes its arguments)."""
    if matmul is None:
        matmul = not request.arguments
    if request.kernel_file:
        path = os.path.abspath(request.kernel_file)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError as exc:
            raise KernelSourceError(f"cannot open the kernel file: {exc.strerror}",
                                    request.kernel_file) from None
        return _file_plan(path, mtime, request.kernel, matmul)
    if request.kernel not in CATALOGUE:
        raise RequestError(f"unknown kernel {request.kernel!r}; built-in kernels: "
                           f"{', '.join(CATALOGUE)} (or give a kernel file)")
    return _builtin_plan(request.kernel)


@lru_cache(maxsize=32)
def _file_plan(path: str, mtime: int, name: str | None, matmul: bool = True) -> KernelPlan:
    module = read_module(path)
    return dataclasses.replace(make_plan(module, module.kernel(name), matmul), from_file=True)


@lru_cache(maxsize=None)
def _builtin_plan(name: str) -> KernelPlan:
    spec = builtin(name)
    module = parse_module(spec.source(), str(spec.path))
    return make_plan(module, module.kernel(None))


def check_scalar_names(plan: KernelPlan, request: RunRequest) -> None:
    """Refuse a scalar given that the kernel has no parameter of."""
    unknown = set(dict(request.scalars)) - set(plan.scalars)
    if unknown:
        raise RequestError(f"kernel {plan.name!r} has no scalar parameter "
                           f"{', '.join(sorted(unknown))} (its scalars: "
                           f"{', '.join(plan.scalars) or 'none'})")


def resolve_scalars(plan: KernelPlan, request: RunRequest) -> list[tuple[str, float, str]]:
    """(name, value, where it came from) for each scalar parameter, in order.

    A value given in the request wins.  Otherwise a parameter whose name says
    which dimension it is (``m``/``k``/``n``, ``rows``/``cols``, ...) takes it;
    ``size``-like names take the dimension when M = K = N.  Anything else must
    be given.
    """
    given = dict(request.scalars)
    check_scalar_names(plan, request)
    resolved = []
    dims = {"m": request.m, "k": request.k, "n": request.n}
    square = request.m == request.k == request.n
    for name in plan.scalars:
        if name in given:
            resolved.append((name, given[name], "given"))
            continue
        meaning = DIMENSION_NAMES.get(name, "?")
        if meaning in dims:
            resolved.append((name, dims[meaning], f"{meaning.upper()}, from its name"))
        elif meaning is None and square:
            resolved.append((name, request.n, "M = K = N"))
        else:
            raise RequestError(
                f"kernel {plan.name!r} takes a scalar parameter {name!r} whose value "
                "ThreadMap cannot derive from the shapes; give its value (the Scalars field, "
                f"or --scalar {name}=VALUE)")
    return resolved


def scalar_arguments(plan: KernelPlan, request: RunRequest) -> tuple[float | int, ...]:
    """Values of the kernel's scalar parameters, in order (see resolve_scalars)."""
    return tuple(value for _, value, _ in resolve_scalars(plan, request))
