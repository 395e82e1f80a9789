"""The lowering (issue 44, point 1): a kernel is lowered once into a tree of
typed operations, every number assigned there, and both emitters run over it
(tests/test_tiers.py compares what they make; here, the tree itself)."""
from pathlib import Path

import pytest

from kernels.derived.local_types import kernel_types
from kernels.derived.lockstep import lockstep_code
from kernels.derived.lowering import Exit, Refused, Simple, lower, outline
from kernels.derived.vector import vector_code
from kernels.errors import EmulationUnsupported
from kernels.sources.plan import make_plan
from kernels.sources.source import read_module

KERNELS = Path(__file__).parent / "kernels"


def _lowered(path, name=None):
    module = read_module(str(path))
    plan = make_plan(module, module.kernel(name or module.kernels[0].name), True)
    return lower(plan, kernel_types(plan, "float32", ()))


def test_the_tree_of_a_tiled_kernel_as_worked_out_by_hand():
    # missing_barrier.py: two shared declarations (the driver's), then lanes'
    # locals in rows of their dtype (int64: x, y, tx, ty, then the loops'
    # i and j; float64: tmp), loop 0 over the tiles and loop 1 inside it,
    # each loop's test a branch site in program order, and the one barrier.
    lowered = _lowered(KERNELS / "missing_barrier.py")
    assert outline(lowered.operations) == "\n".join([
        "   8  Skip: sA = cuda.shared.array((TPB, TPB), float32)",
        "   9  Skip: sB = cuda.shared.array((TPB, TPB), float32)",
        "  10  Simple: x, y = cuda.grid(2)",
        "  11  Simple: tx = cuda.threadIdx.x",
        "  12  Simple: ty = cuda.threadIdx.y",
        "  13  Simple: tmp = 0.0",
        "  14  ForRange k=0 site 0: i (row 4)",
        "    15  Simple: sA[ty, tx] = A[y, i * TPB + tx]",
        "    16  Simple: sB[ty, tx] = B[i * TPB + ty, x]",
        "    18  ForRange k=1 site 1: j (row 5)",
        "      19  Simple: tmp += sA[ty, j] * sB[j, tx]",
        "    20  Barrier syncthreads site 0",
        "  21  Simple: C[y, x] = tmp",
    ])
    assert lowered.loops == 2 and lowered.depth == 3


def test_what_cannot_be_lowered_is_an_operation_that_refuses_when_met(tmp_path):
    path = tmp_path / "returns_a_value.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
                    "    i, j = cuda.grid(2)\n"
                    "    if i >= C.shape[0]:\n"
                    "        return 1\n"
                    "    C[i, j] = A[i, 0] * B[0, j]\n")
    lowered = _lowered(path)
    guard = lowered.operations[1]
    (refused,) = guard.body
    assert isinstance(refused, Refused) and refused.line == 8
    assert not isinstance(refused, Exit)
    assert isinstance(lowered.operations[2], Simple)  # the rest is lowered as it is
    # each emitter says it where it meets it, with the line, the same words
    for emit in (lambda: vector_code(lowered), lambda: lockstep_code(lowered, "record")):
        with pytest.raises(EmulationUnsupported) as caught:
            emit()
        assert "a kernel returns nothing" in str(caught.value)
        assert caught.value.lines == (8,)
