"""maps.npz is lean on disk, gives back the same maps (issue 9, point 13), and numpy
alone reads every map it documents (issue 20, point 7); an untrusted result folder costs
no more than its size allows, and never blocks or follows a link (issue 42)."""
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run
from kernels.maps_file import MapsFileError, load_maps, save_maps


def test_each_map_has_one_type_whatever_the_run(tmp_path):
    # Two runs whose maps hold very different ranges: 1 x 32 threads (ids
    # 0-31, a few stores each) and 8 x 1,024 (ids up to 8,191, one store or
    # none).  Each map comes back in one type from both, by np.load alone
    # and by load_maps, with or without result.json's layout; earlier
    # versions narrowed each map to what held its values (uint8 writer ids
    # in one run, int16 in the other), where max_writer - min_writer wrapped.
    small = run(RunRequest(kernel="grid-stride", m=12, k=4, n=10, grid=(1,), block=(32,),
                           backend="cpu"))
    large = run(RunRequest(kernel="grid-stride", m=100, k=4, n=60, grid=(8,), block=(1024,),
                           backend="cpu"))
    types = []
    for name, result in (("small", small), ("large", large)):
        path = tmp_path / f"{name}.npz"
        layout = save_maps(path, result.maps_arrays(), result.request.dtype)
        with np.load(path) as archive:
            stored = {key: archive[key].dtype for key in archive.files}
        assert {key: value.dtype for key, value in load_maps(path).items()} == stored
        # (with the layout, the reference as it was in memory: float64, its
        # values rounded to the run's float32 as stored)
        back = load_maps(path, layout)
        assert {key: value.dtype for key, value in back.items()} == {
            **stored, "reference": np.dtype(np.float64)}
        types.append(stored)
    assert types[0] == types[1]
    for name in ("count", "atomics", "min_writer", "max_writer", "iteration",
                 "stores_per_thread", "oob_per_thread", "reads_a", "reads_b",
                 "oob_margin_top"):
        assert types[0][name] == np.int32, name
    with np.load(tmp_path / "small.npz") as archive:  # arithmetic in int32, as in memory
        assert (archive["max_writer"] - archive["min_writer"]).dtype == np.int32


def _readme_map_names() -> list[str]:
    """The names of maps.npz that the README lists (per-warp ones by their prefix)."""
    import re
    from pathlib import Path

    text = (Path(__file__).parent.parent / "README.md").read_text()
    listing = text[text.index("`out/maps.npz` ("):text.index("numpy alone reads every one")]
    return re.findall(r"`([a-z_]+)(?:<n>)?`", listing.replace("out/maps.npz", ""))


def test_numpy_alone_reads_every_map_the_readme_lists(tmp_path):
    # the shared-memory kernel has coalescing, bank-conflict and branch maps
    result = run(RunRequest(kernel="tiled", m=96, k=40, n=80, grid=(5, 6), block=(16, 16),
                            backend="cpu"))
    arrays = result.maps_arrays()
    path = tmp_path / "maps.npz"
    save_maps(path, arrays, result.request.dtype, run_id="r1")
    names = _readme_map_names()
    assert {"count", "min_writer", "max_writer", "reference", "sectors_site",
            "ways_site", "active_lanes_branch"} <= set(names)
    with np.load(path) as archive:  # numpy and nothing else
        stored = set(archive.files)
        for name in names:
            if name.endswith(("_site", "_branch")):
                assert any(f.startswith(name) for f in stored), name
                continue
            value = archive[name]
            if name == "reference":
                np.testing.assert_array_equal(value, arrays[name].astype(np.float32))
                continue
            np.testing.assert_array_equal(value, arrays[name], err_msg=name)
            assert value.dtype == arrays[name].dtype, name  # (its one type: MAP_TYPES)
        for name in stored:  # and every per-warp map as it is in memory
            np.testing.assert_array_equal(archive[name].astype(arrays[name].dtype)
                                          if name != "reference" else archive[name],
                                          arrays[name] if name != "reference"
                                          else arrays[name].astype(np.float32), err_msg=name)
    assert stored == set(arrays)


