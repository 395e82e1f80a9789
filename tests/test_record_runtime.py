"""The compiled tier's recording runtime is a real module, linked per kernel.

``kernels/derived/record_runtime.py`` is plain Python that runs as it is; the
compiled tier binds its functions to each kernel's constants and compiles
them there (``link``), instead of pasting its text into every generated
module.  Its race test and the instant tier's are one semantics: they agree
on every shadow entry tried.
"""
import numpy as np
import pytest

from kernels.backends import instant
from kernels.derived import record_runtime, shadow
from kernels.derived.codegen import module_text
from kernels.derived.local_types import kernel_types
from kernels.sources.loader import _builtin_plan


def test_the_runtime_runs_as_plain_python():
    # An insertion sort of a row's first n entries, the rest untouched.
    a = np.array([[9, 9, 9, 9, 9], [5, 3, 4, 1, 7]], np.int64)
    record_runtime._tm_sort_row(a, 1, 4)
    assert a.tolist() == [[9, 9, 9, 9, 9], [1, 3, 4, 5, 7]]
    # A barrier at site 0 that 3 of block 1's 8 threads reach (the first
    # missing, thread 2), met twice by block 1 and once by block 2: 3 times,
    # in 2 blocks, the first kept (block 1: 3 arrived, 5 missing, thread 2).
    bar = np.zeros((1, 7), np.int64)
    bar[:, 2:] = -1
    record_runtime._tm_record_missed_barrier(bar, 0, 1, 8, 3, 2)
    record_runtime._tm_record_missed_barrier(bar, 0, 1, 8, 5, 0)
    record_runtime._tm_record_missed_barrier(bar, 0, 2, 8, 1, 0)
    assert bar[0].tolist() == [3, 2, 2, 1, 3, 5, 2]


def _random_row(rng, epoch):
    row = np.full(shadow.GLOBAL_SHADOW_COLUMNS, -1, np.int64)
    row[shadow.WRITE_EPOCH] = rng.choice([epoch, epoch - 1])
    row[shadow.WRITER] = rng.integers(0, 64)
    row[shadow.WRITER_SITE] = rng.integers(-4, 4)  # (below 0: an atomic's, kept)
    row[shadow.READ_EPOCH] = rng.choice([epoch, epoch - 1])
    row[shadow.READER] = rng.integers(0, 64)
    row[shadow.READER_SITE] = rng.integers(0, 4)
    row[shadow.SECOND_READER] = rng.integers(-1, 64)
    row[shadow.SECOND_READER_SITE] = rng.integers(0, 4)
    for column in (shadow.WRITER_SYNCWARPS, shadow.READER_SYNCWARPS,
                   shadow.SECOND_READER_SYNCWARPS):
        row[column] = rng.integers(0, 3)
    return row


@pytest.mark.parametrize("writer", [True, False])
def test_both_tiers_find_the_same_racing_entry(monkeypatch, writer):
    # The compiled tier's _tm_racing_entry (run here as Python, syncwarps kept) and
    # the instant tier's _racing_entry, on 3,000 random shadow entries and lanes:
    # the same entry met, or none, every time.
    monkeypatch.setattr(record_runtime, "_TM_WARP_SYNC", True)
    rng = np.random.default_rng(44)
    met = 0
    for _ in range(3000):
        epoch = 7
        row = _random_row(rng, epoch)
        lane, w = int(rng.integers(0, 64)), int(rng.integers(0, 3))
        compiled = record_runtime._tm_racing_entry(row[None, :], 0, lane, epoch, w, writer)
        vector = instant._racing_entry(row, lane, w, epoch, writer)
        assert (None if compiled[0] < 0 else (int(compiled[0]), int(compiled[1]))) == vector
        met += vector is not None
    assert 500 < met < 2900  # (both outcomes were tried)


def test_a_kernel_module_links_the_runtime_and_holds_none_of_its_text():
    plan = _builtin_plan("tiled")
    text, _ = module_text(plan, "cpu", "float32", kernel_types(plan, "float32", ()))
    assert "def _tm_flush_shared_request(" not in text.text
    assert "def _tm_check_shared_write(" not in text.text
    assert f"recording runtime {record_runtime.DIGEST}" in text.text
    assert "_tm_link_runtime(" in text.text


def test_link_compiles_every_runtime_function_for_the_kernels_constants():
    made = []

    def njit(**options):
        def compile_(function):
            made.append((function.__name__, options.get("inline"), options["cache"],
                         function.__globals__["_TM_SCRATCH"]))
            return function
        return compile_

    linked = record_runtime.link(njit, {"cache": True}, 7, True, lambda site: 8)
    assert set(linked) == {name for name, _ in record_runtime.RUNTIME}
    assert len(made) == len(record_runtime.RUNTIME) > 30
    # numba's cache off for them (one code file, many kernels' constants), and
    # the kernel's constants in their namespace, not the module's defaults
    assert all(cache is False and scratch == 7 for _, _, cache, scratch in made)
    assert record_runtime._TM_SCRATCH == 1
    inlined = {name for name, inline in record_runtime.RUNTIME if inline}
    assert {name for name, inline, _, _ in made if inline == "always"} == inlined
    # A linked function calls the other linked functions, in its own namespace.
    write = linked["_tm_check_shared_write"]
    assert write.__globals__["_tm_racing_entry"] is linked["_tm_racing_entry"]
