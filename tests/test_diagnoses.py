"""Diagnoses (issue 21): a rule fires only where its source pattern and the
run's evidence both hold, and says the cause word for word in the kernel's
names and the run's numbers (worked out by hand in each test)."""
import json
from pathlib import Path

import pytest

from kernels import Diagnosis, RunRequest, run

KERNELS = Path(__file__).parent / "kernels"


def _run(file: str, kernel: str, shape, grid, block):
    m, k, n = shape
    return run(RunRequest(kernel=kernel, kernel_file=str(KERNELS / file), m=m, k=k, n=n,
                          grid=grid, block=block, backend="cpu"))


def test_an_and_guard_is_named_with_its_first_thread_and_the_or_that_fixes_it():
    # C is 33 x 19; 5 x 3 blocks of 8 x 8 threads: x (rows) 0..39, y (columns) 0..23.
    # Past `if x >= 33 and y >= 19: return` go 7 x 19 threads with x >= 33 and
    # 33 x 5 with y >= 19: 133 + 165 = 298 stores outside C.  The lowest global
    # id among them: block (4, 0) (blocks 0-3 hold x < 32, y < 8), thread
    # (1, 0): x = 33, y = 0, global 4 x 64 + 1 = 257.
    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    # (C is right all the same: the emulation skips the stores outside it)
    assert result.verdict.reasons == (
        "298 out-of-bounds writes of C (first: thread 257 at [33, 0])",
        "every element of C is within its bound of the reference all the same: the FAIL "
        "comes from the out-of-bounds write check, not from its values, which come out right "
        "here because out-of-bounds writes are skipped in the emulation; on a GPU they need "
        "not")
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "and-guard", (29,),
        "the guard at line 29 returns only when `x >= C.shape[0]` and `y >= C.shape[1]` both "
        "hold, so a thread with one coordinate inside C and the other outside goes on and "
        "stores outside C (33 x 19)",
        "298 out-of-bounds writes of C; the first by block (4, 0), thread (1, 0) (global 257) "
        "at [33, 0]",
        "line 29: `if x >= C.shape[0] or y >= C.shape[1]:` (return when any coordinate is out "
        "of range)")
    source_line = (KERNELS / "and_guard.py").read_text().splitlines()[28]
    assert source_line.strip() == "if x >= C.shape[0] and y >= C.shape[1]:"


def test_work_indexed_by_thread_alone_names_the_blocks_that_repeat_it():
    # 40 x 30 = 1,200 elements; range(tx, C.size, 1024) with tx 0..255 stores
    # elements 0..255 and 1,024..1,199 (tx < 176): 432 elements, each by the
    # same thread of all 4 blocks; the first, [0, 0], by blocks 0 and 3.
    result = _run("thread_index_only.py", "matmul_1024", (40, 8, 30), (4,), (256,))
    assert "768 of 1,200 elements of C never written" in result.verdict.reasons
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "thread-index-only", (17,),
        "C[row, col] at line 17 is indexed from cuda.threadIdx but never cuda.blockIdx, so "
        "each of the 4 blocks computes the same elements as block 0",
        "432 elements of C written by threads of more than one block; the first, [0, 0], by "
        "blocks (0, 0) and (3, 0)",
        "index with the global thread id, `cuda.grid(1)` (blockIdx * blockDim + threadIdx), "
        "and share the work among the whole grid's threads, `cuda.gridsize(1)`, not the "
        "block's")


def test_the_builtin_chunked_kernel_on_two_blocks_is_diagnosed_twice():
    # 40 x 30 = 1,200 elements in chunks of ceil(1,200 / 256) = 5: 256 x 5 =
    # 1,280, so threads 240-255 of each block store elements 1,200-1,279, rows
    # 40-42 of C: 80 per block, 160 in all; the first, element 1,200 = [40, 0],
    # by thread 240 of block 0.  Both blocks store every element of C.
    result = run(RunRequest(kernel="one-block-chunks", m=40, k=8, n=30, grid=(2,),
                            block=(256,), backend="cpu"))
    chunks, blocks = result.diagnoses
    assert chunks == Diagnosis(
        "unguarded-chunk-end", (18,),
        "each thread's loop at line 18 covers `chunk` = 5 elements from `start`, rounded up, "
        "and nothing stops it at the end of C: 256 threads x 5 = 1,280 elements, past its "
        "1,200",
        "160 out-of-bounds writes of C; the first by block (0, 0), thread (240, 0) (global "
        "240) at [40, 0]",
        "line 18: `for mid in range(start, min(start + chunk, C.size)):`")
    assert blocks.rule == "thread-index-only" and blocks.evidence.startswith(
        "1,200 elements of C written by threads of more than one block")