def test_maps_come_back_the_same_from_a_smaller_file(tmp_path):
    result = run(RunRequest(kernel="grid-stride", m=96, k=8, n=80, grid=(3,), block=(64,),
                            backend="cpu"))
    arrays = result.maps_arrays()
    path = tmp_path / "maps.npz"
    layout = save_maps(path, arrays, result.request.dtype)
    assert layout["stored"]["count"]["stored"] == np.dtype(np.int32).str
    assert set(layout["stored"]) == set(arrays)
    back = load_maps(path, layout)
    assert set(back) == set(arrays)
    for name, array in arrays.items():
        if name == "reference":
            # rounded to the run's dtype, half an ulp at most
            np.testing.assert_array_equal(back[name], array.astype(np.float32))
            assert back[name].dtype == array.dtype
            continue
        assert back[name].dtype == array.dtype, name
        np.testing.assert_array_equal(back[name], array, err_msg=name)
    in_memory = sum(a.nbytes for a in arrays.values())
    assert path.stat().st_size < in_memory / 2
    with zipfile.ZipFile(path) as archive:  # a zip that zipfile checks member by member
        assert archive.testzip() is None


def test_collisions_keep_both_writer_maps(tmp_path):
    # tid-rows on 1 x 64: several threads store each element.
    result = run(RunRequest(kernel="tid-rows", m=16, k=4, n=16, grid=(1,), block=(64,),
                            backend="cpu"))
    assert result.verdict.collided
    save_maps(tmp_path / "maps.npz", result.maps_arrays(), "float32")
    with np.load(tmp_path / "maps.npz") as archive:
        np.testing.assert_array_equal(archive["max_writer"], result.maps.max_writer)
        np.testing.assert_array_equal(archive["min_writer"], result.maps.min_writer)
        assert (archive["max_writer"] != archive["min_writer"]).any()


def test_large_maps_deflate_in_parallel_chunks_into_one_stream(tmp_path):
    # Over several 4 MB chunks, each deflated on its own: one valid member.
    writer = (np.arange(3 << 21, dtype=np.int64) % 100_000).astype(np.int32).reshape(3072, 2048)
    noise = np.random.default_rng(1).random((1024, 1024), dtype=np.float32)
    layout = save_maps(tmp_path / "maps.npz", {"min_writer": writer, "max_writer": writer.copy(),
                                               "C": noise, "atomics": np.zeros_like(writer)},
                       "float32")
    with zipfile.ZipFile(tmp_path / "maps.npz") as archive:
        assert archive.testzip() is None
        sizes = {i.filename: (i.compress_type, i.compress_size, i.file_size)
                 for i in archive.infolist()}
    assert sizes["min_writer.npy"][0] == zipfile.ZIP_DEFLATED
    assert sizes["C.npy"][0] == zipfile.ZIP_STORED  # random mantissas: not worth deflating
    # (ISA-L's level 1 finds fewer matches in a ramp than zlib's, 0.65 of it against
    # 0.35; a transpose's writer map it makes smaller, 0.19 against 0.21)
    assert sizes["min_writer.npy"][1] < sizes["min_writer.npy"][2] * 0.7
    assert sizes["atomics.npy"][1] < sizes["atomics.npy"][2] / 100  # zero everywhere
    with np.load(tmp_path / "maps.npz") as archive:
        assert archive["min_writer"].dtype == np.int32
        np.testing.assert_array_equal(archive["min_writer"], writer)
        np.testing.assert_array_equal(archive["max_writer"], writer)
        assert archive["atomics"].dtype == np.int32 and not archive["atomics"].any()
    back = load_maps(tmp_path / "maps.npz", layout)
    assert back["min_writer"].dtype == np.int32 and back["atomics"].dtype == writer.dtype


def test_maps_are_deflated_by_isa_l_into_streams_zlib_inflates(tmp_path):
    """ISA-L's deflate (a dependency) writes the chunks: zipfile, and so
    np.load, inflates them with zlib, the CRCs its own are checked against."""
    import zlib

    from kernels import npz_writer

    assert npz_writer._deflate_module.__name__ == "isal.isal_zlib"
    writer = np.random.default_rng(2).integers(0, 1 << 20, 3 << 20, dtype=np.int32)
    npz_writer.write_npz(tmp_path / "w.npz", {"w": writer}, deflate={"w"})
    with zipfile.ZipFile(tmp_path / "w.npz") as archive:
        assert archive.testzip() is None  # (every member's CRC, as zlib computes it)
        info = archive.getinfo("w.npy")
        assert info.compress_type == zipfile.ZIP_DEFLATED
        assert info.CRC == zlib.crc32(archive.read("w.npy"))
    with np.load(tmp_path / "w.npz") as archive:
        np.testing.assert_array_equal(archive["w"], writer)


