"""Where two runs differ: elements whose count, writer or value changed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ThreadMapError
from ..result import RunResult

SAME, VALUE, WRITER, COUNT = 0, 1, 2, 3
CATEGORY_NAMES = {SAME: "same", VALUE: "value changed", WRITER: "writer changed",
                  COUNT: "write count changed"}


@dataclass(frozen=True, eq=False)
class RunDiff:
    """Per element of C, the biggest change: count > writer > value > same."""

    category: np.ndarray  # int8, one of SAME / VALUE / WRITER / COUNT
    count_changed: int
    writer_changed: int
    value_changed: int
    elements: int
    #: the largest |change| of the values that are numbers in both runs
    #: (inf where one of them is infinite); 0.0 when there are none
    max_value_change: float
    #: of ``value_changed``, the elements that are NaN in one run only (an
    #: element one run never wrote): they have no change to measure
    nan_in_one: int = 0

    def summary(self) -> str:
        return (f"{self.count_changed:,} elements with a different write count, "
                f"{self.writer_changed:,} with a different writer, {self.value_changed:,} with "
                f"a different value{self._value_details()}, of {self.elements:,}")

    def _value_details(self) -> str:
        """`` (largest change 3.1e-07; 360 NaN in one run only)``.  A change
        is measured only between two numbers: 360 values changed with a
        "largest change 0" were all NaN in one run and a number in the other."""
        details = []
        if self.value_changed > self.nan_in_one:
            # .3g: a change below display precision still shows (3.1e-07, not 0)
            details.append(f"largest change {self.max_value_change:.3g}")
        if self.nan_in_one:
            details.append(f"{self.nan_in_one:,} NaN in one run only")
        return f" ({'; '.join(details)})" if details else ""


def diff_runs(first: RunResult, second: RunResult) -> RunDiff:
    """Compare two runs of the same shape of C.  A value counts as changed when
    the two differ at all (NaN equals NaN: both unwritten)."""
    shapes = [next((tuple(a.shape) for a in run.request.arguments
                    if getattr(a, "name", None) == run.output and hasattr(a, "shape")),
                   tuple(run.c.shape)) for run in (first, second)]
    if shapes[0] != shapes[1] and first.c.shape == second.c.shape:
        # (drawn alike, 2 x 6 x 4 and 3 x 4 x 4 as 12 x 4, but other elements)
        raise ThreadMapError(f"the runs' outputs have different shapes "
                             f"({' x '.join(map(str, shapes[0]))} and "
                             f"{' x '.join(map(str, shapes[1]))}): nothing to compare element "
                             "by element")
    if first.c.shape != second.c.shape:
        raise ThreadMapError(f"the runs have different shapes of C ({first.c.shape[0]} x "
                             f"{first.c.shape[1]} and {second.c.shape[0]} x {second.c.shape[1]}): "
                             "nothing to compare element by element")
    a, b = first.maps, second.maps
    count = a.writes != b.writes
    # Writers are compared as global thread ids of each launch.
    writer = (a.min_writer != b.min_writer) | (a.max_writer != b.max_writer)
    c1, c2 = first.c.astype(np.float64), second.c.astype(np.float64)
    both_nan = np.isnan(c1) & np.isnan(c2)
    value = (c1 != c2) & ~both_nan
    # NaN in one run and a number in the other has no size of change: counted
    # apart, not measured (the largest change had read 0 for 360 such values).
    nan_in_one = np.isnan(c1) != np.isnan(c2)
    measured = value & ~nan_in_one
    change = np.abs(c1[measured] - c2[measured])  # (inf where a value is infinite)
    category = np.full(first.c.shape, SAME, np.int8)
    category[value] = VALUE
    category[writer] = WRITER
    category[count] = COUNT
    return RunDiff(category, int(count.sum()), int(writer.sum()), int(value.sum()),
                   int(first.c.size), float(change.max()) if change.size else 0.0,
                   int(nan_in_one.sum()))
