"""Where the out-of-bounds writes to C landed, in a margin OOB_MARGIN (W = 4)
elements wide around it (issue 20, point 5): a write at row r, column c
outside C (M x N) is counted at (clamp(r, -W, M + W - 1), clamp(c, -W,
N + W - 1)), in four strips (top and bottom W x (N + 2W), left and right
M x W).  Only writes (stores and atomic updates) to C are counted; on both
tiers of the CPU emulation, with its workers' records merged, and in numba's
CUDA simulator; the figures below are worked out by hand.
"""
from pathlib import Path

import numpy as np
import pytest

import kernels
from kernels import OOB_MARGIN, RunRequest, margin_frame, run
from kernels.records import (
    MARGIN,
    AccessMaps,
    allocate_records,
    margin_cells,
    margin_record_shape,
    read_back,
)
from kernels.stow import Stowage

W = 4
KERNEL_FILE = str(Path(__file__).parent / "kernels" / "margin_writes.py")
TIERS = ("instant", "compiled")
SIDES = ("top", "bottom", "left", "right")


def chunks(m=10, k=3, n=7, block=(16,), **kw) -> RunRequest:
    return RunRequest(kernel="one-block-chunks", m=m, k=k, n=n, grid=(1,), block=block, **kw)


def margin_kernel(name, grid=(2, 2), block=(8, 8), **kw) -> RunRequest:
    return RunRequest(kernel=name, kernel_file=KERNEL_FILE, m=5, k=2, n=6, grid=grid,
                      block=block, **kw)


def empty(m, n):
    return (np.zeros((W, n + 2 * W), np.int32), np.zeros((W, n + 2 * W), np.int32),
            np.zeros((m, W), np.int32), np.zeros((m, W), np.int32))


# one-block-chunks at 10 x 3 x 7 on one block of 16 threads: chunk = ceil(70 /
# 16) = 5, thread t writes flat elements 5t .. 5t + 4 (row e // 7, column
# e % 7).  Threads 14 and 15 write 70 .. 79: 70 .. 76 are row 10 (= M),
# columns 0 .. 6, and 77 .. 79 row 11, columns 0 .. 2: bottom strip rows 0
# and 1, frame columns c + W.
def chunks_10_3_7():
    top, bottom, left, right = empty(10, 7)
    bottom[0, W:W + 7] = 1
    bottom[1, W:W + 3] = 1
    return top, bottom, left, right


# The same kernel at 3 x 2 x 5 on 64 threads: chunk = ceil(15 / 64) = 1, so
# threads 15 .. 63 write elements 15 .. 63, rows 3 .. 12.  Rows 3 .. 6 are
# the bottom strip's rows 0 .. 3 (M .. M + W - 1); rows 7 .. 12 are clamped
# to row 6: its strip row 3 takes elements 30 .. 63, 7 in each of columns
# 0 .. 3 (30, 35, .., 60 for column 0) and 6 in column 4 (34 .. 59).
def chunks_3_2_5():
    top, bottom, left, right = empty(3, 5)
    bottom[0:3, W:W + 5] = 1
    bottom[3, W:W + 5] = (7, 7, 7, 7, 6)
    return top, bottom, left, right


# or_guard at 5 x 2 x 6, grid 2 x 2 of 8 x 8 (x, y = 0 .. 15): it writes
# C[x, y] where x < 5 or y < 6.
# * x < 5, y = 6 .. 15: the right strip, row x: columns 6, 7, 8 once each
#   (strip columns 0 .. 2), 9 .. 15 clamped to 9 (N + W - 1): 7 in column 3;
# * x = 5 .. 15, y < 6: the bottom strip, column y + W: rows 5 .. 8 (strip
#   rows 0 .. 3) once each, rows 9 .. 15 clamped to 8: 8 in strip row 3;
# * both outside: never (the "or" needs one inside), so the corners stay 0.
def or_guard():
    top, bottom, left, right = empty(5, 6)
    right[:, :] = (1, 1, 1, 7)
    bottom[0:3, W:W + 6] = 1
    bottom[3, W:W + 6] = 8
    return top, bottom, left, right