@pytest.mark.parametrize("file, kernel, shape, grid, block, expected", [
    # the `and` return is there, but a correct guard keeps every store inside C
    # (an early return with no barrier after it, too): only its B read
    # transposed is named (its reads of B skip some k: wrong on ones as well)
    ("and_guard_inner_guard.py", "guarded_twice", (33, 17, 19), (5, 3), (8, 8),
     ["crossed-index"]),
    # blockDim chunks placed by blockIdx: no block repeats another's elements;
    # only its wrong column of B is named (and all-ones inputs would hide it)
    ("block_chunks.py", "block_chunks", (40, 8, 30), (5,), (256,),
     ["crossed-index", "all-ones-would-pass"]),
])
def test_near_misses_that_fail_for_another_reason_get_no_diagnosis(file, kernel, shape, grid,
                                                                    block, expected):
    result = _run(file, kernel, shape, grid, block)
    assert not result.verdict.passed  # (they fail: the rules had a chance to fire)
    assert [d.rule for d in result.diagnoses] == expected


def test_the_pattern_without_its_evidence_stays_silent():
    # threadIdx alone on one block of 1,024 threads: right, and nothing to diagnose
    result = _run("thread_index_only.py", "matmul_1024", (40, 8, 30), (1,), (1024,))
    assert result.verdict.passed and result.diagnoses == ()


@pytest.mark.parametrize("kernel, shape, grid, block", [
    ("grid-stride", (37, 11, 29), (3,), (64,)),
    ("grid-stride-colmajor", (37, 11, 29), (3,), (64,)),
    ("naive-2d", (37, 11, 29), (3, 5), (16, 8)),
    ("tiled", (37, 11, 29), (2, 3), (16, 16)),
])
def test_no_diagnosis_on_the_correct_builtin_kernels(kernel, shape, grid, block):
    m, k, n = shape
    result = run(RunRequest(kernel=kernel, m=m, k=k, n=n, grid=grid, block=block,
                            backend="cpu"))
    assert result.verdict.passed and result.diagnoses == ()


@pytest.mark.parametrize("kernel, grid, block", [
    ("naive-2d", (1, 1), (8, 8)),  # a launch that does not cover C
    ("tiled", (1,), (1024,)),  # a 1-D launch of a 2-D tiled kernel
    ("tiled", (2, 2), (16, 16)),
])
def test_no_diagnosis_where_a_correct_builtin_fails_for_its_launch(kernel, grid, block):
    # (no rule covers a launch too small for a one-element-per-thread kernel:
    # its findings stay as they were, and no rule guesses)
    result = run(RunRequest(kernel=kernel, m=100, k=37, n=90, grid=grid, block=block,
                            backend="cpu"))
    assert not result.verdict.passed and result.diagnoses == ()


def test_diagnoses_reach_result_json_the_summary_and_the_check_report(tmp_path, capsys):
    from kernels.cli import main

    kernel = str(KERNELS / "thread_index_only.py")
    main(["run", "--kernel-file", kernel, "--shape", "40x8x30", "--grid", "4", "--block", "256",
          "--backend", "cpu", "--out", str(tmp_path / "run")])
    printed = capsys.readouterr().out
    assert ("  why (thread-index-only): line 17: C[row, col] at line 17 is indexed from "
            "cuda.threadIdx but never cuda.blockIdx") in printed
    assert "    fix: index with the global thread id" in printed
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert [d["rule"] for d in saved["diagnoses"]] == ["thread-index-only"]
    assert saved["diagnoses"][0]["lines"] == [17]
    assert set(saved["diagnoses"][0]) == {"rule", "lines", "message", "evidence", "fix"}

    main(["check", kernel, "--shapes", "40x8x30", "--launches", "4:256",
          "--out", str(tmp_path / "check")])
    capsys.readouterr()
    csv_text = (tmp_path / "check" / "report.csv").read_text()
    assert "diagnoses" in csv_text.splitlines()[0].split(",")
    assert "line 17: C[row, col] at line 17 is indexed from cuda.threadIdx" in csv_text
    assert "why:" in (tmp_path / "check" / "report.html").read_text()


