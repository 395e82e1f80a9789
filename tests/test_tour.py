"""The Start here walk (kernels/tour.py): each step's run shows what its text
says, at the line it names (figures worked out from the kernels' loops)."""
import numpy as np
import pytest

from kernels import CATALOGUE, run, seed_tour

STEPS = seed_tour()


def _line(step) -> str:
    return CATALOGUE[step.request.kernel].source().splitlines()[step.line - 1]


@pytest.fixture(scope="module")
def results():
    ran = {}
    for step in STEPS:
        if step.request not in ran:
            ran[step.request] = run(step.request.with_(backend="cpu"))
    return [ran[step.request] for step in STEPS]


def test_every_step_has_the_verdict_it_promises_and_names_a_real_line(results):
    assert len(STEPS) == 6
    for step, result in zip(STEPS, results):
        assert result.verdict.passed == step.passes, step.title
        assert _line(step).strip(), step.title


def test_the_seed_steps_show_what_their_texts_say(results):
    one_block, tid_row, collisions, all_ones, canonical, grid_stride = zip(STEPS, results)
    # 1: one block of 1,024; every thread stores all 8 x 8 = 64 elements of C
    step, result = one_block
    assert step.request.grid == (1,) and step.request.block == (1024,)
    assert "for row in range(n)" in _line(step)
    np.testing.assert_array_equal(result.maps.stores_per_thread, 64)
    # 2: B has K = 64 rows; threads 0..63 read inside it, 64..1,023 past it
    step, result = tid_row
    assert "B[tid, col]" in _line(step) and step.map_name == "oob"
    assert (result.maps.oob_per_thread[:64] == 0).all()
    assert (result.maps.oob_per_thread[64:] > 0).all()
    # 3: every element stored by all 1,024 threads
    step, result = collisions
    assert "C[row, col] = my_sum" in _line(step) and step.map_name == "count"
    np.testing.assert_array_equal(result.maps.count, 1024)
    assert result.maps.min_writer.max() == 0 and result.maps.max_writer.min() == 1023
    # 4: 64 threads, no read outside B; all 64 elements wrong on random
    # inputs, all right on ones: the diagnosis says so
    step, result = all_ones
    assert step.request.block == (64,) and not result.maps.out_of_bounds
    assert result.verdict.errors.wrong == 64
    assert "all-ones-would-pass" in [d.rule for d in result.diagnoses]
    # the fixes: every element once; 4,096 elements over 1,024 threads: 4 each
    for step, result in (canonical, grid_stride):
        np.testing.assert_array_equal(result.maps.count, 1)
    assert "if row < C.shape[0]" in _line(canonical[0])
    assert grid_stride[1].maps.iterations == 4
    np.testing.assert_array_equal(grid_stride[1].maps.stores_per_thread, 4)
    assert "for mid in range(tid" in _line(grid_stride[0])


def test_the_seed_preset_chooses_the_seeds_kernel_with_its_launch():
    from kernels import PRESETS, RunRequest

    before = RunRequest(kernel="grid-stride", m=10, k=10, n=10, grid=(2,), block=(32,))
    case = PRESETS["seed"][1](before, 1)
    assert (case.kernel, case.shape, case.grid, case.block) == (
        "tid-rows", (128, 256, 128), (1,), (1024,))
    launch = PRESETS["seed-launch"][1](before, 1)
    assert (launch.kernel, launch.grid, launch.block) == ("grid-stride", (1,), (1024,))
