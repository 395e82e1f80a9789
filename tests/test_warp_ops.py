"""Warp-level operations in the lockstep emulation (issue 22, point 3): shuffles,
votes, syncwarp, activemask and lanemask_lt give what CUDA's definitions give,
and the calls whose result CUDA leaves undefined are counted and named, with
every figure worked out by hand below."""
from pathlib import Path

import numpy as np
import pytest

from kernels import Diagnosis, RunRequest, ThreadMapError, line_findings, run
from kernels.analyses.hazards import WarpHazard

FILE = str(Path(__file__).parent / "kernels" / "warp_ops.py")
LINES = Path(FILE).read_text().splitlines()


def _run(kernel: str, shape=(37, 70, 29), grid=(8,), block=(64,), **options):
    m, k, n = shape
    return run(RunRequest(kernel=kernel, kernel_file=FILE, m=m, k=k, n=n, grid=grid,
                          block=block, backend="cpu", **options))


def _line(text: str) -> int:
    (number,) = [i for i, line in enumerate(LINES, start=1) if text in line]
    return number


@pytest.mark.parametrize("kernel", ["matmul_warp_dot", "matmul_butterfly"])
def test_a_shuffle_reduction_passes_on_random_inputs(kernel):
    # 37 x 29 elements over 16 warps; K = 70 split over 32 lanes (lanes 0-5
    # take 3 terms, the rest 2), then a tree of 5 shuffles.
    result = _run(kernel)
    assert result.verdict.passed, result.verdict.reasons
    assert result.verdict.errors.rel_error < 1e-6  # float32: a few ulps of a 70-term sum
    assert result.analysis.warp == () and result.verdict.warp_hazards == 0
    assert result.maps.count.min() == result.maps.count.max() == 1


def test_each_operation_gives_what_cuda_defines():
    # One warp of 32 lanes; lanes 20-31 return first, so 0-19 are active and a
    # full mask may still name the exited lanes (CUDA: "all non-exited
    # threads named in mask must execute the same intrinsic").
    result = _run("probe", shape=(32, 4, 11), grid=(1,), block=(32,))
    c = result.c
    lanes = np.arange(20)
    ballot = sum(1 << lane for lane in range(0, 20, 3))  # lanes 0, 3, ..., 18: 299,593
    down3 = np.where(lanes + 3 < 20, lanes + 3, lanes)  # lanes 17-19 read exited lanes
    expected = np.stack([
        np.full(20, (1 << 20) - 1),               # activemask: lanes 0-19
        np.full(20, ballot),                       # ballot_sync(lane % 3 == 0)
        np.ones(20),                               # any_sync(lane == 7)
        np.zeros(20),                              # all_sync(lane < 19): lane 19 says no
        np.full(20, 50),                           # shfl_sync(lane * 10, 5)
        np.where(lanes >= 2, lanes - 2, lanes),    # shfl_up_sync(lane, 2)
        lanes ^ 1,                                 # shfl_xor_sync(lane, 1)
        (1 << lanes) - 1,                          # lanemask_lt
        np.ones(20),                               # eq_sync(lane < 100): all alike
        0 + 2 * down3,                             # eq_sync(lane even): no; shfl_down 3
        [ballot << (lane % 3) if lane % 3 < 2 else 149_796 for lane in range(20)],
    ], axis=1)                                     # match_any_sync(lane % 3): lanes alike
    assert ballot == 299_593 and sum(1 << lane for lane in range(2, 20, 3)) == 149_796
    np.testing.assert_array_equal(c[:20], expected.astype(np.float32))
    assert np.isnan(c[20:]).all()  # the exited lanes' rows
    # Lanes 17, 18 and 19 read lanes 20, 21 and 22 with shfl_down_sync: exited,
    # so not taking part (undefined on a GPU); the full mask itself is fine.
    line = _line("C[lane, 9] =")
    assert result.analysis.warp == (WarpHazard(
        "shuffle", 3, line, "block (0, 0), thread (17, 0) (global 17)", 17, 0xFFFFFFFF,
        0x000FFFFF, 20),)
    assert result.verdict.warp_hazards == 3
    assert (f"3 shuffles read a lane that took no part in them, an undefined value on a GPU "
            f"(first: line {line}, block (0, 0), thread (17, 0) (global 17) (lane 17); mask "
            "0xffffffff, active lanes 0x000fffff: it read lane 20, not active at the call); the "
            "emulation gave the lane its own value") in result.verdict.reasons
    assert "warp operations" in result.verdict.short_reasons
    findings = [f for f in line_findings(result) if f.kind == "warp operation"]
    assert [(f.line, f.fault) for f in findings] == [(line, True)]
    summary = result.summary()["warp_operations"]  # (result.json)
    assert summary == [{"kind": "shuffle", "count": 3, "first": {
        "line": line, "thread": "block (0, 0), thread (17, 0) (global 17)", "lane": 17,
        "mask": "0xffffffff", "active_lanes": "0x000fffff", "source_lane": 20}}]


