"""Compile a kernel to PTX without a GPU (NVVM from numba-cuda[cu13])."""
from __future__ import annotations

import numpy as np

from ..derived.transform import array_slots, written_arrays
from ..element_types import dtype_of
from ..records import WrittenShape, allocate_records
from ..sources.plan import KernelPlan


def signature(plan: KernelPlan, dtype: str, recording: bool, n_threads: int = 1024) -> tuple:
    """numba argument types of the kernel (or its recording form), taken from
    arrays laid out exactly as a run allocates them."""
    from numba import typeof, types

    def matrix(name: str) -> np.ndarray:
        return np.zeros((1,) * plan.ndim[name], dtype_of(dtype, name))

    args = [typeof(matrix(name)) if name in plan.arrays else types.int64
            for name in plan.kernel.params]
    if recording:
        shape = lambda name: (1,) * plan.ndim[name]  # noqa: E731
        written = tuple(WrittenShape(name, shape(name), (1, 1), True)
                        for name in written_arrays(plan))
        records = allocate_records(shape(plan.output), tuple(shape(a) for a in plan.inputs),
                                   len(array_slots(plan)), n_threads, written=written)
        args += [typeof(r) for r in records]
    return tuple(args)


def plain_ptx(plan: KernelPlan, dtype: str, cc: tuple[int, int]) -> str:
    """PTX of ``plan``'s plain CUDA form (no recording), compiled here."""
    from ..derived.codegen import load_module

    gen = load_module(plan, "cuda", dtype)
    return compile_ptx_for(plan, gen.function(plan.name), dtype, False, cc=cc)


#: Where a kernel read from a file is compiled to PTX (a sandboxed child's
#: ``plain_ptx``, bounded; see ``engine.compile_files_in_children``); None:
#: here.
_file_ptx = None


def compile_files_with(compile_ptx):
    """Compile kernels read from files with ``compile_ptx(plan, dtype, cc)``
    (None: here, with :func:`plain_ptx`); the previous setting."""
    global _file_ptx
    previous, _file_ptx = _file_ptx, compile_ptx
    return previous


def kernel_ptx(plan: KernelPlan, dtype: str, cc: tuple[int, int]) -> str:
    """PTX of ``plan``'s plain CUDA form: compiled in a child for a kernel
    read from a file where this process serves such files, else here."""
    if _file_ptx is not None and plan.from_file:
        return _file_ptx(plan, dtype, cc)
    return plain_ptx(plan, dtype, cc)


def compile_ptx_for(plan: KernelPlan, dispatcher, dtype: str, recording: bool,
                    cc: tuple[int, int] = (9, 0)) -> str:
    """PTX of ``dispatcher`` (a cuda.jit kernel of a generated module)."""
    from numba import cuda

    function = getattr(dispatcher, "py_func", dispatcher)
    ptx, _ = cuda.compile_ptx(function, signature(plan, dtype, recording), cc=cc)
    return ptx
