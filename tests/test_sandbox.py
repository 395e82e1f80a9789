"""Defence in depth (issue 18): the child that compiles and runs a kernel is
sandboxed, the cache it loads compiled code from is the user's alone, and a
machine without a display gets a sentence, not an abort."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def landlock_abi() -> int:
    try:
        import landlockpy
        return landlockpy.abi_version()
    except (ImportError, OSError):
        return 0


def test_a_child_gets_its_own_empty_folder_and_limits(tmp_path):
    from kernels.backends import sandbox

    workdir = sandbox.make_workdir()
    try:
        assert stat.S_IMODE(workdir.stat().st_mode) == 0o700
        assert [p.name for p in workdir.iterdir()] == [sandbox.OWNER_FILE]  # (its lock only)
        env = sandbox.child_environment(workdir, tmp_path / "cache" / "sandboxed" / "k")
        assert env["HOME"] == env["TMPDIR"] == str(workdir)
        assert env["THREADMAP_SANDBOX_CACHE"] == str(tmp_path / "cache" / "sandboxed" / "k")
    finally:
        sandbox.remove_workdir(workdir)
    assert not workdir.exists()
    budget = sandbox.cpu_budget(10.0)
    assert budget >= 10.0 + sandbox.CPU_SLACK_SECONDS


PROBE = textwrap.dedent('''
    import os, socket, sys
    from pathlib import Path
    from kernels.backends import sandbox

    inside, outside = Path(sys.argv[1]), Path(sys.argv[2])
    applied = sandbox.enter([inside], simulator=True)
    print("limits", ",".join(applied["limits"]))
    print("landlock", applied["landlock"])
    for target in (inside / "ok", outside / "escaped"):
        try:
            target.write_text("x")
            print("wrote", target.name)
        except OSError as exc:
            print("refused", target.name, exc.errno)
    print("exec", os.system("true"))
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except OSError as exc:
        print("connect", exc.errno)
''')


def test_the_sandbox_limits_the_process_that_enters_it(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    done = subprocess.run([sys.executable, "-c", PROBE, str(inside), str(outside)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "limits address space,file size,processes,core files" in lines
    assert "wrote ok" in lines
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: the child runs with resource limits only")
    assert "landlock True" in lines
    assert "refused escaped 13" in lines and not (outside / "escaped").exists()
    assert "exec 0" not in lines  # no program may be executed
    if landlock_abi() >= 4:
        assert "connect 13" in lines  # nor any TCP connection made


def test_a_sandboxed_child_writes_only_its_kernel_s_own_cache(tmp_path):
    # (a red-team review: a child that could write the shared cache planted a
    # pickle in numba's index of a built-in kernel, which the next unsandboxed
    # ``threadmap run`` loaded: a command run on the host)
    from tests.test_custom_kernels import ROW_X

    kernel = tmp_path / "student.py"
    kernel.write_text(ROW_X)
    cache = tmp_path / "cache"
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(kernel), "--shape", "16x8x16", "--backend", "cpu", "--tier",
                           "compiled", "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    emulations = sorted(p.relative_to(cache).parts[0] for p in cache.rglob("tm_gen_cpu_*.py"))
    assert emulations == ["sandboxed"]  # compiled in the child, kept in its own folder
    # (its one kernel folder; beside it, the stamp of the last pruning)
    own, = [f for f in (cache / "sandboxed").iterdir() if f.is_dir()]
    assert any((own / "numba").rglob("*.nbi"))  # numba's index files there too
    assert not any((cache / "generated").rglob("*.nbi"))
    from kernels.backends import sandbox
    from kernels.cache import SANDBOX_ENV

    child = sandbox.child_environment(tmp_path / "work", own)
    assert child[SANDBOX_ENV] == str(own) and child["NUMBA_CACHE_DIR"] == str(own / "numba")
    probe = subprocess.run(
        [sys.executable, "-c", "from kernels.cache import cache_dir; print(cache_dir())"],
        cwd=ROOT, env=dict(os.environ, **{SANDBOX_ENV: str(own)}), capture_output=True,
        text=True, check=True)
    assert probe.stdout.strip() == str(own)


def test_the_default_cache_is_private_and_never_moved(tmp_path, monkeypatch):
    from kernels import cache

    monkeypatch.delenv("THREADMAP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(cache, "_checked", {})
    (tmp_path / "xdg" / "threadmap").mkdir(parents=True)
    os.chmod(tmp_path / "xdg" / "threadmap", 0o777)  # opened up by someone
    folder = cache.cache_dir()
    assert folder == tmp_path / "xdg" / "threadmap" / "generated"
    for path in (folder, folder.parent):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


@pytest.mark.parametrize("make,message", [
    (lambda base: base.write_text("a file"), "is a file, not a folder"),
    (lambda base: (base.mkdir(), os.chmod(base, 0o777)), "can be written by other users"),
])
def test_a_cache_folder_that_cannot_be_trusted_is_an_error_that_names_it(tmp_path, make,
                                                                         message):
    base = tmp_path / "cache"
    make(base)
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(base))
    for args in (["cache"], ["cache", "--clear"],
                 ["run", "--kernel", "naive-2d", "--shape", "8x8x8", "--out",
                  str(tmp_path / "out")]):
        done = subprocess.run([sys.executable, "-m", "app.launcher", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        line, = done.stderr.strip().splitlines()
        assert "$THREADMAP_CACHE_DIR" in line and str(base) in line and message in line


def test_a_garbled_numba_cache_is_compiled_afresh(tmp_path):
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(tmp_path / "cache"))
    args = [sys.executable, "-m", "app.launcher", "run", "--kernel", "naive-2d", "--shape",
            "16x8x16", "--backend", "cpu", "--tier", "compiled", "--out", str(tmp_path / "out")]
    first = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    compiled = list((tmp_path / "cache" / "generated" / "__pycache__").glob("*.nb*"))
    assert compiled
    for path in compiled:
        path.write_bytes(os.urandom(64))
    again = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("PASS")


def test_no_display_is_a_sentence_not_an_abort():
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "app.launcher"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    assert "no display to open the window on (DISPLAY is not set)" in line
    assert "xvfb-run" in line
    assert time.monotonic() - started < 30


def test_a_killed_parents_child_folders_are_removed_and_live_ones_kept(tmp_path):
    """A folder's owner holds a lock on its .owner file while it lives: a
    folder whose lock can be taken was left by a process that is gone (pids
    cannot say so across containers sharing a temporary folder)."""
    from kernels.backends import sandbox

    killed = subprocess.run(
        [sys.executable, "-c", "from kernels.backends import sandbox; "
         "print(sandbox.make_workdir())"], cwd=ROOT, capture_output=True, text=True,
        check=True)
    orphan = Path(killed.stdout.strip())  # (its process ended without removing it)
    (orphan / "result-1-1-0.bin").write_bytes(b"x" * 1000)
    live = sandbox.make_workdir()  # (this process's: held)
    unowned = orphan.parent / "threadmap-child-not-ours"
    unowned.mkdir(exist_ok=True)
    try:
        sandbox._remove_orphans(orphan.parent)
        assert not orphan.exists() and live.exists() and unowned.exists()
    finally:
        sandbox.remove_workdir(live)
        unowned.rmdir()


NEIGHBOUR_PROBE = textwrap.dedent('''
    import sys
    from pathlib import Path
    from kernels.backends import sandbox

    own, neighbour = Path(sys.argv[1]), Path(sys.argv[2])
    applied = sandbox.enter([own], simulator=False)
    print("landlock", applied["landlock"])
    try:
        with open(neighbour, "r+b") as handle:
            handle.write(b"forged")
        print("wrote the neighbour's file")
    except OSError as exc:
        print("refused", exc.errno)
    with open("/dev/null", "w") as null:
        null.write("x")
    print("wrote /dev/null")
    (own / "result-1-1-0.bin").write_bytes(b"own")
    print("wrote its own")
''')


def test_a_child_cannot_write_shared_memory_in_dev_shm(tmp_path):
    """/dev's devices may be written (/dev/null, a GPU's files), but not
    /dev/shm beneath it: other processes' shared memory."""
    from kernels.backends import sandbox

    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: the child runs with resource limits only")
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm here")
    own = sandbox.make_workdir()
    target = Path(f"/dev/shm/threadmap-test-{os.getpid()}")
    target.write_bytes(b"another process's memory")
    try:
        done = subprocess.run([sys.executable, "-c", NEIGHBOUR_PROBE, str(own), str(target)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "landlock True" in lines
        assert "refused 13" in lines and target.read_bytes() == b"another process's memory"
        assert "wrote /dev/null" in lines and "wrote its own" in lines
    finally:
        target.unlink()
        sandbox.remove_workdir(own)


FOLDER_CHURN = textwrap.dedent('''
    import os, sys, tempfile
    from pathlib import Path
    from kernels.backends import sandbox

    tempfile.tempdir = sys.argv[1]
    vanished = 0
    for _ in range(int(sys.argv[2])):
        path = sandbox.make_workdir()  # (removes the orphans it finds first)
        for _ in range(3):
            if not (path / sandbox.OWNER_FILE).exists():
                vanished += 1
                break
            os.sched_yield()
        sandbox.remove_workdir(path)
    print(vanished)
''')


def test_no_child_folder_vanishes_while_many_workers_make_and_remove_theirs(tmp_path):
    """``check`` with many workers: each starts children whose folders are
    made while the others remove orphans.  A folder made under its final
    name stood unlocked for a moment, was taken for an orphan and removed
    under its live child ("cannot write /tmp/threadmap-child-...", seen
    with 16 workers); none may vanish."""
    workers = [subprocess.Popen([sys.executable, "-c", FOLDER_CHURN, str(tmp_path), "400"],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
               for _ in range(6)]
    vanished = [int(w.communicate(timeout=120)[0]) for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert vanished == [0] * 6
    assert list(tmp_path.iterdir()) == []  # (each removed its own; none left half made)


STAND_IN_CUDA = textwrap.dedent('''
    """Started in the child (as sitecustomize): a stand-in for numba.cuda,
    whose current_context records that the context was made, from a file
    outside the child's folder (under Landlock that write fails), and fails
    as the driver would when the test asks for that."""
    import os, sys, time, types

    def current_context():
        failure = os.environ.get("STAND_IN_FAILURE")
        if failure:
            raise RuntimeError(failure)
        with open(os.environ["STAND_IN_MARKER"], "w") as file:
            file.write(repr(time.monotonic()))
        return object()

    stand_in = types.ModuleType("numba.cuda")
    stand_in.current_context = current_context
    sys.modules["numba.cuda"] = stand_in
''')


def stand_in_cuda(tmp_path, monkeypatch) -> Path:
    """numba.cuda replaced by :data:`STAND_IN_CUDA` in the children started
    from now on; the file its context writes."""
    folder = tmp_path / "stand_in"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(STAND_IN_CUDA)
    monkeypatch.setenv("PYTHONPATH", str(folder))
    marker = tmp_path / "context-made"
    monkeypatch.setenv("STAND_IN_MARKER", str(marker))
    return marker


def test_a_gpu_child_makes_its_cuda_context_before_it_enters_the_sandbox(tmp_path, monkeypatch):
    """Landlock applied before cuInit makes it fail (CUDA_ERROR_OPERATING_SYSTEM
    on an H200 under gVisor): the GPU child makes its context first, then
    enters the same sandbox as every child; a CPU child makes none."""
    from kernels.backends.child import ChildRunner
    from kernels.engine import prepare
    from tests.conftest import request

    marker = stand_in_cuda(tmp_path, monkeypatch)
    # (the run itself on the instant tier, which needs no numba: the stand-in has none)
    resolved, _, note = prepare(request(shape=(8, 4, 8), grid=(2,), block=(32,), backend="cpu",
                                        tier="instant"))
    for gpu in (False, True):
        child = ChildRunner(simulator=False, gpu=gpu)
        try:
            result = child.run(resolved, note)
        finally:
            child.stop()
        assert result.verdict.passed
        report = child.sandbox
        if not gpu:
            assert report["cuda_context"] is None and not marker.exists()
            continue
        assert report["cuda_context"]["made"], report
        made_at = float(marker.read_text())  # (written from the child: outside its folder)
        assert made_at <= report["cuda_context"]["at"]
        assert report["cuda_context"]["at"] < report["entered_at"]
        if landlock_abi() >= 1:
            assert report["landlock"]  # (the full sandbox, entered after the context)


def test_a_gpu_child_whose_context_fails_says_why_in_one_sentence(tmp_path, monkeypatch):
    from kernels.backends.child import ChildRunner
    from kernels.engine import prepare
    from kernels.errors import BackendUnavailable
    from tests.conftest import request

    stand_in_cuda(tmp_path, monkeypatch)
    monkeypatch.setenv("STAND_IN_FAILURE", "Call to cuInit results in\n CUDA_ERROR_NO_DEVICE (100)")
    resolved, _, note = prepare(request(shape=(8, 4, 8), grid=(2,), block=(32,), backend="cpu",
                                        tier="instant"))
    child = ChildRunner(simulator=False, gpu=True)
    try:
        with pytest.raises(BackendUnavailable) as raised:
            child.run(resolved.with_(backend="gpu"), note)
    finally:
        child.stop()
    assert str(raised.value) == ("the GPU could not be initialised: Call to cuInit results in "
                                 "CUDA_ERROR_NO_DEVICE (100)")


def test_the_cpu_child_s_address_space_is_limited_and_a_gpu_child_s_is_not(tmp_path):
    """The CPU emulation's child holds a kernel's local arrays once per thread:
    without a limit, a 300-byte file had asked for 16 GiB (issue 42).  An
    allocation past the limit is a MemoryError there, which the child
    reports as running out of memory."""
    probe = textwrap.dedent('''
        import sys
        import numpy as np
        from kernels.backends import sandbox

        applied = sandbox.enter([], gpu=sys.argv[1] == "gpu")
        print("limits", ",".join(applied["limits"]))
        try:
            np.empty(sandbox.address_space_limit() + 2**30, np.uint8)
            print("allocated")
        except MemoryError:
            print("MemoryError")
    ''')
    for kind, expected in (("cpu", "MemoryError"), ("gpu", "allocated")):
        done = subprocess.run([sys.executable, "-c", probe, kind], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert ("address space" in lines[0]) == (kind == "cpu"), lines
        assert lines[1] == expected, lines


def test_an_isolated_cpu_run_s_child_is_limited_in_address_space(tmp_path):
    from kernels import RunRequest, run
    from kernels.backends.child import runner
    from tests.test_custom_kernels import ROW_X

    path = tmp_path / "row.py"
    path.write_text(ROW_X)
    result = run(RunRequest(kernel=None, kernel_file=str(path), m=16, k=8, n=16,
                            grid=(1, 1), block=(16, 16), backend="cpu"), isolate=True)
    assert result.verdict.passed, result.verdict.reasons
    assert "address space" in runner(simulator=False).sandbox["limits"]