def test_a_mask_of_half_the_warp_is_named_at_its_line():
    # 37 x 29 = 1,073 elements, each reduced by one warp of 32 active lanes in
    # 5 rounds (offsets 16, 8, 4, 2, 1) with mask 0xffff (lanes 0-15).
    # Masks: lanes 16-31 call with a mask that leaves them out: 16 x 5 = 80
    # calls per element, 85,840 in all; the first, lane 16 of warp 0.
    # Shuffles: lane l < 16 reads l + offset, outside the mask when >= 16:
    # 16 + 8 + 4 + 2 + 1 = 31 per element; lanes 16-31 are outside it
    # themselves: 80 more; 111 x 1,073 = 119,103.  The first, lane 0 reading 16.
    result = _run("matmul_half_mask")
    line = _line("cuda.shfl_down_sync(0xFFFF")
    mask, shuffle = result.analysis.warp
    assert mask.describe() == (
        f"85,840 warp-operation calls with a mask the warp does not meet, undefined on a GPU: "
        f"a hang or a wrong value (first: line {line}, block (0, 0), thread (16, 0) (global "
        "16) (lane 16); mask 0x0000ffff, active lanes 0xffffffff: its mask leaves out the "
        "calling lane)")
    assert shuffle.describe() == (
        f"119,103 shuffles read a lane that took no part in them, an undefined value on a "
        f"GPU (first: line {line}, block (0, 0), thread (0, 0) (global 0) (lane 0); mask "
        "0x0000ffff, active lanes 0xffffffff: it read lane 16, outside the mask); the "
        "emulation gave the lane its own value")
    assert result.verdict.warp_hazards == 85_840 + 119_103
    assert not result.verdict.passed


def test_a_shuffle_only_some_lanes_reach_is_named_with_the_lanes_missing():
    # `if lane < offset:` lets offset lanes call with a full mask in each of
    # the 5 rounds: 31 calls per element, each missing the lanes >= offset,
    # and each reading lane l + offset, which is not there: 31 x 1,073 = 33,263
    # of each.  The first: lane 0 in round 1, lanes 16-31 missing.
    result = _run("matmul_shuffle_in_branch")
    line = [i for i, text in enumerate(LINES, start=1)
            if "shfl_down_sync(FULL, acc, offset)" in text][-1]  # (this kernel's, the last)
    mask, shuffle = result.analysis.warp
    assert (mask.count, shuffle.count) == (33_263, 33_263)
    assert mask.describe().endswith(
        f"(first: line {line}, block (0, 0), thread (0, 0) (global 0) (lane 0); mask "
        "0xffffffff, active lanes 0x0000ffff: its mask names lanes 16-31, which had not "
        "exited but did not reach the call)")
    assert shuffle.describe().endswith(
        "it read lane 16, not active at the call); the emulation gave the lane its own value")