def test_the_python_api_and_the_source_findings_put_the_cause_first():
    from kernels import line_findings
    from kernels.live import ThreadMapResult

    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    found = [f for f in line_findings(result) if f.line == 29]
    assert found and found[0].kind == "cause" and found[0].fault
    assert "Fix: line 29: `if x >= C.shape[0] or y >= C.shape[1]:`" in found[0].text
    wrapped = ThreadMapResult(result, str(KERNELS / "and_guard.py"))
    assert wrapped.diagnoses == result.diagnoses and wrapped.diagnoses[0].rule == "and-guard"


def test_the_app_lists_the_cause_first_on_the_source_page_and_beside_the_verdict(qtbot):
    from app.models.session import Session
    from app.views.maps_view import MapsView

    result = _run("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8))
    session = Session()
    view = MapsView(session)
    qtbot.addWidget(view)
    try:
        session.add_result(result)
        first = view.source_view.list.item(0).text()
        assert first.startswith("line 29, cause: the guard at line 29 returns only when")
        assert "Fix: line 29: `if x >= C.shape[0] or y >= C.shape[1]:`" in first
        row = view.source_view.row_of_line(29)
        assert view.source_view.table.item(row, 0).text() == "29!"
        assert "<b>why</b>, line 29: the guard at line 29 returns only when" in \
            view.verdict_label.text()
    finally:
        session.close()


def test_the_failing_case_that_hunt_finds_carries_its_diagnosis():
    from kernels.search import hunt

    # Its smallest failing case: 1x1x1 on 4 blocks of 64, the one element of C
    # stored by thread 0 of each block.
    report = hunt(RunRequest(kernel="matmul_1024",
                             kernel_file=str(KERNELS / "thread_index_only.py"), backend="cpu"),
                  budget=120)
    assert report.failing is not None and report.failing.shape == (1, 1, 1)
    assert (report.failing.grid, report.failing.block) == ((4,), (64,))
    assert [d.rule for d in report.diagnoses] == ["thread-index-only"]
    assert ("\n  why (thread-index-only): line 17: C[row, col] at line 17 is indexed from "
            "cuda.threadIdx but never cuda.blockIdx, so each of the 4 blocks computes the same "
            "elements as block 0\n    evidence: 1 element of C written by threads of more than "
            "one block; the first, [0, 0], by blocks (0, 0) and (3, 0)") in report.summary()
    assert report.to_json()["diagnoses"][0]["rule"] == "thread-index-only"


def test_a_store_guard_joined_with_or_is_named_and_its_and_given():
    # C 20 x 12, 2 x 2 blocks of 16 x 16: x (rows) and y (columns) 0..31.  A
    # thread stores when x < 20 or y < 12: x < 20 and y >= 12, 20 x 20 = 400,
    # and x >= 20 and y < 12, 12 x 12 = 144: 544 stores outside C.  The lowest
    # global id among them: block (0, 0), thread (0, 12), y = 12: 12 x 16 = 192.
    result = _run("margin_writes.py", "or_guard", (20, 5, 12), (2, 2), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "and-guard", (19,),
        "the guard at line 19 lets a thread store when `x < C.shape[0]` or `y < C.shape[1]` "
        "holds, so a thread with one coordinate inside C and the other outside stores "
        "outside C (20 x 12)",
        "544 out-of-bounds writes of C; the first by block (0, 0), thread (0, 12) (global "
        "192) at [0, 12]",
        "line 19: `if x < C.shape[0] and y < C.shape[1]:` (store only when every coordinate "
        "is in range)")


def test_the_seeds_thread_row_of_b_and_its_work_from_a_are_both_named():
    # tid-rows at 50 x 30 x 40 on one block of 128 threads: every thread runs
    # row 0..49 and col 0..49 (n = A.shape[0] = 50) though C has 40 columns:
    # 50 x 10 stores past its right edge per thread, 128 x 500 = 64,000, the
    # first at [0, 40]; and it reads B[tid, col] where the sum needs B[idx, col].
    result = run(RunRequest(kernel="tid-rows", m=50, k=30, n=40, grid=(1,), block=(128,),
                            backend="cpu"))
    work, row = result.diagnoses
    assert work == Diagnosis(
        "work-from-a", (20,),
        "`col`, C's column, runs to `n` = A.shape[0] = 50 (A's rows) at line 20, but C has "
        "40 columns: the work is derived from A, not from C",
        "64,000 out-of-bounds writes of C, the first at [0, 40]",
        "line 20: `for col in range(C.shape[1]):`")
    assert row.rule == "thread-as-reduction-index" and row.lines == (23,)
    assert row.message == (
        "`B[tid, col]` at line 23 takes B's row from the thread (`tid`), where the sum over "
        "`idx` (line 22) needs `B[idx, col]`: each thread multiplies a row of A by its own "
        "row of B")
    assert row.fix == "line 23: `B[idx, col]`"
    # (square, as the asker's X @ X.T: only the row of B is wrong; each of the
    # 4,096 elements, compared with the float64 reference, is off its bound)
    square = run(RunRequest(kernel="tid-rows", m=64, k=64, n=64, grid=(1,), block=(64,),
                            backend="cpu"))
    row, ones = square.diagnoses
    assert row.rule == "thread-as-reduction-index" and row.evidence == (
        f"{square.verdict.errors.wrong:,} elements of C off their bound (every row of B "
        "read, each by its own thread for the whole sum)")
    # ... and on all-ones inputs every element is K = 64 whatever the indices:
    # the asker's test saw nothing (the engine ran the same launch on ones).
    assert square.verdict.errors.wrong == 4096
    assert ones == Diagnosis(
        "all-ones-would-pass", (16,),
        "on all-ones inputs every element of C is 64 (K) whichever row of A and column of B "
        "a thread takes, so a test that checks the values on all-ones matrices sees nothing "
        "wrong; on random inputs 4,096 elements are wrong",
        "random inputs: 4,096 elements of C off their bound; all-ones inputs, same launch: "
        "every element within its bound",
        "test on random inputs (ThreadMap's default, --pattern random), never on all-ones")
    ones_run = run(RunRequest(kernel="tid-rows", m=64, k=64, n=64, grid=(1,), block=(64,),
                              backend="cpu", pattern="ones"))
    assert ones_run.verdict.errors.wrong == 0 and ones_run.verdict.errors.non_finite == 0
    # (on ones every row of B is read and every value right: the rule's
    # pattern is there, its evidence is not, and it stays silent)
    assert ones_run.diagnoses == ()


def test_a_tile_loop_bounded_by_the_grid_says_how_much_of_k_it_covers():
    # bpg = gridDim.x = 4 tiles of 16: columns 0..63 of K = 256 read, 192 never.
    result = _run("launch_bounded_tiles.py", "fast_matmul", (64, 256, 64), (4, 4), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "launch-bounded-loop", (18,),
        "the loop over tiles at line 18 runs `bpg` = 4 times, a launch quantity "
        "(cuda.gridDim), so its tiles of TPB = 16 cover 64 of K = 256",
        f"columns 64-255 of A never read (192 columns); {result.verdict.errors.wrong:,} "
        "elements of C off their bound",
        "line 18: `for i in range((A.shape[1] + TPB - 1) // TPB):`")
    assert result.verdict.errors.wrong > 4000


def test_a_module_constant_that_is_not_the_runs_size_is_named():
    # n = 16 x 100 = 1,600 against K = 37: each of the 100 x 90 threads in
    # range reads A[x, 37..1599], 1,563 past its end: 14,067,000; thread 0
    # (x = 0, y = 0) first, at [0, 37].
    result = _run("fixed_constant.py", "fixed_n", (100, 37, 90), (7, 6), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "fixed-size", (17,),
        "`n` = 1,600 (line 8) bounds the loop at line 17, but this run's A has 37 columns: "
        "the loop runs past A's end",
        "14,067,000 out-of-bounds reads of A, the first at [0, 37]",
        "line 17: bound it by the array's own size, `range(A.shape[1])`")


def test_a_literal_stride_on_a_smaller_launch_is_named():
    # 1,200 elements, stride 1,024, 4 x 128 = 512 threads: thread t stores t
    # and t + 1,024 (t < 176); elements 512..1,023 never: 512.
    result = _run("literal_stride.py", "literal_stride", (40, 8, 30), (4,), (128,))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "fixed-size", (9,),
        "the loop at line 9 steps by the literal 1,024, but this launch has 512 threads "
        "(4 blocks of 128): elements 512-1,023 of every 1,024 are never written",
        "512 elements of C never written",
        "step by the launch's own thread count, `cuda.gridsize(1)`, from `cuda.grid(1)`")


