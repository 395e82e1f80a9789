"""Occupancy against an independent reference: NVIDIA's own calculator.

cuda_occupancy.h (the CUDA toolkit's include folder) is header-only C++: the
harness in tests/references/ compiles with g++ alone, needs no GPU, and answers
the resident blocks per SM for the same GPU limits and kernel resources.
"""
import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from kernels.analyses.occupancy import GPU_MODELS, occupancy

HEADER_DIRS = [Path("/usr/local/cuda/include")] + [
    Path(p).parent.parent / "include" for p in filter(None, [shutil.which("nvcc"),
                                                              shutil.which("ptxas")])]
HEADER = next((d for d in HEADER_DIRS if (d / "cuda_occupancy.h").exists()), None)
COMPILER = shutil.which("g++")

pytestmark = pytest.mark.skipif(
    HEADER is None or COMPILER is None,
    reason="needs the CUDA toolkit's cuda_occupancy.h and g++ (an independent reference)")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    source = Path(__file__).parent / "references" / "occupancy_reference.cpp"
    binary = tmp_path_factory.mktemp("occupancy") / "occupancy_reference"
    subprocess.run([COMPILER, "-O1", f"-I{HEADER}", str(source), "-o", str(binary)], check=True)

    def blocks_per_sm(configs):
        lines = []
        for gpu, threads, registers, shared in configs:
            lines.append(" ".join(map(str, (
                *gpu.compute_capability, gpu.max_threads_per_sm, gpu.registers_per_block,
                gpu.registers_per_sm, 48 * 1024, gpu.shared_per_sm, gpu.max_shared_per_block,
                gpu.reserved_shared_per_block, threads, registers, shared))))
        out = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True,
                             text=True, check=True).stdout.split()
        return [int(v) for v in out]

    return blocks_per_sm


def test_blocks_per_sm_agree_with_cuda_occupancy_h(reference):
    threads = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    registers = (16, 24, 32, 40, 48, 64, 96, 128, 168, 255)
    shared = (0, 1, 129, 4868, 8192, 12000, 16385, 24576, 33000, 40000, 49152)
    configs = [(gpu, t, r, s) for gpu, t, r, s in itertools.product(
        GPU_MODELS.values(), threads, registers, shared)]
    expected = reference(configs)
    differ = [(gpu.name, t, r, s, mine.blocks_per_sm, theirs)
              for (gpu, t, r, s), theirs in zip(configs, expected)
              if (mine := occupancy(gpu, 1, t, r, s)).blocks_per_sm != max(theirs, 0)]
    assert not differ, f"{len(differ)} of {len(configs)} differ, e.g. {differ[:5]}"


def test_t4_allocates_shared_memory_in_256_byte_units(reference):
    # The example: 32 threads and 4,868 bytes on a T4.  In 256-byte
    # units a block takes 5,120 bytes: 65,536 // 5,120 = 12 blocks (in
    # 128-byte units it would be 4,992 bytes and 13).
    t4 = GPU_MODELS["T4"]
    assert reference([(t4, 32, 32, 4868)]) == [12]
    assert occupancy(t4, 1, 32, 32, 4868).blocks_per_sm == 12


def test_static_shared_memory_over_48_kib_does_not_fit_anywhere():
    for gpu in GPU_MODELS.values():
        result = occupancy(gpu, 10, 256, 32, 48 * 1024 + 4)
        assert (result.blocks_per_sm, result.limited_by) == (0, "shared memory")
        assert "does not fit" in result.describe()
