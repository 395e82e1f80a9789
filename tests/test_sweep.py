"""A sweep that runs ahead: its configurations on a thread of their own while
the caller writes each one's files (``threadmap sweep``)."""
import json
import time

import numpy as np
import pytest

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


# -- launches of two dimensions (issue 20, point 3) --------------------------------------

def test_lists_take_2d_entries_name_a_malformed_one_and_keep_duplicates_once():
    from kernels import ThreadMapError
    from kernels.sweep import parse_list

    assert parse_list("1x1, 2x2,4,2X2,4", "--grids") == ((1, 1), (2, 2), (4,))
    for text, entry in (("1x1,2y2", "'2y2'"), ("4,0", "'0'"), ("8x8x8", "'8x8x8'"),
                        ("16x", "'16x'")):
        with pytest.raises(ThreadMapError, match=f"--grids: {entry} is not N or NxM"):
            parse_list(text, "--grids")
    with pytest.raises(ThreadMapError, match="--blocks is empty"):
        parse_list(" , ", "--blocks")


def test_a_2d_sweep_places_each_launch_and_checks_it():
    from kernels.sweep import run_sweep

    # tiled needs 16 x 16 blocks; C is 40 x 24, its y blocks run down the rows
    base = request("tiled", (40, 16, 24), backend="cpu")
    cells = list(run_sweep(base, ((1, 1), (2, 2), (2, 3)), ((16, 16),)))
    assert [c.stem for c in cells] == ["grid1x1_block16x16", "grid2x2_block16x16",
                                       "grid2x3_block16x16"]
    assert [(c.blocks, c.threads, c.label) for c in cells] == [
        (1, 256, "1x1 x 16x16"), (4, 256, "2x2 x 16x16"), (6, 256, "2x3 x 16x16")]
    # one 16 x 16 block covers 256 of 960 elements; 2 x 2 blocks cover 32 of
    # the 40 rows (768 elements); 2 x 3 blocks cover all of C
    assert [c.result.verdict.unwritten for c in cells] == [704, 192, 0]
    assert cells[2].result.verdict.passed
    assert cells[0].row()["grid"] == "1x1" and cells[0].row()["block"] == "16x16"


def test_a_2d_kernel_s_defaults_are_2d_and_its_own_block():
    from kernels.sweep import sweep_defaults

    assert sweep_defaults(request("grid-stride", (8, 8, 8))) == (
        "1,2,4,8,16,32", "32,64,128,256,512,1024")
    assert sweep_defaults(request("naive-2d", (8, 8, 8))) == (
        "1x1,2x2,4x4,8x8,16x16", "8x8,16x16,32x8,32x32")
    assert sweep_defaults(request("tiled", (8, 8, 8))) == ("1x1,2x2,4x4,8x8,16x16", "16x16")


def test_a_sweeps_requests_read_the_memory_available_once(monkeypatch):
    # (64 readings of /proc/meminfo on the GUI thread stalled a busy
    # machine's window; a reading is used again for half a second)
    from kernels import request as request_module
    from kernels.sweep import sweep_requests

    readings = []
    monkeypatch.setattr(request_module, "_last_reading", (-1.0, None))
    monkeypatch.setattr(request_module, "_read_available_memory",
                        lambda: readings.append(1) or 8 << 30)
    requests = sweep_requests(request("grid-stride", shape=(64, 8, 64)),
                              [(g,) for g in (1, 2, 4, 8, 16, 32, 64, 128)],
                              [(b,) for b in (32, 64, 96, 128, 160, 256, 512, 1024)])
    assert len(requests) == 64 and len(readings) == 1
    monkeypatch.setattr(request_module, "_last_reading", (-1.0, None))
    monkeypatch.setattr(request_module, "_read_available_memory", lambda: 1 << 20)
    with pytest.raises(Exception, match="more than 60% of the 1.0 MiB available"):
        sweep_requests(request("grid-stride", shape=(512, 8, 512)), [(1,)], [(32,)])


def _sweep_into(out, *args):
    from app.launcher import main
    return main(["sweep", "--backend", "cpu", "--shape", "16x16x16", "--out", str(out), *args])


def test_a_sweep_replaces_the_previous_one_whole_and_leaves_other_files(tmp_path, capsys):
    """The folder holds one sweep: a second one with --no-images had left the
    first's images beside a summary of other configurations."""
    out = tmp_path / "sweep"
    assert _sweep_into(out, "--grids", "1,2", "--blocks", "32") == 0
    (out / "notes.txt").write_text("mine")
    assert _sweep_into(out, "--grids", "4", "--blocks", "64", "--no-images") == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "grid4_block64.npz", "notes.txt", "reference.npz", "summary.csv", "summary.json"]
    assert capsys.readouterr().out.rstrip().endswith("and 1 configuration")


def test_a_sweep_cut_short_leaves_the_previous_sweep_as_it_was(tmp_path, monkeypatch):
    """Cut short, it had overwritten the previous sweep's files of the same
    names (their arrays of another shape) beside the previous summary, and
    said 'earlier outputs kept'."""
    import kernels.sweep as sweep

    out = tmp_path / "sweep"
    assert _sweep_into(out, "--grids", "1,2", "--blocks", "32") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    finished = sweep.SweepFolder.finish

    def interrupted(self, cells, occupancy=None):
        finished(self, cells, occupancy)
        raise KeyboardInterrupt  # (Ctrl-C, every configuration written)

    monkeypatch.setattr(sweep.SweepFolder, "finish", interrupted)
    assert _sweep_into(out, "--grids", "1,2,4", "--blocks", "32", "--shape", "24x8x24") == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # (no staging left)


@pytest.mark.parametrize("summary", ['{"maps": null}', '{"maps": 5}', "[" * 100000,
                                     '{"maps": {"../victim": {}, "reference": {}}}'])
def test_a_previous_summary_that_does_not_read_removes_nothing_and_loses_nothing(
        tmp_path, summary):
    """summary.json is read as untrusted: one that is not a sweep's had
    crashed the sweep at its very end (and lost it), and any name in it could
    have removed a file of the user's."""
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "summary.json").write_text(summary)
    mine = ["reference.png", "victim.npz"]
    if '"reference"' not in summary:  # (not a sweep's summary: its contact sheet is not one)
        mine.append("contact_sheet.png")
    for name in mine:
        (out / name).write_text("mine")
    (tmp_path / "victim.npz").write_text("mine")
    assert _sweep_into(out, "--grids", "1", "--blocks", "32", "--no-images") == 0
    assert all((out / name).read_text() == "mine" for name in mine)
    assert (tmp_path / "victim.npz").exists()
    assert (out / "grid1_block32.npz").exists()
    assert json.loads((out / "summary.json").read_text())["configurations"][0]["grid"] == "1"