def test_a_missing_barrier_is_placed_between_the_racing_lines():
    # The first race the lockstep emulation finds: thread 0 writes sA[0, 0]
    # at line 15, thread 1 (tx = 1, ty = 0) reads sA[ty, j] = sA[0, 0] at
    # line 19 (j = 0); the barrier at line 20 comes after both.
    result = _run("missing_barrier.py", "missing_barrier", (32, 32, 32), (2, 2), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "missing-barrier", (15, 19),
        "sA is written at line 15 and read at line 19 with no cuda.syncthreads() between "
        "them, so a thread can use an element that another thread of its block has not "
        "written yet",
        f"{result.analysis.races.count:,} elements of shared memory raced on; the first: "
        "block (0, 0), thread (0, 0) (global 0) writes sA[ty, tx] at line 15 and block (0, 0), "
        "thread (1, 0) (global 1) reads sA[ty, j] at line 19, both on sA[0, 0]",
        "line 18: insert `        cuda.syncthreads()` before `for j in range(TPB):`")


def test_an_early_return_before_barriers_names_who_left_and_how_to_guard_the_work():
    # C 30 x 30 on 2 x 2 blocks of 16 x 16, x the column: in block (1, 0),
    # x = 16..31, the threads with tx = 14, 15 (x >= 30) return: 2 x 16 = 32
    # of 256 miss the barriers; the first, thread (14, 0), global 256 + 14.
    # Blocks (1, 0), (0, 1) and (1, 1) hold such threads.
    result = _run("early_return.py", "early_return", (30, 32, 30), (2, 2), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "early-return-before-barrier", (14, 19),
        "the threads that return at line 14 never reach the barriers at lines 19 and 22, "
        "which every thread of a block must reach",
        "the barrier at line 19 was reached by 224 of 256 threads of block (1, 0) (first "
        "missing: block (1, 0), thread (14, 0) (global 270)); 3 blocks affected",
        "guard the work, not the barrier: drop the return at line 14 and put the loads and "
        "the store under `if y < C.shape[0] and x < C.shape[1]:`, with every "
        "cuda.syncthreads() outside it")