# shifted at 5 x 2 x 6, grid 2 x 2 of 8 x 8: C[x - 1, y - 1] for every
# thread, rows r = -1 .. 14 and columns c = -1 .. 14.  Columns: -1 is frame
# column 3; 0 .. 5 inside; 6 .. 9 frame columns 10 .. 13; 10 .. 14 clamped
# to 9 (frame column 13, which so takes 6 columns).  Rows likewise: -1 is
# top strip row 3; 5 .. 8 bottom strip rows 0 .. 3; 9 .. 14 clamped to 8
# (bottom strip row 3 takes 7 rows).  Left strip: column -1 of rows 0 .. 4;
# right strip: columns 6, 7, 8 and 6 in column 3.  All four corners.
def shifted():
    top, bottom, left, right = empty(5, 6)
    line = np.array([0, 0, 0] + [1] * 10 + [6], np.int32)  # one row of C's rows r
    top[3] = line
    bottom[0:3] = line
    bottom[3] = 7 * line
    left[:, 3] = 1
    right[:, :] = (1, 1, 1, 6)
    return top, bottom, left, right


# flat_both_ends at 5 x 2 x 6 (C raveled, 30 elements) on one block of 128:
# thread t adds at e = t - 40, -40 .. 87: row e // 6, column e % 6.
# * e = -40 .. -1 (40): rows -7 .. -1.  -1 .. -24 are rows -1 .. -4, once
#   in each column; rows -5 and -6 (-25 .. -36) are clamped to -4, once in
#   each column; -40 .. -37 are row -7 (floor division), columns 2 .. 5,
#   clamped to -4 too: top strip row 0 (row -4) holds 3, 3, 4, 4, 4, 4.
# * e = 30 .. 87 (58): rows 5 .. 14.  30 .. 53 are rows 5 .. 8 (strip rows
#   0 .. 3); 54 .. 87 are clamped to row 8: 54 .. 83 five times in each
#   column, 84 .. 87 once in columns 0 .. 3: strip row 3 holds 7, 7, 7, 7,
#   6, 6.  A flat index never lands left or right of C.
def flat_both_ends():
    top, bottom, left, right = empty(5, 6)
    top[0, W:W + 6] = (3, 3, 4, 4, 4, 4)
    top[1:4, W:W + 6] = 1
    bottom[0:3, W:W + 6] = 1
    bottom[3, W:W + 6] = (7, 7, 7, 7, 6, 6)
    return top, bottom, left, right


CASES = {
    "chunks-10x3x7": (chunks, {}, (10, 7), chunks_10_3_7, 10),
    "chunks-3x2x5": (chunks, {"m": 3, "k": 2, "n": 5, "block": (64,)}, (3, 5), chunks_3_2_5,
                     49),
    "or-guard": (margin_kernel, {"name": "or_guard"}, (5, 6), or_guard, 116),
    "shifted": (margin_kernel, {"name": "shifted"}, (5, 6), shifted, 226),
    "flat-both-ends": (margin_kernel, {"name": "flat_both_ends", "grid": (1,), "block": (128,)},
                       (5, 6), flat_both_ends, 98),
}


def c_writes_out_of_bounds(maps: AccessMaps) -> int:
    return sum(o.count for o in maps.out_of_bounds if o.role == "C" and o.direction == "write")


def _check(result, shape_c, expected, total):
    maps = result.maps
    m, n = shape_c
    for side, got, want in zip(SIDES, maps.oob_margin, expected()):
        assert got.dtype == np.int32, side
        np.testing.assert_array_equal(got, want, err_msg=side)
    assert [s.shape for s in maps.oob_margin] == [(W, n + 2 * W)] * 2 + [(m, W)] * 2
    assert maps.oob_margin_total == total == c_writes_out_of_bounds(maps)
    frame = margin_frame(maps, shape_c)
    assert frame.shape == (m + 2 * W, n + 2 * W) and frame.dtype == np.int32
    assert not frame[W:m + W, W:n + W].any()  # C itself
    assert int(frame.sum()) == total
    arrays = result.maps_arrays()
    for side, strip in zip(SIDES, maps.oob_margin):
        np.testing.assert_array_equal(arrays[f"oob_margin_{side}"], strip)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("case", list(CASES))
