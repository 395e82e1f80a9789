"""Every built-in kernel and its recording form compile to real sm_90 PTX.

NVVM comes with numba-cuda[cu13]; no GPU is needed.
"""
import pytest

from kernels.analyses.ptx import compile_ptx_for
from kernels.derived.codegen import load_module
from kernels.sources.catalogue import CATALOGUE
from kernels.sources.loader import _builtin_plan


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CATALOGUE))
def test_kernel_and_recording_kernel_compile_to_ptx(name, dtype):
    plan = _builtin_plan(name)
    gen = load_module(plan, "cuda", dtype)
    for function, recording in ((plan.name, False), (f"{plan.name}__tm_record", True)):
        ptx = compile_ptx_for(plan, gen.function(function), dtype, recording, cc=(9, 0))
        assert ".target sm_90" in ptx
        assert ".entry" in ptx
        if recording:
            # The recording kernel keeps its counts with atomics on the GPU.
            assert "atom.global.add" in ptx or "red.global.add" in ptx
            assert "atom.global.min.s64" in ptx or "red.global.min.s64" in ptx


KERNEL_FILES = ["doc_style_tiled.py", "early_return.py", "missing_barrier.py",
                "transposed_tile.py", "divergent_branch.py", "local_and_count.py",
                "shared_off_by_one.py"]


@pytest.mark.parametrize("name", KERNEL_FILES)
def test_shared_memory_kernel_files_compile_to_ptx(name):
    # Their recording forms check every shared and local access on the GPU too.
    from pathlib import Path

    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module
    module = read_module(Path(__file__).parent / "kernels" / name)
    plan = make_plan(module, module.kernel(None))
    gen = load_module(plan, "cuda", "float32")
    ptx = compile_ptx_for(plan, gen.function(f"{plan.name}__tm_record"), "float32", True,
                          cc=(9, 0))
    assert ".target sm_90" in ptx and ".entry" in ptx
    if plan.barrier_lines:  # bar.sync, or bar.red for syncthreads_count
        assert "\tbar." in ptx or "\tbarrier." in ptx