def test_a_transposed_tile_is_named_even_where_the_run_passes():
    # sA[tx, ty] with rows of 16 floats: word 16 tx + ty, bank (16 tx + ty) % 32;
    # a warp holds tx 0..15 at two values of ty: 4 banks, 8 lanes each: 8-way.
    # 2 x 2 blocks x 8 warps x 2 tiles = 64 warp requests.
    result = _run("transposed_tile.py", "transposed", (32, 32, 32), (2, 2), (16, 16))
    assert result.verdict.passed
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "transposed-tile", (8, 16),
        "sA[tx, ty] at line 16 puts threadIdx.x, in which consecutive lanes differ, in sA's "
        "first subscript, so a warp's lanes are a row apart and fall in the same banks",
        "8.0-way bank conflicts on average (worst 8-way, ideal 1.0) over 64 warp requests",
        "swap the subscripts (`sA[ty, tx]`) where the tile is written and read, or pad its "
        "rows by one, line 8: `sA = cuda.shared.array((TPB, TPB_PADDED), float32)`, with "
        "`TPB_PADDED = TPB + 1` at module level")


@pytest.mark.parametrize("file, kernel, shape, grid, block", [
    # a constant that equals this run's K (the kernel fails elsewhere)
    ("fixed_constant.py", "fixed_k_wrong_column", (100, 37, 90), (7, 6), (16, 16)),
    # the literal stride equals the launch's 4 x 256 threads: right
    ("literal_stride.py", "literal_stride", (40, 8, 30), (4,), (256,)),
    # the transposed tile padded by a column: no conflicts
    ("padded_tile.py", "padded", (32, 32, 32), (2, 2), (16, 16)),
])
def test_more_near_misses_stay_silent(file, kernel, shape, grid, block):
    result = _run(file, kernel, shape, grid, block)
    failed = kernel == "fixed_k_wrong_column"
    assert result.verdict.passed == (not failed)
    # (the constant's rule stays silent; its wrong column of B is named)
    assert [d.rule for d in result.diagnoses] == (
        ["crossed-index", "all-ones-would-pass"] if failed else [])


