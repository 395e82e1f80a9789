"""The reference time is the library's true time, checked against an
independent timing of the same call, also while the machine is busy."""
import subprocess
import sys
import timeit

import pytest
from threadpoolctl import threadpool_limits

from kernels.engine import time_reference
from kernels.inputs import make_inputs


def independent(a, b) -> float:
    """The best of many single calls, with the BLAS pool as it is and with one
    thread: what numpy can do for this product on this machine now."""
    best = []
    for threads in (None, 1):
        with threadpool_limits(limits=threads, user_api="blas"):
            a @ b
            best.append(min(timeit.repeat(lambda: a @ b, number=1, repeat=50)))
    return min(best)


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "one core busy"])
def test_reference_time_agrees_with_an_independent_timing(busy):
    # The seed's 128 x 256 x 128 float32: ~50-90 us on this kind of machine.
    a, b = make_inputs("random", 128, 256, 128, "float32")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        reported = time_reference(a, b, on_gpu=False)
        truth = independent(a, b)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    # A median against a best-of-50: within 3x, never the 200x of BLAS threads
    # waiting on each other.
    assert 0.8 * truth <= reported.seconds <= 3 * truth, (reported.seconds, truth)
    assert "BLAS thread" in reported.method


@pytest.mark.parametrize("call_s, budget, repeats, expected", [
    (0.13, 0.3, 5, 3),   # 4096 x 4096 at K = 16: the first call, then 2 within 0.3 s
    (0.05, 0.125, 9, 3),  # the first, then 2 calls: a third would end at 0.15 > 0.125
    (0.01, 2.0, 5, 5),   # short calls: as many as asked
    (3.0, 2.0, 5, 2),    # one call past the budget: no more
])
def test_median_time_stops_before_a_call_would_pass_its_budget(monkeypatch, call_s, budget,
                                                                repeats, expected):
    """A timed call is not started when, at the mean call's length, it would
    end past the budget (the earlier rule stopped only once past it, one call
    too late).  The clock is a fake one that each call advances."""
    from kernels.backends import common

    clock = [100.0]
    monkeypatch.setattr(common.time, "perf_counter", lambda: clock[0])

    def call() -> float:
        clock[0] += call_s
        return call_s

    median, samples = common.median_time(call, repeats, budget=budget, earlier=(call_s,))
    assert samples == expected
    assert median == pytest.approx(call_s)
