"""Compile a kernel to PTX without a GPU (NVVM from numba-cuda[cu13])."""
from __future__ import annotations

from .plan import KernelPlan
from .records import RECORD_PARAMS


def signature(plan: KernelPlan, dtype: str, recording: bool) -> tuple:
    """numba argument types of the kernel (or its recording form)."""
    from numba import types

    element = getattr(types, dtype)
    args = []
    for name in plan.kernel.params:
        if name in plan.arrays:
            args.append(types.Array(element, plan.ndim[name], "C"))
        else:
            args.append(types.int64)
    if recording:
        out_ndim = plan.ndim[plan.output]
        per_element = {"_tm_count": types.int32, "_tm_atomics": types.int32,
                       "_tm_min_writer": types.int64, "_tm_max_writer": types.int64,
                       "_tm_iteration": types.int32}
        for name in RECORD_PARAMS:
            if name in per_element:
                args.append(types.Array(per_element[name], out_ndim, "C"))
            elif name == "_tm_stores":
                args.append(types.Array(types.int32, 1, "C"))
            elif name == "_tm_oob_thread":
                args.append(types.Array(types.int64, 1, "C"))
            elif name == "_tm_oob_first":
                args.append(types.Array(types.int64, 3, "C"))
            else:
                args.append(types.Array(types.int64, 2, "C"))
        for name in plan.inputs:
            args.append(types.Array(types.int64, plan.ndim[name], "C"))
    return tuple(args)


def compile_ptx_for(plan: KernelPlan, dispatcher, dtype: str, recording: bool,
                    cc: tuple[int, int] = (9, 0)) -> str:
    """PTX of ``dispatcher`` (a cuda.jit kernel of a generated module)."""
    from numba import cuda

    function = getattr(dispatcher, "py_func", dispatcher)
    ptx, _ = cuda.compile_ptx(function, signature(plan, dtype, recording), cc=cc)
    return ptx