@pytest.mark.parametrize("body,why", [
    ("if i < C.shape[0] and cuda.any_sync(0xFFFFFFFF, i < 3):\n        C[i, 0] = A[i, 0] * B[0, 0]",
     "a warp operation behind 'and', 'or' or 'x if c else y' runs on only some lanes: assign "
     "it to a variable first (line 8)"),
    ("while cuda.any_sync(0xFFFFFFFF, i < 3):\n        i += 1\n    C[0, 0] = A[0, 0] * B[0, 0]",
     "a warp operation in a while loop's test runs at every turn: assign it to a variable "
     "before the loop and again at the end of its body (line 8)"),
    ("x = cuda.syncwarp()\n    C[0, 0] = A[0, 0] * B[0, 0]",
     "cuda.syncwarp() returns nothing: call it as a statement of its own (line 8)"),
])
def test_a_warp_operation_the_emulation_cannot_place_is_refused_with_why(tmp_path, body, why):
    path = tmp_path / "k.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
                    "    i = cuda.grid(1)\n    j = 0\n    " + body + "\n")
    with pytest.raises(ThreadMapError) as info:
        run(RunRequest(kernel="matmul", kernel_file=str(path), m=4, k=4, n=4, grid=(1,),
                       block=(32,)))
    message = str(info.value)
    assert f"the CPU emulation cannot run it as written ({why})" in message, message
    assert "so it runs only on a GPU (--backend gpu)" in message


@pytest.mark.parametrize("kernel,shape,grid,block", [
    ("matmul_warp_dot", (37, 70, 29), (8,), (64,)),
    ("matmul_butterfly", (37, 70, 29), (3,), (96,)),
    ("probe", (32, 4, 11), (1,), (32,)),
    ("matmul_half_mask", (37, 70, 29), (8,), (64,)),
    ("matmul_shuffle_in_branch", (21, 40, 13), (5,), (64,)),
    ("matmul_warp_tree_synced", (9, 40, 7), (32,), (64,)),
    ("matmul_warp_tree_unsynced", (5, 40, 7), (18,), (64,)),
])
def test_both_tiers_agree_element_by_element(kernel, shape, grid, block):
    """The instant tier (numpy, every warp of a chunk at once) gives what the
    compiled tier (numba, lane after lane) gives: C, the maps, and each warp
    hazard's count and first call."""
    instant = _run(kernel, shape, grid, block, tier="instant")
    compiled = _run(kernel, shape, grid, block, tier="compiled")
    assert (instant.tier, compiled.tier) == ("instant", "compiled")
    np.testing.assert_array_equal(instant.c, compiled.c)
    for name in ("count", "min_writer", "max_writer", "iteration"):
        np.testing.assert_array_equal(getattr(instant.maps, name), getattr(compiled.maps, name))
    assert instant.analysis.warp == compiled.analysis.warp
    assert instant.analysis.races == compiled.analysis.races
    assert instant.verdict.reasons == compiled.verdict.reasons


@pytest.mark.parametrize("kernel,instruction", [
    ("matmul_warp_dot", "shfl.sync.down"), ("matmul_butterfly", "shfl.sync.bfly"),
    ("probe", "vote.sync.ballot"),
])
def test_the_test_kernels_are_real_cuda_kernels(kernel, instruction):
    """numba-cuda compiles each (and its recording form) to PTX for sm_90: the
    emulation's semantics are checked on kernels a GPU would run."""
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.loader import load_plan

    plan = load_plan(RunRequest(kernel=kernel, kernel_file=FILE))
    gen = load_module(plan, "cuda", "float32")
    ptx = compile_ptx_for(plan, gen.function(plan.name), "float32", False, cc=(9, 0))
    assert instruction in ptx
    recording = compile_ptx_for(plan, gen.function(f"{plan.name}__tm_record"), "float32",
                                True, cc=(9, 0))
    assert instruction in recording


