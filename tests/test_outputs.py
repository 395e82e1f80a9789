"""Nothing lost (issue 18): outputs are written whole or not at all, a run's
pair together, one command at a time per folder; ``load_maps`` trusts nothing."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kernels.maps_file import MapsFileError, load_maps, save_maps
from kernels.outputs import OutputError, OutputFolder, interrupts_deferred, write_atomically

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "--kernel", "naive-2d", "--shape", "24x8x16", "--backend", "cpu"]


def threadmap(*args, limit_file_bytes: int | None = None, timeout: float = 300):
    def limit() -> None:
        if limit_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run([sys.executable, "-m", "app.launcher", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A folder with a run's result.json and maps.npz in it."""
    out = tmp_path_factory.mktemp("earlier") / "out"
    done = threadmap(*RUN, "--seed", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_a_full_disk_keeps_the_previous_pair_and_says_so(earlier, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name, data in contents(earlier).items():
        (out / name).write_bytes(data)
    before = contents(out)
    # The kernel writes nothing but its outputs; past 2 KB a write fails as
    # on a full disk (EFBIG here: the same path through the code).
    done = threadmap(*RUN, "--seed", "2", "--out", str(out), limit_file_bytes=2048)
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    assert "cannot write" in line and "maps.npz" in line
    assert f"the previous maps.npz and result.json in {out} are kept" in line
    assert contents(out) == before  # and no temporary file left beside them


def test_an_interrupted_write_keeps_the_previous_pair(earlier, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    for name, data in contents(earlier).items():
        (out / name).write_bytes(data)
    before = contents(out)
    import kernels.maps_file

    original = kernels.maps_file.save_maps

    def interrupted(path, arrays, dtype, run_id=None):
        with zipfile.ZipFile(path, "w") as archive:  # three maps written, then Ctrl-C
            for name in list(arrays)[:3]:
                archive.writestr(f"{name}.npy", b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(kernels.maps_file, "save_maps", interrupted)
    from kernels import RunRequest, run
    from kernels.run_files import write_outputs

    result = run(RunRequest(kernel="naive-2d", m=24, k=8, n=16, grid=(2, 2), block=(16, 16),
                            backend="cpu", seed=3))
    with pytest.raises(KeyboardInterrupt):
        write_outputs(result, out)
    monkeypatch.setattr(kernels.maps_file, "save_maps", original)
    assert contents(out) == before


def test_a_ctrl_c_while_files_are_renamed_waits_until_both_are_in_place(tmp_path, monkeypatch):
    out = tmp_path / "out"
    renamed = []
    real_replace = os.replace

    def replace(source, target):
        if not renamed:
            os.kill(os.getpid(), signal.SIGINT)  # arrives between the two renames
        real_replace(source, target)
        renamed.append(Path(target).name)

    with pytest.raises(KeyboardInterrupt):
        with OutputFolder(out) as folder:
            folder.write_text("maps.npz", "new maps")
            folder.write_text("result.json", "new result")
            monkeypatch.setattr(os, "replace", replace)
            folder.publish()
    monkeypatch.setattr(os, "replace", real_replace)
    assert renamed == ["maps.npz", "result.json"]
    assert contents(out) == {"maps.npz": b"new maps", "result.json": b"new result"}


def test_interrupts_are_held_back_only_for_the_block():
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            held = True
    assert held
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_command_into_a_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "out"
    with OutputFolder(out):
        done = threadmap(*RUN, "--out", str(out))
        assert done.returncode == 2
        assert "another threadmap command is writing into it" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    done = threadmap(*RUN, "--out", str(out))  # once the first is done, it runs
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} == {"result.json", "maps.npz"}


def test_write_atomically_leaves_the_old_file_on_failure(tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"old")

    def fails(temporary: Path) -> None:
        temporary.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="the disk is full; the previous file is kept"):
        write_atomically(path, fails)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["image.png"]
    write_atomically(path, b"new")
    assert path.read_bytes() == b"new"


# -- load_maps trusts nothing ---------------------------------------------------------------

def test_the_pair_is_named_by_one_run(earlier, tmp_path):
    layout = json.loads((earlier / "result.json").read_text())["maps"]
    maps = load_maps(earlier / "maps.npz", layout)
    assert maps["count"].shape == (24, 16)
    other = tmp_path / "other"
    done = threadmap(*RUN, "--seed", "4", "--out", str(other))
    assert done.returncode == 0
    with pytest.raises(MapsFileError, match="is not the maps file of its result.json"):
        load_maps(other / "maps.npz", layout)


def test_a_hostile_result_json_is_refused_before_anything_is_allocated(earlier):
    layout = json.loads((earlier / "result.json").read_text())["maps"]
    huge = json.loads(json.dumps(layout))
    # (a map left out, as earlier versions wrote a map that was zero everywhere)
    huge["left_out"] = {"atomics": {"why": "zero everywhere", "value": 0, "dtype": "<i4",
                                    "shape": [400_000, 200_000]}}  # 298 GiB of int32
    with pytest.raises(MapsFileError, match="asks for .*GiB in all"):
        load_maps(earlier / "maps.npz", huge)
    escape = json.loads(json.dumps(layout))
    escape["shared"] = {"reference": {"file": "../../../../etc/passwd", "dtype": "<f8"}}
    with pytest.raises(MapsFileError, match="not a file beside it"):
        load_maps(earlier / "maps.npz", escape)
    wrong = json.loads(json.dumps(layout))
    wrong["stored"]["count"]["shape"] = [7, 7]
    with pytest.raises(MapsFileError, match="holds 384 elements, not the 49"):
        load_maps(earlier / "maps.npz", wrong)


def test_a_npy_header_asking_for_terabytes_is_refused(tmp_path):
    path = tmp_path / "maps.npz"
    header = {"descr": "<i4", "fortran_order": False, "shape": (1 << 20, 1 << 20, 1 << 1)}
    from numpy.lib import format as npy_format

    with zipfile.ZipFile(path, "w") as archive:
        with archive.open("count.npy", "w") as member:
            npy_format.write_array_header_1_0(member, header)
            member.write(b"\0" * 64)
    assert path.stat().st_size < 400
    with pytest.raises(MapsFileError, match="its header asks for 8,796,093,022,208 bytes"):
        load_maps(path)


def test_runs_whose_lengths_wrap_around_are_refused(tmp_path):
    # (a red-team review: int64 lengths of 2**62 summed to the map's size, and
    # np.repeat overran its buffer: a segmentation fault)
    path = tmp_path / "maps.npz"
    runs = np.zeros((2, 4097), np.int64)
    runs[1, :4] = 2**62
    runs[1, 4] = 64
    save_maps(path, {"count": np.zeros((1, 1), np.int32) + 1}, "float32", run_id="r")
    with zipfile.ZipFile(path, "w") as archive:
        archive.comment = b"threadmap run r"
        with archive.open("count.npy", "w") as member:
            np.save(member, runs)
    layout = {"run_id": "r", "stored": {"count": {"stored": "<i8", "dtype": "<i4",
                                                  "shape": [8, 8], "encoding": "runs"}}}
    with pytest.raises(MapsFileError, match="do not add up to its shape"):
        load_maps(path, layout)


def test_a_sweep_s_shared_reference_must_be_its_own(tmp_path):
    first = tmp_path / "first"
    done = threadmap("sweep", "--kernel", "naive-2d", "--shape", "8x8x8", "--grids", "1",
                     "--blocks", "64", "--backend", "cpu", "--no-images", "--out", str(first))
    assert done.returncode == 0, done.stderr
    second = tmp_path / "second"
    done = threadmap("sweep", "--kernel", "naive-2d", "--shape", "16x8x16", "--grids", "1",
                     "--blocks", "64", "--backend", "cpu", "--no-images", "--out", str(second))
    assert done.returncode == 0, done.stderr
    layouts = json.loads((first / "summary.json").read_text())["maps"]
    stem = next(name for name in layouts if name.startswith("grid"))
    assert load_maps(first / f"{stem}.npz", layouts[stem])["reference"].shape == (8, 8)
    (first / "reference.npz").write_bytes((second / "reference.npz").read_bytes())
    with pytest.raises(MapsFileError, match="is not the reference of"):
        load_maps(first / f"{stem}.npz", layouts[stem])


@pytest.mark.parametrize("damage", ["truncated", "garbage", "object"])
def test_a_damaged_maps_file_is_one_line(tmp_path, damage):
    path = tmp_path / "maps.npz"
    save_maps(path, {"count": np.arange(100, dtype=np.int32).reshape(10, 10)}, "float32")
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04" + os.urandom(200))
    else:
        with zipfile.ZipFile(path, "w") as archive:
            with archive.open("count.npy", "w") as member:
                np.save(member, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(MapsFileError) as info:
        load_maps(path)
    assert "\n" not in str(info.value)


def test_a_file_written_on_a_thread_is_published_with_the_others(tmp_path):
    import time

    out = tmp_path / "out"

    def slowly(path):
        time.sleep(0.2)  # (still writing when result.json is written and publish asked)
        path.write_bytes(b"maps written later")
        return "layout"

    with OutputFolder(out) as folder:
        later = folder.write_later("maps.npz", slowly)
        folder.write_text("result.json", "result")
        folder.publish()
        assert later.result() == "layout"
    assert contents(out) == {"maps.npz": b"maps written later", "result.json": b"result"}


def test_a_file_written_on_a_thread_that_fails_keeps_the_previous_pair(tmp_path):
    import errno

    out = tmp_path / "out"
    out.mkdir()
    (out / "maps.npz").write_bytes(b"old maps")
    (out / "result.json").write_bytes(b"old result")

    def full(path):
        path.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match="the disk is full; the previous maps.npz and "
                                          "result.json .* are kept"):
        with OutputFolder(out, files=("maps.npz", "result.json")) as folder:
            folder.write_later("maps.npz", full)
            folder.write_text("result.json", "new result")
            folder.publish()
    assert contents(out) == {"maps.npz": b"old maps", "result.json": b"old result"}


def test_leaving_a_folder_waits_for_its_thread_and_removes_what_it_staged(tmp_path):
    import time

    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_bytes(b"old result")

    def slowly(path):
        time.sleep(0.2)
        path.write_bytes(b"new maps")

    with pytest.raises(RuntimeError, match="the run failed"):
        with OutputFolder(out) as folder:
            folder.write_later("maps.npz", slowly)
            raise RuntimeError("the run failed")
    assert contents(out) == {"result.json": b"old result"}  # (no temporary file left)


def test_a_flush_to_disk_that_fails_is_said_and_keeps_the_previous_file(tmp_path, monkeypatch):
    import errno

    import kernels.outputs

    out = tmp_path / "out"
    out.mkdir()
    (out / "maps.npz").write_bytes(b"old maps")

    def sync(path):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(kernels.outputs, "_sync", sync)
    with pytest.raises(OutputError, match="Input/output error; the previous maps.npz"):
        with OutputFolder(out, files=("maps.npz",)) as folder:
            folder.write("maps.npz", lambda path: path.write_bytes(b"new maps"))
            folder.publish()
    assert contents(out) == {"maps.npz": b"old maps"}


def test_a_large_file_is_flushed_part_by_part_while_it_is_written(tmp_path, monkeypatch):
    """``Writeback`` flushes what is written so far on a thread, one flush at
    a time, each once STEP more bytes are written (the final flush then
    waits for the last part only); each flush has its own descriptor, closed
    when it ends; ``finish`` waits for the last; the file is as written."""
    import kernels.outputs
    from kernels.outputs import Writeback

    real = kernels.outputs._flush_early
    flushed_at, threads = [], []

    def flush(fd):
        flushed_at.append(os.fstat(fd).st_size)  # (what this flush covers)
        threads.append(threading.current_thread())
        real(fd)

    monkeypatch.setattr(kernels.outputs, "_flush_early", flush)
    descriptors_before = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") \
        else None
    piece = os.urandom(1 << 20)
    with open(tmp_path / "big", "wb") as out:
        writeback = Writeback(out)
        for i in range(80):
            out.write(piece)
            writeback.written()
            if i % 8 == 7:  # (now and then the flush under way has ended: a new one may start)
                writeback.finish()
                assert not any(thread.is_alive() for thread in threads)
        writeback.finish()
        assert not any(thread.is_alive() for thread in threads)
    assert (tmp_path / "big").read_bytes() == piece * 80
    assert len(flushed_at) >= 80 // (Writeback.STEP >> 20) - 1
    assert flushed_at[0] >= Writeback.STEP
    assert all(later - earlier >= Writeback.STEP
               for earlier, later in zip(flushed_at, flushed_at[1:]))
    assert all(thread is not threading.main_thread() for thread in threads)
    if descriptors_before is not None:  # (each flush's own descriptor closed)
        assert set(os.listdir("/proc/self/fd")) == descriptors_before


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_commands_files_get_the_mode_of_a_newly_created_file(tmp_path, umask):
    """run's result.json and maps.npz (and check's reports, hunt's hunt.json:
    all staged in an OutputFolder) had stayed 0600, mkstemp's mode, whatever
    the umask: a report for others to read could not be read by them."""
    before = os.umask(umask)
    try:
        folder = OutputFolder(tmp_path / "out", files=("a.json", "b.txt"))
        with folder:
            folder.write_text("a.json", "{}")
            folder.write("b.txt", lambda path: path.write_text("b"))
            folder.publish()
    finally:
        os.umask(before)
    for name in ("a.json", "b.txt"):
        assert (tmp_path / "out" / name).stat().st_mode & 0o777 == 0o666 & ~umask, name