def test_a_subscript_shifted_past_the_edge_is_named_at_the_edge_thread():
    # 20 blocks of 16 threads (col 0..15) read partial[col + 1]: thread 15 of
    # each block reads partial[16], one past its 16 elements: 20 reads.
    result = _run("shared_off_by_one.py", "off_by_one", (20, 8, 16), (20,), (16,))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "shifted-index", (19,),
        "`partial[col + 1]` at line 19 shifts `col` by +1, so the thread with col = 15 reads "
        "partial one past its end (partial has 16 elements)",
        "20 out-of-bounds reads of partial; the first by block (0, 0), thread (15, 0) "
        "(global 15) at [16]",
        "line 19: read it only where it exists: `if col + 1 < partial.shape[0]:`")
    # C[x - 1, y - 1] on 2 x 1 blocks of 16 x 16 (x 0..31, y 0..15) for C of
    # 20 x 12: in range only x = 1..20, y = 1..12, 240 of 512 stores; 272 out.
    shifted = _run("margin_writes.py", "shifted", (20, 5, 12), (2, 1), (16, 16))
    diagnosis, ones = shifted.diagnoses
    assert ones.rule == "all-ones-would-pass"  # (every thread stores the same sum)
    assert diagnosis == Diagnosis(
        "shifted-index", (32,),
        "`C[x - 1, y - 1]` at line 32 shifts `x` by -1, so the thread with x = 0 writes C one "
        "before its start (C has 20 rows)",
        "272 out-of-bounds writes of C; the first by block (0, 0), thread (0, 0) (global 0) "
        "at [-1, -1]",
        "line 32: index each thread's own element, `x`, not `x - 1`")
    # e = cuda.grid(1) - 40, then atomic adds at C's flat index e: threads
    # 0..39 add at -40..-1 (C of 20 x 12 = 240 elements seen flat).
    flat = _run("margin_writes.py", "flat_both_ends", (20, 5, 12), (2,), (128,))
    assert flat.diagnoses[0] == Diagnosis(
        "shifted-index", (37, 38),
        "`cuda.atomic.add(C, e, A[0, 0] * B[0, 0])` at line 38, with `e = cuda.grid(1) - 40` "
        "(line 37), shifts `cuda.grid(1)` by -40, so the thread with cuda.grid(1) = 0 writes C "
        "40 before its start (C has 240 elements)",
        "40 out-of-bounds writes of C; the first by block (0, 0), thread (0, 0) (global 0) at "
        "[-40]",
        "line 37: index each thread's own element, `cuda.grid(1)`, not `cuda.grid(1) - 40`")


def test_b_read_with_the_wrong_index_is_named_with_the_right_one():
    # block_chunks stores C[row, col] from B[k, row % 30]: right only where
    # col == row % 30, 30 elements in rows 0..29 and 10 in rows 30..39; the
    # other 1,200 - 40 = 1,160 are wrong.
    result = _run("block_chunks.py", "block_chunks", (40, 8, 30), (5,), (256,))
    crossed = result.diagnoses[0]
    assert crossed == Diagnosis(
        "crossed-index", (16,),
        "`B[k, row % B.shape[1]]` at line 16 takes B's column from `row`, C's row index, "
        "where C[row, col] (line 17) needs B's column to be its own, `col`",
        "1,160 elements of C off their bound",
        "line 16: `B[k, col]`")
    transposed = _run("and_guard_inner_guard.py", "guarded_twice", (33, 17, 19), (5, 3),
                      (8, 8)).diagnoses[0]
    assert transposed.message == (
        "`B[y, k]` at line 16 reads B transposed: its row is `y`, C's column index, and its "
        "column `k`, the sum's index, where C[x, y] (line 17) needs `B[k, y]`")
    assert transposed.fix == "line 16: `B[k, y]`"


