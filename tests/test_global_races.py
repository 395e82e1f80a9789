"""Races in global memory (issue 22, point 4): two threads access one element of a global
array, at least one a plain write (or a plain read and an atomic update), with nothing to
order them: two blocks, or one block's threads in one barrier interval.  Each figure is
worked out by hand; both CPU tiers find the same, and the simulator's run (analysed in
lockstep) too."""
import numpy as np
import pytest

from kernels import run
from kernels.analyses.hazards import global_races
from kernels.derived.transform import race_checked_arrays
from kernels.records import allocate_lockstep_records
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

# Each thread moves its right neighbour's value into its own element, in place.
SHIFT = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[256]"}


@cuda.jit
def shift(x):
    i = cuda.grid(1)
    if i < x.size - 1:
        x[i] = x[i + 1]
'''

# The same, every read before the barrier and every write after it.
SHIFT_SYNCED = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[256]"}


@cuda.jit
def shift(x):
    i = cuda.grid(1)
    v = 0.0
    if i < x.size - 1:
        v = x[i + 1]
    cuda.syncthreads()
    if i < x.size - 1:
        x[i] = v
'''

# Every thread counts itself into one counter and reads it back at once.
COUNTER = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[128]", "count": "int32[1]", "seen": "int32[128]"}


@cuda.jit
def counter(x, count, seen):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(count, 0, 1)
        seen[i] = count[0]
'''

# Each block's sum into its own slot (thread 0 only), or, wrongly, all into slot 0.
BLOCK_SUMS = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[256]", "sums": "float32[4]", "out": "float32[256]"}


@cuda.jit
def block_sums(x, sums, out):
    i = cuda.grid(1)
    out[i] = x[i] * 2.0
    if cuda.threadIdx.x == 0:
        sums[cuda.blockIdx.x] = x[i]
'''

# Thread 0 zeroes the total, then every thread adds to it: nothing orders the
# zeroing before the other threads' atomic updates.
ZERO_THEN_ADD = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[256]", "total": "float32[1]", "out": "float32[256]"}


@cuda.jit
def zero_then_add(x, total, out):
    i = cuda.grid(1)
    if i == 0:
        total[0] = 0.0
    cuda.atomic.add(total, 0, x[i])
    out[i] = x[i]
'''

HISTOGRAM = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[512]", "bins": "int32[16]"}


@cuda.jit
def histogram(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        b = min(int((x[i] + 1.0) * 8.0), 15)
        cuda.atomic.add(bins, b, 1)
'''


@pytest.fixture
def files(tmp_path):
    for name, text in (("shift.py", SHIFT), ("synced.py", SHIFT_SYNCED),
                       ("counter.py", COUNTER), ("sums.py", BLOCK_SUMS),
                       ("histogram.py", HISTOGRAM), ("zero_then_add.py", ZERO_THEN_ADD)):
        (tmp_path / name).write_text(text)
    (tmp_path / "sums_wrong.py").write_text(
        BLOCK_SUMS.replace("sums[cuda.blockIdx.x] = x[i]", "sums[0] = x[i]"))
    return tmp_path


def races_of(path, tier="compiled", backend="cpu", grid=(4,), block=(64,)):
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), grid=grid,
                                          block=block, backend=backend, tier=tier, repeats=1),
                               as_it_is_unless_matmul=True)
    result = run(request)
    return result, result.analysis.global_races


def pair(races):
    a, b = races.first
    return ((a.thread, a.access.kind, a.access.line), (b.thread, b.access.kind, b.access.line))


@pytest.mark.parametrize("tier", ["compiled", "instant"])
def test_an_unsynchronised_shift_races_on_every_element_it_moves(files, tier):
    result, races = races_of(files / "shift.py", tier)
    # x[1] .. x[254]: each read by thread e - 1 and written by thread e; x[0] is
    # only written, x[255] only read.  Three of them are read and written across a
    # block edge (x[64], x[128], x[192]).
    assert (races.count, races.between_blocks) == (254, 3)
    assert (races.array, races.index, races.kind) == ("x", (1,), "within a block")
    assert pair(races) == ((0, "load", 10), (1, "store", 10))
    assert not result.verdict.passed
    assert "254 elements of global memory raced on" in "; ".join(result.verdict.reasons)
    assert result.summary()["global_races"]["elements"] == 254


