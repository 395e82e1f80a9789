"""A sweep that runs ahead: its configurations on a thread of their own while
the caller writes each one's files (``threadmap sweep``)."""
import time

import numpy as np

from kernels.sweep import run_sweep, run_sweep_ahead
from tests.conftest import request


def test_running_ahead_gives_the_cells_of_a_plain_sweep():
    base = request("grid-stride", (40, 24, 56), backend="cpu")
    ahead = list(run_sweep_ahead(base, (1, 3), (32, 96)))
    plain = list(run_sweep(base, (1, 3), (32, 96)))
    assert [(c.blocks, c.threads) for c in ahead] == [(c.blocks, c.threads) for c in plain]
    for mine, theirs in zip(ahead, plain):
        assert mine.result.verdict.word == theirs.result.verdict.word == "PASS"
        assert np.array_equal(mine.result.maps.min_writer, theirs.result.maps.min_writer)


def test_files_are_never_written_while_a_configuration_times_itself(monkeypatch):
    """The caller writes holding TIMING; the runs take it to time themselves:
    no timed run overlaps the writing (which would slow it, and its time)."""
    from kernels.backends import cpu
    from kernels.backends.common import TIMING

    timed, writing = [], []
    run_ranges = cpu._run_ranges

    def logged(function, workers, ranges, job, layout, mode, *args, **kw):
        started = time.monotonic()
        try:
            return run_ranges(function, workers, ranges, job, layout, mode, *args, **kw)
        finally:
            if mode == "plain":
                timed.append((started, time.monotonic()))

    monkeypatch.setattr(cpu, "_run_ranges", logged)
    base = request("grid-stride", (64, 16, 64), backend="cpu")
    for _ in run_sweep_ahead(base, (1, 2, 4), (32, 64)):
        with TIMING:
            started = time.monotonic()
            busy = started + 0.15
            while time.monotonic() < busy:  # a long write, on the CPU
                pass
            writing.append((started, time.monotonic()))
    assert len(writing) == 6 and len(timed) >= 6
    overlaps = [(w, t) for w in writing for t in timed if t[0] < w[1] and w[0] < t[1]]
    assert overlaps == []
