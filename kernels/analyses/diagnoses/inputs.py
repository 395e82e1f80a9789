"""The seed's lesson as a rule: a test on all-ones matrices would have passed."""
from __future__ import annotations

from ...words import counted
from .diagnosis import Diagnosis
from .source import Context


def all_ones_would_pass(ctx: Context) -> Diagnosis | None:
    """Wrong values on random inputs, every value right on all-ones inputs at
    the same launch (each element of A @ B is then K, whichever row and
    column a thread takes).  Evidence: the two runs' error figures."""
    ones = ctx.ones_errors
    errors = ctx.result.verdict.errors
    if ones is None or not errors.wrong or ones.wrong or ones.non_finite:
        return None
    kernel = ctx.result.kernel
    lines = (kernel.first_line,) if kernel is not None else ()
    k = ctx.result.request.k
    return Diagnosis(
        "all-ones-would-pass", lines,
        f"on all-ones inputs every element of {ctx.output} is {k:,} (K) whichever row of A "
        f"and column of B a thread takes, so a test that checks the values on all-ones "
        f"matrices sees nothing wrong; on random inputs {counted(errors.wrong, 'element')} "
        f"are wrong",
        f"random inputs: {counted(errors.wrong, 'element')} of {ctx.output} off their bound; "
        "all-ones inputs, same launch: every element within its bound",
        "test on random inputs (ThreadMap's default, --pattern random), never on all-ones")
