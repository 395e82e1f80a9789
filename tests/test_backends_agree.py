"""The CPU emulation and numba's CUDA simulator give the same maps.

Simulator cases are small: it costs ~130 us per CUDA thread plus several us
per inner-loop iteration.
"""
import numpy as np
import pytest

from kernels import run
from tests.conftest import request, requires_gpu

MAP_FIELDS = ("count", "atomics", "min_writer", "max_writer", "iteration", "stores_per_thread",
              "oob_per_thread", "reads_a", "reads_b")

RACE_FREE = [
    # (kernel, shape, grid, block)
    ("grid-stride", (37, 19, 53), (1,), (1024,)),
    ("grid-stride", (37, 19, 53), (3,), (97,)),
    ("grid-stride", (23, 7, 41), (4,), (96,)),
    ("grid-stride", (23, 7, 41), (3, 2), (32, 2)),
    ("grid-stride-colmajor", (29, 5, 31), (3,), (97,)),
    ("naive-2d", (37, 19, 53), (4, 3), (16, 16)),
    ("naive-2d", (23, 7, 41), (2, 3), (32, 8)),
    ("one-block-chunks", (23, 7, 41), (1,), (96,)),
]
COLLIDING = [
    ("tid-rows", (9, 4, 11), (1,), (12,)),
    ("tid-rows", (6, 5, 4), (2,), (7,)),
    ("one-block-chunks", (13, 5, 11), (2,), (32,)),
]


def _pair(kernel, shape, grid, block):
    cpu = run(request(kernel, shape, grid, block, backend="cpu"))
    seen = []
    sim = run(request(kernel, shape, grid, block, backend="sim"),
              progress=lambda fraction, message: seen.append(fraction))
    # The emulation's run for the warp figures comes after the simulator's
    # own progress, never back to the start.
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert cpu.backend == "cpu" and sim.backend == "sim"
    return cpu, sim


@pytest.mark.sim
@pytest.mark.parametrize("kernel,shape,grid,block", RACE_FREE)
def test_race_free_kernels_agree_element_by_element(kernel, shape, grid, block):
    cpu, sim = _pair(kernel, shape, grid, block)
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(sim.maps, field),
                                      err_msg=field)
    assert cpu.maps.out_of_bounds == sim.maps.out_of_bounds
    # The warp figures of a simulator run come from the emulation's recording
    # run on the same inputs (numba's simulator has no warps).
    assert "lockstep" in sim.analysis_note
    # The simulator sums in float32 where compiled code sums in float64 (numpy
    # 2 promotion rules), so C agrees to the tolerance, not bit for bit.
    assert cpu.verdict.word == sim.verdict.word
    np.testing.assert_allclose(cpu.c, sim.c, rtol=0, atol=4 * cpu.verdict.errors.abs_tolerance)


@pytest.mark.sim
@pytest.mark.parametrize("kernel,shape,grid,block", COLLIDING)
def test_colliding_kernels_agree_on_counts_and_out_of_bounds(kernel, shape, grid, block):
    cpu, sim = _pair(kernel, shape, grid, block)
    np.testing.assert_array_equal(cpu.maps.count, sim.maps.count)
    np.testing.assert_array_equal(cpu.maps.oob_per_thread, sim.maps.oob_per_thread)
    assert cpu.maps.out_of_bounds == sim.maps.out_of_bounds
    assert cpu.maps.collided > 0 and cpu.verdict.word == "FAIL"


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("kernel,shape,grid,block", RACE_FREE)
def test_gpu_agrees_with_the_emulation(kernel, shape, grid, block):
    cpu = run(request(kernel, shape, grid, block, backend="cpu"))
    gpu = run(request(kernel, shape, grid, block, backend="gpu"))
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(gpu.maps, field),
                                      err_msg=field)
    assert gpu.verdict.word == cpu.verdict.word


@pytest.mark.sim
@pytest.mark.parametrize("grid,block", [((3,), (64,)), ((5,), (32,))])
def test_stores_and_atomic_updates_of_one_element_agree(grid, block):
    # The emulation keeps its writer maps encoded (zero = not written) and
    # decodes them after the run; stores and atomics share those maps.
    from pathlib import Path

    from kernels import RunRequest

    path = Path(__file__).parent / "kernels" / "store_then_add.py"
    reqs = [RunRequest(kernel=None, kernel_file=str(path), m=13, k=6, n=17, grid=grid,
                       block=block, backend=backend) for backend in ("cpu", "sim")]
    cpu, sim = run(reqs[0]), run(reqs[1])
    assert cpu.backend == "cpu" and sim.backend == "sim"
    for field in MAP_FIELDS:
        np.testing.assert_array_equal(getattr(cpu.maps, field), getattr(sim.maps, field),
                                      err_msg=field)
    assert (cpu.maps.count > 0).all() and (cpu.maps.atomics > 0).all()
    assert (cpu.maps.max_writer == cpu.maps.min_writer + 1).all()  # an even and an odd thread
    assert cpu.maps.iteration.max() > 0  # some pairs went round the grid-stride loop


CUDA_CACHE_PROBE = '''
import sys
from kernels import RunRequest, run
from kernels.derived.codegen import load_module
from kernels.sources.loader import _builtin_plan

result = run(RunRequest(kernel="naive-2d", m=40, k=24, n=36, grid=(3, 3), block=(16, 16),
                        backend="gpu"))
plan = _builtin_plan("naive-2d")
module = load_module(plan, "cuda", "float32")
hits = sum(sum(module.function(name).stats.cache_hits.values())
           for name in (plan.name, plan.name + "__tm_record"))
print(result.verdict.word, hits)
'''


@requires_gpu
@pytest.mark.gpu
def test_a_second_command_on_the_gpu_compiles_nothing(tmp_path):
    """The CUDA forms are cached on disk (numba-cuda's cache=True, beside the
    generated module): the first process compiles both kernels, the second
    loads both."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    found = [subprocess.run([sys.executable, "-c", CUDA_CACHE_PROBE], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300, check=True)
             .stdout.split() for _ in range(2)]
    assert found == [["PASS", "0"], ["PASS", "2"]]