ATOMICS = str(Path(__file__).parent / "kernels" / "atomic_ops.py")


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_every_atomic_operation_returns_the_old_value_cuda_defines(tier):
    # One block of 32 threads; the emulation runs a statement's lanes in order,
    # so thread t is the (t+1)-th to update each shared counter.
    result = run(RunRequest(kernel="atomic_probe", kernel_file=ATOMICS, m=32, k=4, n=11,
                            grid=(1,), block=(32,), backend="cpu", tier=tier))
    t = np.arange(32)
    low = t % 8
    expected = np.stack([
        t,                                          # inc(tickets, 0, 1000): 0, 1, 2, ...
        [5, 3, 2, 1, 0] + [3, 2, 1, 0] * 6 + [3, 2, 1],  # dec(from 5, wrap at 3): 3 on 0
        np.where(t < 8, (1 << t) - 1, 255),         # or_ of the bits before: 0, 1, 3, 7, ...
        np.where(t < 8, 255 & ~((1 << low) - 1), 0),  # and_ clearing them from 255
        t % 2,                                      # xor 1: toggles
        np.full(32, 10),                            # C = t, nanmax 20, nanmin 10: ends 10
        t,                                          # nanmax's old value: t
        np.maximum(t, 20),                          # nanmin's old value: max(t, 20)
        np.where(t < 4, 0, t - 4),                  # exch(slot t % 4, t): the last thread's
        np.where(t == 0, 0, 1),                     # cas(gate, 0, 0, t + 1): only thread 0
        t,                                          # compare_and_swap(chain, t, t + 1): each
    ], axis=1)
    np.testing.assert_array_equal(result.c, expected.astype(np.float32))
    assert result.tier == tier


def test_the_atomic_probe_is_a_real_cuda_kernel():
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.loader import load_plan

    plan = load_plan(RunRequest(kernel="atomic_probe", kernel_file=ATOMICS))
    ptx = compile_ptx_for(plan, load_module(plan, "cuda", "float32").function(plan.name),
                          "float32", False, cc=(9, 0))
    for instruction in ("atom.shared.inc.u32", "atom.shared.dec.u32", "atom.shared.or.b32",
                        "atom.shared.and.b32", "atom.shared.xor.b32", "atom.shared.exch.b32",
                        "atom.shared.cas.b32"):
        assert instruction in ptx, instruction


def test_the_causes_are_named_with_their_fix():
    # The two buggy reductions above, as diagnoses (analyses/diagnoses/warps.py).
    half = _run("matmul_half_mask")
    line = _line("cuda.shfl_down_sync(0xFFFF")
    (diagnosis,) = half.diagnoses
    assert diagnosis == Diagnosis(
        "mask-leaves-out-callers", (line,),
        f"the mask 0xFFFF of cuda.shfl_down_sync at line {line} names lanes 0-15, but lanes "
        "16-31 call it too: a lane outside its own call's mask gets an undefined value, and so "
        "does a lane that reads one",
        "85,840 calls by lanes outside their mask; the first by block (0, 0), thread (16, 0) "
        "(global 16) (lane 16), with active lanes 0xffffffff",
        f"line {line}: `cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)` (the mask names every "
        "lane that calls it; cuda.activemask() gives the lanes here)")
    branch = _run("matmul_shuffle_in_branch")
    call = [i for i, text in enumerate(LINES, start=1)
            if "shfl_down_sync(FULL, acc, offset)" in text][-1]
    (diagnosis,) = branch.diagnoses
    assert diagnosis == Diagnosis(
        "warp-call-in-branch", (call - 1, call),
        f"cuda.shfl_down_sync at line {call} is inside `if lane < offset:` (line {call - 1}), "
        "so lanes 16-31 of its mask 0xffffffff never reach it: every lane a warp operation's "
        "mask names must call it, or the result is undefined (a hang, or a value read from a "
        "lane that is not there)",
        "33,263 calls with lanes of the mask missing; the first by block (0, 0), thread (0, 0) "
        "(global 0) (lane 0), with active lanes 0x0000ffff",
        f"call it on every lane before line {call - 1}, and use its value inside: `value = "
        "cuda.shfl_down_sync(FULL, acc, offset)`, then `if lane < offset: acc += value`")
    # The correct reductions get none.
    assert _run("matmul_warp_dot").diagnoses == ()


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_syncwarp_orders_a_warps_shared_memory_and_lockstep_alone_does_not(tier):
    # 9 x 7 = 63 elements, one per warp (64 threads per block, 32 blocks).
    # Synced: each step reads a partner's sum, syncwarp, adds, syncwarp: no race.
    synced = _run("matmul_warp_tree_synced", (9, 40, 7), (32,), (64,), tier=tier)
    assert synced.verdict.passed, synced.verdict.reasons
    assert synced.analysis.races.count == 0
    # Unsynced (the pre-Volta idiom): at offset o, lanes 0..o-1 read buf[l + o],
    # which lane l + o wrote in the same interval with nothing between: 16 + 8
    # + 4 + 2 + 1 = 31 elements raced on per warp (each read once), 63 x 31 =
    # 1,953.  The first: lane 0 reading buf[16], written by lane 16.
    unsynced = _run("matmul_warp_tree_unsynced", (9, 40, 7), (32,), (64,), tier=tier)
    store = [i for i, text in enumerate(LINES, start=1)
             if text.strip() == "buf[t] = acc"][-1]  # (this kernel's, the last)
    read = _line("buf[t] += buf[t + offset]")
    assert unsynced.verdict.reasons == (
        f"1,953 elements of shared memory raced on (first: block (0, 0), thread (16, 0) "
        f"(global 16) writes buf[t] at line {store} and block (0, 0), thread (0, 0) "
        f"(global 0) reads buf[t + offset] at line {read}, both on buf[16] with no barrier "
        "between them)",
        # (the sums are right: the emulation's lanes do run in lockstep)
        "every element of C is within its bound of the reference all the same: the FAIL "
        "comes from the shared-memory race check, not from its values, which come out right "
        "here because the emulation's one fixed order of the threads (lockstep: warp after "
        "warp, block after block) decided every race; on a GPU they need not")


