"""The lockstep analyses as clients of the records (analyses/record_clients.py):
each reads only the records it declares, and what a result says of the
analyses (its fields, result.json's keys, the verdict's counts, a FAIL's
reasons, the findings) comes from the one table of clients."""
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from kernels import line_findings, run
from kernels.analyses.lockstep_analysis import LockstepAnalysis
from kernels.analyses.record_clients import (
    CLIENTS,
    Declared,
    RecordClient,
    UndeclaredRecord,
    unmeasured_summary,
)
from kernels.request import RunRequest

KERNELS = Path(__file__).parent / "kernels"


def test_each_field_of_an_analysis_is_filled_by_one_client():
    assert [c.field for c in CLIENTS] == [f.name for f in fields(LockstepAnalysis)]
    keys = [c.key for c in CLIENTS]
    assert len(set(keys)) == len(keys)
    verdicts = [c.verdict_field for c in CLIENTS if c.verdict_field]
    assert len(set(verdicts)) == len(verdicts)
    # a check that can fail a run says why right values do not clear it
    assert all(c.check and c.why_right for c in CLIENTS if c.verdict_field)


def test_a_client_reads_only_the_records_it_declares():
    records = {"_tm_br": np.zeros(3), "_tm_granges_x": np.ones(2), "_tm_bar": np.zeros(1)}
    client = RecordClient("divergence", ("_tm_br", "_tm_granges_*"), None, "k", None)
    seen = Declared(records, client)
    assert seen["_tm_br"] is records["_tm_br"]
    assert seen["_tm_granges_x"] is records["_tm_granges_x"]
    assert seen.get("_tm_granges_y") is None  # declared, absent from this run
    assert sorted(seen) == ["_tm_br", "_tm_granges_x"]
    with pytest.raises(UndeclaredRecord, match="divergence client reads _tm_bar"):
        seen["_tm_bar"]
    # never taken for a record the run lacks, which get() would hide
    with pytest.raises(UndeclaredRecord):
        seen.get("_tm_bar")


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_a_run_says_of_each_analysis_what_its_client_reads(tier):
    # The missing barrier's 512 shared elements raced on (test_lockstep works
    # them out by hand), read by every client from its declared records only.
    request = RunRequest(kernel=None, kernel_file=str(KERNELS / "missing_barrier.py"),
                         m=16, k=16, n=16, grid=(1, 1), block=(16, 16), backend="cpu",
                         tier=tier)
    result = run(request)
    analysis = result.analysis
    assert analysis.races.count == 512
    assert result.verdict.shared_races == 512
    assert analysis.fault_counts() == {
        "barrier_divergence": 0, "shared_races": 512, "uninitialised_shared_reads": 0,
        "warp_hazards": 0, "global_races": 0}
    assert [check for check, _ in analysis.failed_checks()] == ["shared-memory race"]
    assert analysis.races.describe() in result.verdict.reasons
    summary = result.summary()
    # a run measured and one not have the same keys, in the same order
    measured = [key for key in summary if key in unmeasured_summary()]
    assert measured == list(unmeasured_summary())
    assert summary["shared_races"]["elements"] == 512
    races = [f for f in line_findings(result) if f.kind == "race"]
    assert sorted(f.line for f in races) == [15, 19] and all(f.fault for f in races)