def test_each_tier_counts_the_writes_where_they_landed(case, tier):
    make, kw, shape_c, expected, total = CASES[case]
    result = run(make(backend="cpu", tier=tier, **kw))
    assert result.tier == tier
    _check(result, shape_c, expected, total)


def test_reads_and_other_arrays_are_left_out():
    # or_guard also reads A and B out of bounds: those stay in the summaries only.
    result = run(margin_kernel("or_guard", backend="cpu", tier="compiled"))
    roles = {o.role for o in result.maps.out_of_bounds}
    assert roles == {"A", "B", "C"}
    assert result.maps.oob_total > result.maps.oob_margin_total == 116


def test_the_margin_is_summed_over_the_emulations_workers(monkeypatch):
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "2")
    result = run(margin_kernel("shifted", backend="cpu", tier="compiled"))
    assert any("2 cores" in t.method for t in result.timings)
    _check(result, (5, 6), shifted, 226)


@pytest.mark.sim
@pytest.mark.parametrize("case", ["chunks-10x3x7", "or-guard", "flat-both-ends"])
def test_the_simulator_agrees_with_both_tiers(case):
    make, kw, shape_c, expected, total = CASES[case]
    sim = run(make(backend="sim", **kw))
    assert sim.backend == "sim"
    _check(sim, shape_c, expected, total)
    for tier in TIERS:
        cpu = run(make(backend="cpu", tier=tier, **kw))
        for side, a, b in zip(SIDES, cpu.maps.oob_margin, sim.maps.oob_margin):
            np.testing.assert_array_equal(a, b, err_msg=f"{tier} {side}")


def test_margin_cells_and_the_record_layout():
    # 3 x 5: rows of N + 2W = 13; top, bottom, then left and right flat.
    shape = margin_record_shape((3, 5))
    assert shape == (2 * W + 2, 13)  # 24 side cells need 2 more rows of 13
    rows = np.array([-1, -9, 3, 99, 0, 2, 1, -2])
    cols = np.array([-4, 2, 8, 99, -1, 5, -9, 30])
    a, b = margin_cells(shape, 3, rows, cols)
    # (-1, -4): top row 3, col 0; (-9, 2) -> (-4, 2): top row 0, col 6;
    # (3, 8): bottom row 0, col 12; (99, 99) -> (6, 8): bottom row 3, col 12;
    # (0, -1): left row 0 col 3 = flat 104 + 3; (2, 5): right row 2 col 0 =
    # flat 104 + 12 + 8; (1, -9) -> (1, -4): left row 1 col 0 = flat 108;
    # (-2, 30) -> (-2, 8): top row 2, col 12.
    flat = [104 + 3, 104 + 12 + 8, 108]
    assert list(zip(a, b)) == [(3, 0), (0, 6), (4, 12), (7, 12)] + \
        [divmod(p, 13) for p in flat] + [(2, 12)]


def test_read_back_gives_the_strips_and_the_frame_places_them():
    raw = allocate_records((3, 5), ((3, 2), (2, 5)), 3, 8)
    assert raw[MARGIN].shape == margin_record_shape((3, 5)) and raw[MARGIN].dtype == np.int32
    record = raw[MARGIN]
    record[:W] = 1          # top
    record[W:2 * W] = 2     # bottom
    sides = record[2 * W:].reshape(-1)
    sides[:3 * W] = 3       # left
    sides[3 * W:6 * W] = 4  # right
    slots = (("A", "A", 2), ("B", "B", 2), ("C", "C", 2))
    maps = read_back(raw, ((3, 2), (2, 5), (3, 5)), slots)
    top, bottom, left, right = maps.oob_margin
    assert (top == 1).all() and (bottom == 2).all() and (left == 3).all() and (right == 4).all()
    frame = margin_frame(maps, (3, 5))
    expected = np.zeros((11, 13), np.int32)
    expected[:W] = 1
    expected[3 + W:] = 2
    expected[W:3 + W, :W] = 3
    expected[W:3 + W, 5 + W:] = 4
    np.testing.assert_array_equal(frame, expected)