def test_maps_files_of_earlier_versions_still_load(tmp_path):
    # Before maps were stored whole: a count of 1 as its runs, a writer map as
    # its differences, atomics left out, max_writer said to equal min_writer.
    writer = np.arange(64, dtype=np.int32).reshape(8, 8)
    np.savez(tmp_path / "old.npz", count=np.array([[1], [64]], np.uint8),
             min_writer=np.diff(writer.reshape(-1), prepend=0).astype(np.uint8))
    layout = {"stored": {
        "count": {"stored": "|u1", "dtype": "<i4", "shape": [8, 8], "encoding": "runs"},
        "min_writer": {"stored": "|u1", "dtype": "<i4", "shape": [8, 8], "encoding": "delta"}},
        "left_out": {"atomics": {"why": "zero everywhere", "value": 0, "shape": [8, 8],
                                 "dtype": "<i4"}},
        "same_as": {"max_writer": "min_writer"}}
    back = load_maps(tmp_path / "old.npz", layout)
    np.testing.assert_array_equal(back["count"], np.ones((8, 8)))
    np.testing.assert_array_equal(back["min_writer"], writer)
    np.testing.assert_array_equal(back["max_writer"], writer)
    assert not back["atomics"].any() and back["atomics"].dtype == np.int32
    # Maps narrowed to what held them, read without result.json: int32 again
    # (an integer output keeps its own type)
    np.savez(tmp_path / "narrowed.npz", min_writer=np.array([[-1, 5]], np.int8),
             count=np.array([[0, 1]], np.uint8), C=np.array([[0, 3]], np.int16))
    back = load_maps(tmp_path / "narrowed.npz")
    assert (back["min_writer"].dtype, back["count"].dtype, back["C"].dtype) == (
        np.int32, np.int32, np.int16)
    np.testing.assert_array_equal(back["min_writer"], [[-1, 5]])


def test_a_sweep_keeps_one_reference_for_all_its_configurations(tmp_path):
    import json

    from kernels.sweep import run_sweep, write_sweep

    base = RunRequest(kernel="grid-stride", m=40, k=8, n=24, backend="cpu")
    cells = list(run_sweep(base, (1, 2), (32, 64)))
    write_sweep(cells, tmp_path)
    layouts = json.loads((tmp_path / "summary.json").read_text())["maps"]
    assert (tmp_path / "reference.npz").exists()
    for cell in cells:
        stem = f"grid{cell.blocks}_block{cell.threads}"
        with zipfile.ZipFile(tmp_path / f"{stem}.npz") as archive:
            assert "reference.npy" not in archive.namelist()
        back = load_maps(tmp_path / f"{stem}.npz", layouts[stem])
        np.testing.assert_array_equal(back["count"], cell.result.maps.count)
        np.testing.assert_array_equal(back["C"], cell.result.c)
        np.testing.assert_array_equal(back["reference"],
                                      cell.result.reference.astype(np.float32))


