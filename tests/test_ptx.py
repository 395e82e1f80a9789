"""Every built-in kernel and its recording form compile to real sm_90 PTX.

NVVM comes with numba-cuda[cu13]; no GPU is needed.
"""
from pathlib import Path

import pytest

from kernels.analyses.ptx import compile_ptx_for, signature
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


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "references")


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_compiles_for_a_gpu_as_written_and_recorded(name):
    # The course is copied by learners: each kernel must compile as it is
    # written (the CPU emulation and the simulator take shapes such as
    # `TPB + 2` that numba refuses on a GPU), and its recording form too.
    import importlib.util

    from numba import cuda

    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)  # (our own file: run here, never a user's)
    from kernels.request import RunRequest
    from kernels.sources.arguments import describe_request

    module = read_module(EXAMPLES / f"{name}.py")
    plan = make_plan(module, module.kernel(None), matmul=False)
    # each array of the type its file describes (the histogram's int32 bins)
    types = describe_request(RunRequest(kernel=None, kernel_file=str(EXAMPLES / f"{name}.py")),
                             as_it_is_unless_matmul=True).element_types
    written, _ = cuda.compile_ptx(getattr(example, name).py_func,
                                  signature(plan, types, False), cc=(9, 0))
    assert ".target sm_90" in written and ".entry" in written
    gen = load_module(plan, "cuda", types)
    recorded = compile_ptx_for(plan, gen.function(f"{plan.name}__tm_record"), types, True,
                               cc=(9, 0))
    assert ".entry" in recorded
    if name == "histogram":  # a 32-bit integer atomic add, as written and as recorded
        assert "atom.global.add.u32" in written or "red.global.add.u32" in written \
            or "atom.global.add.s32" in written or "red.global.add.s32" in written, written
        assert "add.u32" in recorded or "add.s32" in recorded