def test_maps_made_without_a_margin_get_zero_strips():
    count = np.zeros((3, 5), np.int32)
    maps = AccessMaps(count, count, count, count, count, np.zeros(4), np.zeros(4),
                      (np.zeros((3, 2)), np.zeros((2, 5))), ())
    for side, got, want in zip(SIDES, maps.oob_margin, empty(3, 5)):
        np.testing.assert_array_equal(got, want, err_msg=side)
        assert got.dtype == np.int32
    assert maps.oob_margin_total == 0
    assert not margin_frame(maps, (3, 5)).any()


def test_the_public_face_names_the_margin():
    assert OOB_MARGIN == W
    assert {"OOB_MARGIN", "margin_frame"} <= set(kernels.__all__)
    assert kernels.margin_frame is margin_frame


def test_the_margin_survives_stowing_and_the_maps_file(tmp_path):
    from kernels.maps_file import load_maps, save_maps

    result = run(margin_kernel("shifted", backend="cpu", tier="instant"))
    expected = [s.copy() for s in result.maps.oob_margin]
    arrays = result.maps_arrays()
    stowage = Stowage(tmp_path)
    try:
        light = stowage.stow(result)
        assert light.stowed is not None
        for side, got, want in zip(SIDES, light.maps.oob_margin, expected):
            np.testing.assert_array_equal(got, want, err_msg=f"stowed {side}")
        back = stowage.unstow(light)
        assert back.stowed is None
        for side, got, want in zip(SIDES, back.maps.oob_margin, expected):
            np.testing.assert_array_equal(got, want, err_msg=f"unstowed {side}")
        np.testing.assert_array_equal(margin_frame(back.maps, (5, 6)),
                                      margin_frame(result.maps, (5, 6)))
        again = back.maps_arrays()
        for side in SIDES:
            np.testing.assert_array_equal(again[f"oob_margin_{side}"],
                                          arrays[f"oob_margin_{side}"])
    finally:
        stowage.close()
    # and maps.npz keeps the four strips, equal
    layout = save_maps(tmp_path / "maps.npz", arrays, result.request.dtype)
    loaded = load_maps(tmp_path / "maps.npz", layout)
    with np.load(tmp_path / "maps.npz") as archive:
        for side, want in zip(SIDES, expected):
            np.testing.assert_array_equal(loaded[f"oob_margin_{side}"], want)
            assert loaded[f"oob_margin_{side}"].dtype == np.int32
            np.testing.assert_array_equal(archive[f"oob_margin_{side}"], want)


@pytest.mark.parametrize("name", ["margin_writes:or_guard", "margin_writes:flat_both_ends",
                                  "one-block-chunks"])
def test_the_recording_kernel_still_compiles_for_a_gpu(name):
    # The margin's atomic add (a 32-bit one on the record) is in the PTX.
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.loader import load_plan

    if ":" in name:
        request = margin_kernel(name.split(":")[1], backend="cpu")
    else:
        request = chunks(backend="cpu")
    plan = load_plan(request)
    gen = load_module(plan, "cuda", "float32")
    ptx = compile_ptx_for(plan, gen.function(f"{plan.name}__tm_record"), "float32", True,
                          cc=(9, 0))
    assert ".entry" in ptx
    assert "atom.global.add.u32" in ptx or "red.global.add.u32" in ptx \
        or "atom.global.add.s32" in ptx or "red.global.add.s32" in ptx


def test_one_cell_of_the_margin_is_read_from_its_strip_as_the_frame_has_it():
    from kernels import RunRequest, margin_at, margin_frame, run

    result = run(RunRequest(kernel="one-block-chunks", m=3, k=2, n=5, grid=(1,), block=(64,),
                            backend="cpu"))
    shape = result.maps.count.shape
    frame = margin_frame(result.maps, shape)
    assert frame.sum() == 49
    for row in range(-4, shape[0] + 4):
        for col in range(-4, shape[1] + 4):
            assert margin_at(result.maps, shape, row, col) == frame[row + 4, col + 4]
