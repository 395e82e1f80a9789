"""Long runs report progress and stop soon after a cancel."""
import threading
import time

import pytest

from kernels import RunCancelled, run
from tests.conftest import request

BIG = dict(kernel="grid-stride", shape=(384, 384, 384), grid=(4,), block=(256,), backend="cpu")


def test_progress_is_reported_and_reaches_one():
    seen = []
    run(request(kernel="grid-stride", shape=(64, 64, 64), backend="cpu"),
        progress=lambda fraction, message: seen.append((fraction, message)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("warps" in message for _, message in seen)


def test_cancel_in_process_stops_between_chunks():
    cancelled_at = []

    def cancel():
        return bool(cancelled_at)

    def progress(fraction, message):
        if "instrumented" in message and not cancelled_at:
            cancelled_at.append(time.perf_counter())

    with pytest.raises(RunCancelled):
        run(request(**BIG), progress=progress, cancel=cancel)
    assert time.perf_counter() - cancelled_at[0] < 0.5


def test_cancel_stops_a_single_long_block_from_inside():
    # One block of 1024 threads on 512^3: the whole recording run is one call
    # of the compiled block function (~1 s); cancel must not wait for it.
    cancelled_at = []

    def progress(fraction, message):
        if "instrumented" in message and not cancelled_at:
            cancelled_at.append(time.perf_counter())

    with pytest.raises(RunCancelled):
        run(request(kernel="grid-stride", shape=(512, 512, 512), grid=(1,), block=(1024,),
                    backend="cpu"), progress=progress, cancel=lambda: bool(cancelled_at))
    assert time.perf_counter() - cancelled_at[0] < 0.5


@pytest.mark.parametrize("backend,isolate", [("cpu", True), ("sim", False)])
def test_cancel_ends_a_child_process_run(backend, isolate):
    flag = threading.Event()
    started = []

    def progress(fraction, message):
        if not started:
            started.append(time.perf_counter())
            threading.Timer(0.2, flag.set).start()

    shape = (384, 384, 384) if backend == "cpu" else (64, 64, 64)
    begun = time.perf_counter()
    with pytest.raises(RunCancelled):
        run(request(kernel="grid-stride", shape=shape, grid=(8,), block=(128,), backend=backend),
            progress=progress, cancel=flag.is_set, isolate=isolate)
    assert flag.is_set()
    # Cancel acts within the child-poll interval, however busy the child is.
    assert time.perf_counter() - begun < 30
