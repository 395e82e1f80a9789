"""The Diff summary's words about values: a count of changed values never
comes with a "largest change 0" (issue: "360 with a different value
(largest change 0)")."""
from dataclasses import replace

import numpy as np

from kernels import RunRequest, run
from kernels.analyses.diff import diff_runs


def grid_stride(**changes):
    return run(RunRequest(kernel="grid-stride", m=12, k=4, n=10, grid=(1,), block=(32,),
                          backend="cpu", **changes))


def test_values_unwritten_in_one_run_are_named_not_measured_as_no_change():
    # The naive kernel on half its grid leaves half of C unwritten (NaN).
    whole = run(RunRequest(kernel="naive-2d", m=30, k=4, n=30, grid=(2, 2), block=(16, 16),
                           backend="cpu"))
    half = run(RunRequest(kernel="naive-2d", m=30, k=4, n=30, grid=(1, 2), block=(16, 16),
                          backend="cpu"))
    unwritten = int(np.isnan(half.c).sum())
    assert unwritten and not np.isnan(whole.c).any()
    diff = diff_runs(whole, half)
    summary = diff.summary()
    assert "largest change" not in summary
    assert f"{unwritten:,} with a different value ({unwritten:,} NaN in one run only)" in summary
    assert diff.value_changed == diff.nan_in_one == unwritten


def test_tiny_changes_and_infinities_are_shown_as_they_are():
    first = grid_stride()
    c = first.c.copy()
    c[0, 0] = np.nextafter(c[0, 0], np.float32(np.inf))  # one float32 step: ~1e-7
    c[0, 1] += np.float32(3.1e-7) * max(1, abs(c[0, 1]))
    c[1, 0] = np.nan
    diff = diff_runs(first, replace(first, c=c))
    summary = diff.summary()
    assert "largest change 0" not in summary
    assert diff.value_changed == 3 and diff.nan_in_one == 1
    assert 0 < diff.max_value_change < 1e-5
    assert f"largest change {diff.max_value_change:.3g}; 1 NaN in one run only" in summary
    assert "e-0" in summary  # (3.1e-07 and the like, not rounded away)
    c[2, 0] = np.inf
    infinite = diff_runs(first, replace(first, c=c))
    assert "largest change inf; 1 NaN in one run only" in infinite.summary()


def test_no_changed_value_says_no_largest_change():
    first = grid_stride()
    summary = diff_runs(first, first).summary()
    assert "0 with a different value, of 120" in summary
