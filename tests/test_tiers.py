"""The two tiers of the CPU emulation give identical results, element by element.

The instant tier (numpy, ``derived/vector.py`` and ``backends/instant.py``)
and the compiled tier (numba, ``derived/lockstep.py``) are two code generators
of one derivation.  Every map, every per-site and per-warp figure, the
hazards, the verdict and C must be the same: for every built-in kernel, for
the kernels in tests/kernels, on ragged shapes and on multiples of the tile,
with and without hazards.
"""
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run

KERNELS = Path(__file__).parent / "kernels"


def _request(kernel, shape, grid, block):
    m, k, n = shape
    if kernel.endswith(".py"):
        return RunRequest(kernel=None, kernel_file=str(KERNELS / kernel), m=m, k=k, n=n,
                          grid=tuple(grid), block=tuple(block), backend="cpu")
    return RunRequest(kernel=kernel, m=m, k=k, n=n, grid=tuple(grid), block=tuple(block),
                      backend="cpu")


CASES = [
    # built-in kernels: ragged shapes, and multiples of the tile / block
    ("grid-stride", (37, 19, 53), (3,), (97,)),
    ("grid-stride", (64, 64, 64), (1,), (1024,)),
    ("grid-stride", (23, 7, 41), (3, 2), (32, 2)),
    ("grid-stride-colmajor", (29, 5, 31), (3,), (97,)),
    ("naive-2d", (37, 19, 53), (4, 3), (16, 16)),
    ("naive-2d", (64, 64, 64), (4, 4), (16, 16)),
    ("naive-2d", (23, 7, 41), (2, 3), (32, 8)),
    ("tiled", (20, 17, 18), (2, 2), (16, 16)),
    ("tiled", (32, 16, 32), (2, 2), (16, 16)),
    ("tiled", (33, 17, 65), (5, 3), (16, 16)),
    ("one-block-chunks", (13, 5, 11), (2,), (32,)),  # out of bounds, collisions
    ("one-block-chunks", (23, 7, 41), (1,), (96,)),
    ("tid-rows", (9, 4, 11), (1,), (12,)),  # collisions, reads out of bounds
    ("tid-rows", (6, 5, 4), (2,), (7,)),
    # tests/kernels: hazards and constructs
    ("doc_style_tiled.py", (33, 17, 19), (3, 5), (8, 8)),
    ("doc_style_tiled.py", (16, 24, 16), (2, 2), (8, 8)),
    ("local_and_count.py", (9, 12, 11), (2, 3), (8, 4)),
    ("shared_off_by_one.py", (5, 7, 16), (5,), (16,)),
    ("early_return.py", (20, 16, 20), (2, 2), (16, 16)),
    ("missing_barrier.py", (16, 16, 16), (1, 1), (16, 16)),
    ("transposed_tile.py", (32, 32, 32), (2, 2), (16, 16)),
    ("divergent_branch.py", (32, 8, 64), (2, 32), (32, 1)),
    ("ragged_loops.py", (13, 9, 11), (2, 3), (8, 3)),
    ("ragged_loops.py", (13, 9, 11), (1, 2), (16, 4)),
    ("store_then_add.py", (9, 7, 13), (2,), (40,)),
]


def _assert_same(compiled, instant):
    ours, theirs = instant.maps_arrays(), compiled.maps_arrays()
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert np.array_equal(ours[name], theirs[name], equal_nan=True), name
    assert np.array_equal(instant.c, compiled.c, equal_nan=True), "C"
    assert instant.verdict.word == compiled.verdict.word
    assert instant.verdict.reasons == compiled.verdict.reasons
    assert repr(instant.verdict.errors) == repr(compiled.verdict.errors)
    assert repr(instant.analysis) == repr(compiled.analysis)


@pytest.mark.parametrize("kernel,shape,grid,block", CASES)
def test_the_instant_tier_gives_the_compiled_tier_s_results(kernel, shape, grid, block):
    req = _request(kernel, shape, grid, block)
    compiled = run(req.with_(tier="compiled"))
    instant = run(req.with_(tier="instant"))
    assert "numpy lockstep" in instant.timings[1].method
    assert "numpy" not in compiled.timings[1].method
    _assert_same(compiled, instant)