# Each buggy kernel of tests/kernels, at a launch of its own, and the rule
# that names its bug.  Not here: barrier_in_expression and huge_tile, which
# are refused before they run (no run, no evidence; their refusal names the
# line and the reason).
BUGGY = [
    ("and_guard.py", "fast_matmul", (33, 17, 19), (5, 3), (8, 8), "and-guard"),
    ("margin_writes.py", "or_guard", (20, 5, 12), (2, 2), (16, 16), "and-guard"),
    ("margin_writes.py", "shifted", (20, 5, 12), (2, 1), (16, 16), "shifted-index"),
    ("shared_off_by_one.py", "off_by_one", (20, 8, 16), (20,), (16,), "shifted-index"),
    ("margin_writes.py", "flat_both_ends", (20, 5, 12), (2,), (128,), "shifted-index"),
    ("first_oob_elsewhere.py", "first_oob_elsewhere", (16, 4, 16), (1,), (64,),
     "shifted-index"),
    ("thread_index_only.py", "matmul_1024", (40, 8, 30), (4,), (256,), "thread-index-only"),
    ("literal_stride.py", "literal_stride", (40, 8, 30), (4,), (128,), "fixed-size"),
    ("fixed_constant.py", "fixed_n", (100, 37, 90), (7, 6), (16, 16), "fixed-size"),
    ("fixed_constant.py", "fixed_k_wrong_column", (100, 37, 90), (7, 6), (16, 16),
     "crossed-index"),
    ("block_chunks.py", "block_chunks", (40, 8, 30), (5,), (256,), "crossed-index"),
    ("and_guard_inner_guard.py", "guarded_twice", (33, 17, 19), (5, 3), (8, 8),
     "crossed-index"),
    ("launch_bounded_tiles.py", "fast_matmul", (64, 256, 64), (4, 4), (16, 16),
     "launch-bounded-loop"),
    ("missing_barrier.py", "missing_barrier", (32, 32, 32), (2, 2), (16, 16),
     "missing-barrier"),
    ("early_return.py", "early_return", (30, 32, 30), (2, 2), (16, 16),
     "early-return-before-barrier"),
    ("transposed_tile.py", "transposed", (32, 32, 32), (2, 2), (16, 16), "transposed-tile"),
    ("store_then_add.py", "store_then_add", (8, 6, 4), (2,), (32,), "store-and-atomic"),
    ("ragged_loops.py", "ragged_loops", (20, 7, 12), (2, 2), (16, 16), "bound-past-size"),
    ("divergent_branch.py", "half", (20, 7, 12), (1, 2), (16, 16), "skipped-terms"),
]


@pytest.mark.parametrize("file, kernel, shape, grid, block, rule", BUGGY)
def test_each_buggy_test_kernel_gets_the_diagnosis_that_names_its_bug(file, kernel, shape, grid,
                                                                      block, rule):
    assert rule in [d.rule for d in _run(file, kernel, shape, grid, block).diagnoses]


def test_a_rule_that_fails_on_an_odd_kernel_is_left_out_and_said(monkeypatch):
    from kernels.analyses import diagnoses

    def broken(ctx):
        raise ValueError("an odd kernel")

    monkeypatch.setattr(diagnoses, "FAILURE_RULES", (broken,) + diagnoses.FAILURE_RULES)
    result = _run("thread_index_only.py", "matmul_1024", (40, 8, 30), (4,), (256,))
    assert [d.rule for d in result.diagnoses] == ["thread-index-only"]
    assert ("diagnosis rule broken failed on this kernel (ValueError: an odd kernel); its "
            "finding is left out") in result.notes


def test_a_store_and_an_atomic_add_on_one_element_are_named():
    # 8 x 4 = 32 elements, 64 threads in pairs: thread 2e stores element e at
    # line 23, thread 2e + 1 adds to it at line 27; the first, [0, 0], by
    # threads 0 and 1.
    result = _run("store_then_add.py", "store_then_add", (8, 6, 4), (2,), (32,))
    assert result.diagnoses[0] == Diagnosis(
        "store-and-atomic", (23, 27),
        "C is stored at line 23 and updated with cuda.atomic.add at line 27 by different "
        "threads on the same elements: an atomic update is not ordered against a plain store, "
        "so an update made before the store is lost",
        "32 elements of C both stored and atomically updated by different threads; the first, "
        "[0, 0], by block (0, 0), thread (0, 0) (global 0) and block (0, 0), thread (1, 0) "
        "(global 1)",
        "line 23: `cuda.atomic.add(C, (i, j), acc)` (C zeroed before the launch), so every "
        "thread's part is added")


