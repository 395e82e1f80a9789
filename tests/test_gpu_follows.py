"""The first map at once on a machine with a GPU (issue 40, point 3): ``auto``
answers from the CPU emulation, and the GPU's run of the same request follows,
adding its times and its own verdict to the same result; where its maps
disagree, that is a fault shown on the kernel's lines.

No GPU here: a stand-in takes the GPU backend's place.  It runs the job on the
CPU emulation and labels its times as a GPU's, so every figure it gives is
worked out, not written in; a tampering stand-in gives wrong values in C.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from kernels import RunRequest, confirm, line_findings, run
from kernels.analyses.agreement import disagreements
from kernels.backends import REGISTRY, CpuEmulation
from tests.conftest import request


class StandInGpu:
    """A GPU that is the CPU emulation under another name."""

    name = "gpu"
    needs_own_process = False

    def __init__(self, wrong_c: bool = False, failure: Exception | None = None):
        self.wrong_c = wrong_c
        self.failure = failure
        self.runs = 0

    def available(self) -> bool:
        return True

    def run(self, job):
        self.runs += 1
        if self.failure is not None:
            raise self.failure
        output = CpuEmulation().run(job)
        output.timings = [dataclasses.replace(t, backend="gpu") for t in output.timings]
        if self.wrong_c:  # (every element off: FAIL)
            output.c_record = output.c_record + 1.0
            if output.c_plain is not None:
                output.c_plain = output.c_plain + 1.0
        return output


@pytest.fixture
def stand_in_gpu(monkeypatch):
    from kernels.backends import device

    def install(**options) -> StandInGpu:
        gpu = StandInGpu(**options)
        monkeypatch.setitem(REGISTRY, "gpu", gpu)
        monkeypatch.setattr(device, "might_have_gpu", lambda: True)  # (its device files)
        return gpu
    return install


SMALL = dict(shape=(19, 7, 23), grid=(2,), block=(64,))


def test_auto_answers_from_the_cpu_first_and_says_the_gpu_follows(stand_in_gpu):
    gpu = stand_in_gpu()
    first = run(request(**SMALL), gpu_follows=True)
    assert first.backend == "cpu" and first.follows == "gpu" and gpu.runs == 0
    assert first.asked_request.backend == "auto"  # (run again, it is auto's again)
    assert "the GPU's run of the same launch follows" in first.backend_note
    assert first.verdict.passed and first.confirmation is None
    # Without a follow-up to come (check, hunt, sweep), auto still means the GPU:
    alone = run(request(**SMALL))
    assert alone.backend == "gpu" and alone.follows is None and gpu.runs == 1
    # and --backend gpu forces it:
    forced = run(request(backend="gpu", **SMALL), gpu_follows=True)
    assert forced.backend == "gpu" and forced.follows is None
    assert forced.asked_backend == "" and forced.asked_request is forced.request


def test_the_gpu_s_times_and_verdict_join_the_same_result(stand_in_gpu):
    stand_in_gpu()
    first = run(request(**SMALL), gpu_follows=True)
    both = confirm(first)
    assert both.follows is None and both.confirmation.agrees
    assert both.confirmation.backend == "gpu" and both.confirmation.verdict == "PASS"
    assert "write counts" in both.confirmation.compared
    assert "lowest writers" in both.confirmation.compared  # (race-free: every map)
    # The maps, C and verdict shown are the first answer's; the times are both.
    assert both.maps is first.maps and both.c is first.c and both.verdict is first.verdict
    assert both.shown_timing.backend == "gpu" and both.shown_timing.is_gpu_time
    assert first.shown_timing.backend.startswith("cpu")
    assert set(both.timings) == set(first.timings) | {
        t for t in both.timings if t.backend == "gpu"}
    summary = both.summary()
    assert summary["backend"] == "cpu" and summary["confirmation"]["agrees"] is True
    json.dumps(summary)  # (as result.json holds it)
    assert not [f for f in line_findings(both) if f.kind == "disagreement"]


def test_a_disagreement_is_a_fault_on_the_kernel_s_lines(stand_in_gpu):
    stand_in_gpu(wrong_c=True)
    both = confirm(run(request(**SMALL), gpu_follows=True))
    confirmation = both.confirmation
    assert not confirmation.agrees and confirmation.verdict == "FAIL"
    assert confirmation.disagreements[0] == "its verdict is FAIL where the one shown is PASS"
    assert "DISAGREES" in confirmation.line()
    found = [f for f in line_findings(both) if f.kind == "disagreement"]
    assert found and all(f.fault for f in found)
    assert {f.line for f in found} == {line for line, kind, array, _ in both.kernel.accesses
                                       if array == "C" and kind == "store"}


def test_a_gpu_that_fails_is_one_sentence_and_the_first_answer_stands(stand_in_gpu):
    stand_in_gpu(failure=RuntimeError("Call to cuInit results in\nCUDA_ERROR_NO_DEVICE (100)"))
    first = run(request(**SMALL), gpu_follows=True)
    both = confirm(first)
    assert both.verdict.passed and both.maps is first.maps
    assert both.confirmation.error == ("the GPU run failed: RuntimeError: Call to cuInit results "
                                       "in CUDA_ERROR_NO_DEVICE (100)")
    assert both.confirmation.line().startswith("GPU: not run (the GPU run failed")
    assert both.timings == first.timings


def test_maps_that_differ_are_named_with_their_first_element():
    """Two real runs of one shape whose maps differ, the canonical kernel and
    the seed's, 16x8x16 on one block of 1024, figures worked out by hand:
    grid-stride has thread e store element e once; tid-rows has every thread
    store all 256 elements (thread t's e-th store is element e) and read
    B[t, col], in bounds only for t < 8 (K = 8)."""
    shown = run(RunRequest(kernel="grid-stride", m=16, k=8, n=16, grid=(1,), block=(1024,),
                           backend="cpu"))
    other = run(RunRequest(kernel="tid-rows", m=16, k=8, n=16, grid=(1,), block=(1024,),
                           backend="cpu"))
    found, compared = disagreements(shown, other)
    assert found == (
        "its verdict is FAIL where the one shown is PASS",
        # 1,016 threads (8..1023) x 16 rows x 16 columns x 8 = 2,080,768
        "out-of-bounds reads of B: 2,080,768 on the CPU emulation, 0 shown",
        "write counts differ at 256 of 256 elements (first C[0, 0]: 1024 on the CPU "
        "emulation, 1 shown)",
        "out-of-bounds accesses per thread differ at 1,016 of 1,024 threads (first thread 8: "
        "2048 on the CPU emulation, 0 shown)",
        # C[0, 0]'s lowest writer is thread 0 in both
        "lowest writers differ at 255 of 256 elements (first C[0, 1]: 0 on the CPU emulation, "
        "1 shown)",
        "highest writers differ at 256 of 256 elements (first C[0, 0]: 1023 on the CPU "
        "emulation, 0 shown)",
        "grid-stride iterations differ at 255 of 256 elements (first C[0, 1]: 1 on the CPU "
        "emulation, 0 shown)",
        "stores per thread differ at 1,024 of 1,024 threads (first thread 0: 256 on the CPU "
        "emulation, 1 shown)",
        # A[r, k]: once per element of row r (16), by each of 1,024 threads there
        "reads of A differ at 128 of 128 elements (first A[0, 0]: 16384 on the CPU emulation, "
        "16 shown)",
        # B[t, c]: by thread t < 8, for each of 16 rows and 8 values of idx
        "reads of B differ at 128 of 128 elements (first B[0, 0]: 128 on the CPU emulation, "
        "16 shown)")
    assert len(compared) == 2 + 2 + 5 + 2
    # a run whose threads race is held only to its counts and out-of-bounds figures
    _, raced = disagreements(other, shown)
    assert raced == ("verdict", "out-of-bounds tallies", "write counts",
                     "out-of-bounds accesses per thread")


def test_run_writes_the_first_answer_then_the_gpu_s_figures(stand_in_gpu, tmp_path, capsys):
    from kernels.cli import main
    from kernels.maps_file import load_maps

    stand_in_gpu()
    out = tmp_path / "out"
    assert main(["run", "--kernel", "grid-stride", "--shape", "19x7x23", "--grid", "2",
                 "--block", "64", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    first, _, after = printed.partition("the GPU's run of the same launch follows...")
    assert first.startswith("PASS") and "[cpu: the CPU emulation first" in first
    assert "GPU: PASS, and its maps agree with the figures shown" in after
    assert "(GPU;" in after  # (its times, labelled)
    summary = json.loads((out / "result.json").read_text())
    assert summary["backend"] == "cpu" and "follows" not in summary  # (it came)
    assert summary["confirmation"] == {
        **summary["confirmation"], "backend": "gpu", "verdict": "PASS", "agrees": True,
        "disagreements": [], "error": None}
    assert any(t["is_gpu_time"] for t in summary["timings"])
    maps = load_maps(out / "maps.npz", summary["maps"])  # (the same run id: still its pair)
    np.testing.assert_array_equal(maps["count"], 1)


def test_a_gpu_run_that_fails_after_the_first_answer_keeps_it(stand_in_gpu, tmp_path, capsys):
    from kernels.cli import main

    stand_in_gpu(failure=RuntimeError("CUDA_ERROR_OUT_OF_MEMORY"))
    out = tmp_path / "out"
    assert main(["run", "--kernel", "grid-stride", "--shape", "19x7x23", "--grid", "2",
                 "--block", "64", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "GPU: not run (the GPU run failed: RuntimeError: CUDA_ERROR_OUT_OF_MEMORY)" in printed
    summary = json.loads((out / "result.json").read_text())
    assert summary["verdict"] == "PASS" and summary["confirmation"]["agrees"] is False
    assert "Traceback" not in printed


def test_the_app_shows_the_first_answer_then_puts_the_gpu_s_run_in_its_row(qapp, stand_in_gpu):
    from app.controllers.session_controller import SessionController
    from app.models.session import Session
    from app.views.results_table import ResultsModel

    stand_in_gpu()
    session = Session()
    controller = SessionController(session, confirm=lambda title, text: True, synchronous=True)
    table = ResultsModel(session)
    seen, told = [], []
    session.current_changed.connect(seen.append)
    session.told.connect(lambda message, ms: told.append(message))
    assert controller.run(RunRequest(kernel="grid-stride", m=19, k=7, n=23, grid=(2,),
                                     block=(64,)))
    first, shown = seen  # (the CPU emulation's answer, then the same run with the GPU's)
    assert first.follows == "gpu" and shown.confirmation.agrees
    assert session.results == [shown] and session.current is shown
    assert table.cell_text(0, 4) == f"CPU emulation ({shown.tier}), then GPU: agrees"
    assert told[-1] == "GPU: PASS, and its maps agree with the figures shown"
    assert any("GPU: PASS" in line for line in table.data(table.index(0, 5), 3).splitlines())


def test_the_app_shows_a_disagreement_in_red(qapp, stand_in_gpu):
    from app.controllers.session_controller import SessionController
    from app.models.session import Session
    from app.qt import QtCore
    from app.views.results_table import ResultsModel

    stand_in_gpu(wrong_c=True)
    session = Session()
    controller = SessionController(session, confirm=lambda title, text: True, synchronous=True)
    table = ResultsModel(session)
    assert controller.run(RunRequest(kernel="grid-stride", m=19, k=7, n=23, grid=(2,),
                                     block=(64,)))
    assert table.cell_text(0, 4) == \
        f"CPU emulation ({session.current.tier}), then GPU: DISAGREES"
    brush = table.data(table.index(0, 4), QtCore.Qt.ItemDataRole.ForegroundRole)
    assert brush.color().name() == "#c62828"
    assert session.current.verdict.passed  # (the first answer's verdict, shown as it was)


def test_a_machine_without_a_gpu_s_device_files_never_asks_numba_for_one(monkeypatch):
    """No /dev/nvidia0: auto is the CPU emulation as ever, nothing follows,
    and numba.cuda is never imported to find that out (0.2 s; 0.8 s with a
    driver)."""
    from kernels.backends import device

    monkeypatch.setattr(device, "might_have_gpu", lambda: False)
    device.gpu_present.cache_clear()
    try:
        result = run(request(**SMALL), gpu_follows=True)
        assert result.backend == "cpu" and result.follows is None
        assert result.backend_note.startswith("no CUDA device: CPU emulation")
        assert not device.gpu_present()
    finally:
        device.gpu_present.cache_clear()


def test_device_files_without_a_usable_gpu_are_one_sentence_after_the_first_answer(
        monkeypatch, stand_in_gpu):
    gpu = stand_in_gpu()
    monkeypatch.setattr(gpu, "available", lambda: False)
    first = run(request(**SMALL), gpu_follows=True)
    assert first.follows == "gpu"  # (asked only after the first answer)
    both = confirm(first)
    assert both.confirmation.error.startswith("numba finds no usable CUDA device")
    assert both.verdict.passed and both.timings == first.timings