def test_the_lockstep_reliant_warp_reduction_is_named_with_syncwarp_not_syncthreads():
    # The first race (above): lanes 16 and 0 of warp 0, under `if lane < offset:`.
    # A syncthreads there would be reached by only some threads; the fix is
    # the warp's own barrier, where every lane of the warp reaches it.
    result = _run("matmul_warp_tree_unsynced", (9, 40, 7), (32,), (64,))
    store = [i for i, text in enumerate(LINES, start=1) if text.strip() == "buf[t] = acc"][-1]
    read = _line("buf[t] += buf[t + offset]")
    (diagnosis,) = result.diagnoses
    assert diagnosis == Diagnosis(
        "warp-synchronous-race", (store, read),
        f"lanes of one warp pass values through buf (written at line {store}, read at line "
        f"{read}) with no cuda.syncwarp() between: since Volta (sm_70) a warp's lanes are not "
        "kept in lockstep, so a lane can read its partner's element before the partner has "
        "written it",
        f"1,953 elements of shared memory raced on; the first: block (0, 0), thread (16, 0) "
        f"(global 16) writes buf[t] at line {store} and block (0, 0), thread (0, 0) "
        f"(global 0) reads buf[t + offset] at line {read}, both on buf[16], lanes of one warp",
        f"`cuda.syncwarp()` after line {store}; and at line {read}, read the partner's element "
        "into a local, wait for the warp, then write: `v = buf[t + offset]`, "
        "`cuda.syncwarp()`, `buf[t] += v`, `cuda.syncwarp()`, with each cuda.syncwarp() "
        "outside the `if lane < offset:` so that every lane of the warp reaches it")
    # The synced kernel, written as that fix says, passes (test above).


@pytest.mark.parametrize("body,why", [
    ("flag = i < 3\n    x = cuda.shfl_down_sync(0xFFFFFFFF, flag, 1)",
     "cuda.shfl_down_sync: it shuffles 32- and 64-bit ints and floats, not bool"),
    ("x = cuda.ballot_sync(1.5, i < 3)",
     "cuda.ballot_sync: its mask must be an integer, not float64"),
])
def test_a_warp_operation_on_a_type_no_gpu_takes_is_refused_as_numba_would(tmp_path, body,
                                                                            why):
    # numba-cuda's intrinsics refuse these (compile_ptx raises a TypingError):
    # the emulation must not run a kernel that no GPU can compile.
    path = tmp_path / "k.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
                    "    i = cuda.grid(1)\n    " + body + "\n"
                    "    if i < C.shape[0]:\n        C[i, 0] = A[i, 0] * B[0, 0] + x\n")
    with pytest.raises(ThreadMapError) as info:
        run(RunRequest(kernel="matmul", kernel_file=str(path), m=4, k=4, n=4, grid=(1,),
                       block=(32,), backend="cpu"))
    message = str(info.value)
    assert f"numba could not compile 'matmul':\n{why}\n" in message, message