def test_the_iteration_count_is_made_with_the_maps_and_survives_stowing(tmp_path):
    # The app's replay slider reads it at each result shown: counted once,
    # where the maps are made, and kept by a stowed result's placeholders.
    from kernels.stow import Stowage

    # 64 x 48 elements, 3 x 32 threads: iterations 0..31 for the first threads
    result = run(RunRequest(kernel="grid-stride", m=64, k=8, n=48, grid=(3,), block=(32,),
                            backend="cpu", tier="instant"))
    assert result.maps.iterations == int(result.maps.iteration.max()) + 1 == -(-64 * 48 // 96)
    stowage = Stowage(tmp_path)
    try:
        light = stowage.stow(result)
        assert not light.maps.iteration.any()  # the placeholder
        assert light.maps.iterations == result.maps.iterations
        assert stowage.unstow(light).maps.iterations == result.maps.iterations
    finally:
        stowage.close()


def test_members_made_on_the_writers_pool_are_written_as_arrays_are(tmp_path):
    """save_maps hands the writer futures of the narrowed maps: each member
    is written when made, and a map that fails to be made fails the file."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from kernels import npz_writer

    rng = np.random.default_rng(3)
    counts = rng.integers(0, 3, (512, 300)).astype(np.uint8)
    values = rng.random((512, 300), dtype=np.float32)
    npz_writer.write_npz(tmp_path / "given.npz", {"count": counts, "C": values},
                         deflate={"count"})
    late: Future = Future()
    with ThreadPoolExecutor(2) as pool:
        pool.submit(lambda: (time.sleep(0.2), late.set_result(counts)))
        npz_writer.write_npz(tmp_path / "made.npz", {"count": late, "C": values},
                             deflate={"count"}, pool=pool)
    with np.load(tmp_path / "given.npz") as given, np.load(tmp_path / "made.npz") as made:
        assert sorted(given.files) == sorted(made.files) == ["C", "count"]
        for name in given.files:
            np.testing.assert_array_equal(made[name], given[name])
    failed: Future = Future()
    failed.set_exception(MemoryError("no room for the narrowed map"))
    with pytest.raises(MemoryError, match="narrowed"):
        npz_writer.write_npz(tmp_path / "failed.npz", {"count": failed, "C": values},
                             deflate={"count"})


# -- untrusted paths and zip bombs (issue 42) ------------------------------------------------
#
# load_maps is handed a result folder's maps.npz, and the files its result.json
# names beside it.  These tests load them in a child process: a read without
# end stops at 1 GiB of headroom (MemoryError) and a read that blocks is cut
# off by a time limit, so that the old behaviour fails a test, not the suite.

_ROOT = Path(__file__).resolve().parent.parent

_LOAD_IN_CHILD = """
import json, resource, sys, time
from pathlib import Path
from kernels.maps_file import MapsFileError, load_maps
in_use = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
cap = in_use + (1 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
path, layout = Path(sys.argv[1]), json.loads(sys.argv[2])
start = time.perf_counter()
try:
    outcome = "loaded " + ",".join(sorted(load_maps(path, layout)))
except MapsFileError as exc:
    outcome = str(exc)
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start}))
"""

posix_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="FIFOs, /dev/zero and /proc/self/statm are Linux's")


def _load_in_a_child(path: Path, layout: dict | None = None,
                     time_limit: float = 20.0) -> tuple[str, float]:
    """``load_maps(path, layout)`` in a child: its refusal (or ``"loaded
    <names>"``) and the seconds it took; a test fails if it blocks."""
    try:
        done = subprocess.run([sys.executable, "-c", _LOAD_IN_CHILD, str(path),
                               json.dumps(layout)], cwd=_ROOT, capture_output=True, text=True,
                              timeout=time_limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"load_maps({path}) had not returned after {time_limit:.0f} s: it blocks")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return report["outcome"], report["seconds"]


def _maps_with_a_shared_reference(folder: Path) -> tuple[Path, dict]:
    """A sweep configuration's maps.npz and layout, its reference in
    ``reference.npz`` beside it (as kernels/sweep.py writes them)."""
    path = folder / "maps.npz"
    layout = save_maps(path, {"count": np.ones((8, 8), np.int32)}, "float32", run_id="r1")
    layout["shared"] = {"reference": {"file": "reference.npz", "dtype": "<f4",
                                      "shape": [8, 8]}}
    return path, layout


@posix_only
@pytest.mark.parametrize("hostile", ["a link to /dev/zero", "a FIFO"])
def test_a_shared_map_that_is_not_a_regular_file_is_refused_at_once(tmp_path, hostile):
    # (issue 42: a link to /dev/zero read 10 GB in 20 s; a FIFO blocked for ever)
    path, layout = _maps_with_a_shared_reference(tmp_path)
    beside = tmp_path / "reference.npz"
    if hostile == "a FIFO":
        os.mkfifo(beside)
    else:
        beside.symlink_to("/dev/zero")
    outcome, seconds = _load_in_a_child(path, layout)
    kind = "a FIFO" if hostile == "a FIFO" else "a symbolic link"
    assert outcome.startswith(f"{beside}: not a regular file ({kind})"), outcome
    assert "\n" not in outcome and seconds < 2


@posix_only
def test_a_maps_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "maps.npz"
    os.mkfifo(path)
    outcome, seconds = _load_in_a_child(path)
    assert outcome.startswith(f"{path}: not a regular file (a FIFO)"), outcome
    assert "\n" not in outcome and seconds < 2


@posix_only
def test_a_maps_file_that_is_a_link_is_refused(tmp_path):
    # a good maps file, but elsewhere: a result folder's files are its own
    elsewhere = tmp_path / "elsewhere.npz"
    layout = save_maps(elsewhere, {"count": np.ones((8, 8), np.int32)}, "float32", run_id="r1")
    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / "maps.npz"
    path.symlink_to(elsewhere)
    outcome, _ = _load_in_a_child(path, layout)
    assert outcome.startswith(f"{path}: not a regular file (a symbolic link)"), outcome
    assert "\n" not in outcome
    assert _load_in_a_child(elsewhere, layout)[0] == "loaded count"


def _one_member_npz(path: Path, array: np.ndarray, compression: int) -> None:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        with archive.open("count.npy", "w", force_zip64=True) as member:
            np.save(member, array)


def test_a_member_compressed_past_what_deflate_can_is_refused_before_inflating(tmp_path):
    # 64 MiB of zeros in bzip2 take 181 bytes (370,000:1); deflate gives at
    # most 1,032:1, and ThreadMap writes nothing else
    path = tmp_path / "maps.npz"
    _one_member_npz(path, np.zeros(64 << 20, np.uint8), zipfile.ZIP_BZIP2)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("count.npy")
    with pytest.raises(MapsFileError) as refused:
        load_maps(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: count.npy inflates to {info.file_size:,} bytes from "
                              f"{info.compress_size:,}"), message
    assert ":1" in message and "\n" not in message


def test_a_header_claiming_more_than_its_bytes_can_inflate_to_is_refused(tmp_path):
    # 1 MiB of zeros deflated to 1 KB, under a .npy header and a zip
    # directory that both say 2 GiB (2,000,000:1): refused from the
    # directory, before 2 GiB are set aside for a read that comes up short
    import io
    import struct

    from numpy.lib import format as npy_format

    header = io.BytesIO()
    npy_format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False,
                                               "shape": (2 << 30,)})
    path = tmp_path / "maps.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("count.npy", header.getvalue() + bytes(1 << 20))
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("count.npy")
    data = bytearray(path.read_bytes())
    claimed = len(header.getvalue()) + (2 << 30)
    struct.pack_into("<I", data, data.index(b"PK\x01\x02") + 24, claimed)  # (its size)
    path.write_bytes(bytes(data))
    with pytest.raises(MapsFileError, match=rf"^{path}: count.npy inflates to {claimed:,} "
                                            rf"bytes from {info.compress_size:,}"):
        load_maps(path)