def test_a_loop_bound_past_the_arrays_size_is_named():
    # ragged_loops at 20 x 7 x 12 (i the row, j the column): k runs to
    # 7 + i % 3, so each of the 12 threads of row i reads i % 3 columns past
    # A's 7: 12 x (7 x 1 + 6 x 2) = 228 reads; the first, thread 1 (i = 1),
    # at [1, 7].
    result = _run("ragged_loops.py", "ragged_loops", (20, 7, 12), (2, 2), (16, 16))
    assert result.diagnoses[0] == Diagnosis(
        "bound-past-size", (13,),
        "the loop at line 13 runs `k` up to `A.shape[1] + i % 3`, past A's 7 columns wherever "
        "`i % 3` is above 0",
        "228 out-of-bounds reads of A; the first by block (0, 0), thread (1, 0) (global 1) at "
        "[1, 7]",
        "line 13: `for k in range(j % 5, A.shape[1]):`")


def test_a_test_inside_the_sum_that_skips_terms_is_named():
    # half adds A[row, k] * B[k, col] only where k + col is even: every one of
    # the 20 x 12 sums is short, on random inputs and on all-ones inputs.
    result = _run("divergent_branch.py", "half", (20, 7, 12), (1, 2), (16, 16))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "skipped-terms", (10,),
        "the test `(k + col) % 2 == 0` at line 10 leaves terms out of the sum over `k` (line "
        "9): each element adds only some of its 7 products",
        "240 elements of C off their bound on random inputs, and 240 elements on all-ones "
        "inputs, where a short sum is less than K = 7",
        "line 10: drop the test: every `k` from 0 to K - 1 belongs in the sum")


def test_chunks_dealt_to_the_whole_grid_count_the_grids_threads():
    # 1,200 elements over 4 x 128 = 512 threads: chunks of ceil(1,200 / 512)
    # = 3, 1,536 elements in all; threads 400..511 store 1,200..1,535, 336
    # past C; thread 400 (block 3, thread 16) first, at element 1,200 = [40, 0].
    result = _run("grid_chunks.py", "grid_chunks", (40, 8, 30), (4,), (128,))
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "unguarded-chunk-end", (11,),
        "each thread's loop at line 11 covers `chunk` = 3 elements from `start`, rounded up, "
        "and nothing stops it at the end of C: 512 threads x 3 = 1,536 elements, past its "
        "1,200",
        "336 out-of-bounds writes of C; the first by block (3, 0), thread (16, 0) (global "
        "400) at [40, 0]",
        "line 11: `for e in range(start, min(start + chunk, C.size)):`")


def test_the_all_ones_rerun_is_left_out_where_the_run_read_its_inputs_out_of_bounds(
        monkeypatch):
    """tid-rows on 8 x 16 x 8: with 16 threads (tid < K = 16 rows of B) every
    read is in bounds, each thread's sum on all-ones inputs is K = 16, and the
    rerun finds the bug hidden.  With 64 threads, threads 16..63 read B past
    its 16 rows: a GPU reads whatever lies there, never ones, so the rerun
    cannot tell whether an all-ones test would pass, and is not run (at the
    seed's own shape it doubled a half-minute run)."""
    from kernels import engine

    reruns = []
    real = engine._errors_on_all_ones

    def counted_rerun(*args, **kwargs):
        reruns.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "_errors_on_all_ones", counted_rerun)
    inside = run(RunRequest(kernel="tid-rows", m=8, k=16, n=8, grid=(1,), block=(16,),
                            backend="cpu"))
    assert not inside.maps.out_of_bounds and len(reruns) == 1
    assert "all-ones-would-pass" in [d.rule for d in inside.diagnoses]
    outside = run(RunRequest(kernel="tid-rows", m=8, k=16, n=8, grid=(1,), block=(64,),
                             backend="cpu"))
    assert outside.maps.out_of_bounds[0].array == "B" and len(reruns) == 1
    assert not outside.verdict.passed
    assert "all-ones-would-pass" not in [d.rule for d in outside.diagnoses]
