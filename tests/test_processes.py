"""Nothing left behind (issue 18): SIGTERM, SIGINT and SIGHUP end a command's
children and pool workers within 2 s with one line; children die with their
parent even when it is killed outright."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_hunt import HANGS

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process tree from /proc (Linux)")


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, theirs, ...)."""
    below: set[int] = set()
    frontier = {pid}
    while frontier:
        children = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                    and parent_of(int(p.name)) in frontier}
        frontier = children - below
        below |= children
    return below


def kernel_children(pid: int) -> set[int]:
    found = set()
    for child in descendants(pid):
        try:
            if b"child_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(child)
        except OSError:
            pass
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "app.launcher", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def simulator_run(tmp_path: Path) -> subprocess.Popen:
    # Minutes in the simulator: it is still running when the signal comes.
    return start("run", "--kernel", "grid-stride", "--shape", "256x64x256", "--grid", "8",
                 "--block", "256", "--backend", "sim", "--yes", "--out", str(tmp_path / "out"))


@pytest.mark.sim
@pytest.mark.parametrize("signum,status,name", [
    (signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C"),
    (signal.SIGHUP, 129, "SIGHUP")])
def test_a_signal_ends_the_command_and_its_child_within_two_seconds(tmp_path, signum, status,
                                                                    name):
    command = simulator_run(tmp_path)
    try:
        assert wait_for(lambda: kernel_children(command.pid), 60), "no child started"
        time.sleep(1.0)  # the child at work
        children = descendants(command.pid)
        sent = time.monotonic()
        command.send_signal(signum)
        _, err = command.communicate(timeout=10)
        assert time.monotonic() - sent < 2.0
        assert command.returncode == status
        assert err.strip().splitlines() == [
            f"threadmap: stopped by {name}; child processes ended, earlier outputs kept"]
        assert wait_for(lambda: not any(alive(p) for p in children), 2.0)
    finally:
        command.kill()
        command.communicate()
    assert not (tmp_path / "out").exists()


@pytest.mark.sim
def test_a_child_dies_with_its_parent_even_when_the_parent_is_killed(tmp_path):
    command = simulator_run(tmp_path)
    try:
        assert wait_for(lambda: kernel_children(command.pid), 60), "no child started"
        children = kernel_children(command.pid)
        command.kill()  # SIGKILL: no handler, no exit function runs
        command.communicate(timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in children), 2.0)
    finally:
        command.kill()
        command.communicate()


@pytest.mark.parametrize("signum,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_check_ends_its_pool_and_kernels_within_two_seconds(tmp_path, signum, status):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for name in ("a", "b", "c"):
        (submissions / f"{name}.py").write_text(HANGS)
    command = start("check", str(submissions), "--shapes", "8x8x8", "--launches", "1:32",
                    "--workers", "2", "--out", str(tmp_path / "report"))
    try:
        assert wait_for(lambda: kernel_children(command.pid), 60), "no kernel started"
        time.sleep(1.0)
        everything = descendants(command.pid)
        assert len(everything) >= 3  # two pool workers and at least one kernel
        sent = time.monotonic()
        command.send_signal(signum)
        _, err = command.communicate(timeout=10)
        assert time.monotonic() - sent < 2.0
        assert command.returncode == status
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert wait_for(lambda: not any(alive(p) for p in everything), 2.0)
    finally:
        command.kill()
        command.communicate()


def test_check_s_workers_die_with_it_when_it_is_killed_outright(tmp_path):
    # (a review: after kill -9, the workers went on with their cases, then
    # printed tracebacks)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for name in ("a", "b"):
        (submissions / f"{name}.py").write_text(HANGS)
    command = start("check", str(submissions), "--shapes", "8x8x8", "--launches", "1:32",
                    "--workers", "2", "--out", str(tmp_path / "report"))
    try:
        assert wait_for(lambda: kernel_children(command.pid), 60), "no kernel started"
        everything = descendants(command.pid)
        command.kill()
        command.communicate(timeout=10)
        assert wait_for(lambda: not any(alive(p) for p in everything), 2.0)
    finally:
        command.kill()
        command.communicate()