@pytest.mark.parametrize("tier", ["compiled", "instant"])
def test_a_barrier_orders_a_block_but_not_two_blocks(files, tier):
    _, races = races_of(files / "synced.py", tier)
    # the barrier orders each block's reads before its writes; only the elements
    # read by one block's last thread and written by the next block's first race
    assert (races.count, races.between_blocks) == (3, 3)
    assert (races.index, races.kind) == ((64,), "between blocks")
    assert pair(races) == ((63, "load", 11), (64, "store", 14))
    # one block of 256 threads: the barrier orders every pair, no race
    _, one_block = races_of(files / "synced.py", tier, grid=(1,), block=(256,))
    assert one_block.count == 0 and one_block.first is None


@pytest.mark.parametrize("tier", ["compiled", "instant"])
def test_a_plain_read_of_an_atomic_counter_races(files, tier):
    _, races = races_of(files / "counter.py", tier, grid=(2,))
    # count[0]: updated atomically by all 128 threads and read by all of them
    assert (races.count, races.between_blocks, races.array, races.index) == \
        (1, 1, "count", (0,))
    kinds = {access.access.kind for access in races.first}
    assert kinds == {"atomic", "load"}


@pytest.mark.parametrize("tier", ["compiled", "instant"])
def test_one_slot_per_block_is_no_race_and_one_slot_for_all_is(files, tier):
    _, races = races_of(files / "sums.py", tier)
    assert races.count == 0
    _, wrong = races_of(files / "sums_wrong.py", tier)
    # sums[0] stored by thread 0 of each of the 4 blocks
    assert (wrong.count, wrong.between_blocks, wrong.array, wrong.index) == \
        (1, 1, "sums", (0,))
    assert pair(wrong) == ((0, "store", 11), (192, "store", 11))


@pytest.mark.parametrize("tier", ["compiled", "instant"])
def test_a_plain_write_before_other_threads_atomic_updates_races(files, tier):
    # one block: thread 0's store, then thread 1's atomic add in the same interval
    _, races = races_of(files / "zero_then_add.py", tier, grid=(1,), block=(256,))
    assert (races.count, races.between_blocks, races.array, races.kind) == \
        (1, 0, "total", "within a block")
    assert pair(races) == ((0, "store", 10), (1, "atomic", 11))
    # the atomic updates do not race with each other, and a read after a
    # barrier is ordered after them (total is checked: updated and read)
    (files / "adds_only.py").write_text(ZERO_THEN_ADD.replace(
        "    if i == 0:\n        total[0] = 0.0\n", "").replace(
        "    out[i] = x[i]\n", "    cuda.syncthreads()\n    out[i] = total[0]\n"))
    _, alone = races_of(files / "adds_only.py", tier, grid=(1,), block=(256,))
    assert alone.count == 0
    # and without the barrier, the reads race with the other threads' updates
    (files / "no_barrier.py").write_text((files / "adds_only.py").read_text().replace(
        "    cuda.syncthreads()\n", ""))
    _, raced = races_of(files / "no_barrier.py", tier, grid=(1,), block=(256,))
    assert (raced.count, raced.array) == (1, "total")


def test_what_is_checked_and_what_is_not(files):
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    def checked(name: str) -> tuple[str, ...]:
        module = read_module(files / name)
        return race_checked_arrays(make_plan(module, module.kernel(None), matmul=False))

    # in place; read and updated atomically; a second array stored into; the
    # output only stored into (its collisions are its writer maps'); atomics only
    assert checked("shift.py") == ("x",)
    assert checked("counter.py") == ("count",)
    assert checked("sums.py") == ("sums",)
    assert checked("histogram.py") == ()
    # a matmul-convention run keeps its maps only (C += ... read and stored)
    module = read_module(files / "sums.py")
    assert race_checked_arrays(make_plan(module, module.kernel(None), matmul=True)) == ()


def test_the_tiers_and_the_simulator_agree_and_a_rerun_gives_the_same(files):
    # (such a kernel runs on one worker of the compiled tier: its warps see each
    # other's writes; the ranges' min/max merge keeps it order-free on several)
    for name in ("shift.py", "synced.py", "sums_wrong.py"):
        found = [races_of(files / name, tier, backend)[1].summary()
                 for backend, tier in (("cpu", "compiled"), ("cpu", "compiled"),
                                       ("cpu", "instant"), ("sim", "auto"))]
        assert all(f == found[0] for f in found[1:]), (name, found)


def test_an_array_too_large_to_check_is_named_unchecked():
    lockstep = allocate_lockstep_records(1, 0, 0, 1)
    lockstep["_tm_granges_x"] = np.empty((0, 7), np.int64)
    races = global_races(lockstep, ("x",), (), ("x",), {"x": (10,)}, (1, 1), (32, 1))
    assert races.count == 0 and races.unchecked == ("x",)