def test_members_sharing_their_compressed_bytes_are_refused(tmp_path):
    # (the overlapping zip bomb: 64 directory entries for one deflated
    # stream, each within deflate's ratio, the whole file 64 times past it;
    # Python 3.11's zipfile reads all 64)
    import struct

    path = tmp_path / "maps.npz"
    _one_member_npz(path, np.zeros(4 << 20, np.uint8), zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("count.npy")
    data = path.read_bytes()
    directory, end = data.index(b"PK\x01\x02"), data.index(b"PK\x05\x06")
    entry, copies = data[directory:end], 64
    records = bytearray(data[end:])
    struct.pack_into("<HHI", records, 8, copies, copies, copies * len(entry))
    path.write_bytes(data[:directory] + entry * copies + bytes(records))
    with zipfile.ZipFile(path) as archive:
        assert len(archive.infolist()) == copies
    with pytest.raises(MapsFileError, match=rf"^{path}: its members' compressed sizes add up "
                                            rf"to {copies * info.compress_size:,} bytes"):
        load_maps(path)


def test_threadmap_s_own_maps_load_however_well_they_compress(tmp_path):
    # A run's maps, and a 4096 x 4096 run's count map, 1 everywhere: 16 MiB
    # deflated to 16 KB (1,021:1), within 1% of deflate's ceiling: a lower
    # bound on the ratio would refuse ThreadMap's own files.
    result = run(RunRequest(kernel="grid-stride", m=512, k=64, n=512, backend="cpu"))
    arrays = result.maps_arrays()
    layout = save_maps(tmp_path / "maps.npz", arrays, result.request.dtype, run_id="r1")
    back = load_maps(tmp_path / "maps.npz", layout)
    assert back.keys() == arrays.keys()
    for name in arrays:  # (the reference rounded to the run's float32, as it is stored)
        np.testing.assert_array_equal(back[name], arrays[name] if name != "reference" else
                                      arrays[name].astype(np.float32), err_msg=name)
    constant = {"count": np.ones((4096, 4096), np.int32)}
    layout = save_maps(tmp_path / "constant.npz", constant, "float32", run_id="r2")
    with zipfile.ZipFile(tmp_path / "constant.npz") as archive:
        info = archive.getinfo("count.npy")
    assert info.file_size / info.compress_size > 1_000
    np.testing.assert_array_equal(load_maps(tmp_path / "constant.npz", layout)["count"],
                                  constant["count"])
