"""maps.npz is lean on disk and gives back the same maps (issue 9, point 13)."""
import zipfile

import numpy as np

from kernels import RunRequest, run
from kernels.maps_file import load_maps, save_maps, smallest_integer_type


def test_smallest_integer_type_holds_the_range():
    assert smallest_integer_type(np.array([0, 1, 255])) == np.uint8
    assert smallest_integer_type(np.array([-1, 127])) == np.int8
    assert smallest_integer_type(np.array([-1, 40_000])) == np.int32
    assert smallest_integer_type(np.array([0, 2**40])) == np.int64


def test_maps_come_back_the_same_from_a_smaller_file(tmp_path):
    result = run(RunRequest(kernel="grid-stride", m=96, k=8, n=80, grid=(3,), block=(64,),
                            backend="cpu"))
    arrays = result.maps_arrays()
    path = tmp_path / "maps.npz"
    layout = save_maps(path, arrays, result.request.dtype)
    # No atomics, and no element stored by two threads: both are one line.
    assert layout["left_out"]["atomics"]["why"] == "zero everywhere"
    assert layout["same_as"] == {"max_writer": "min_writer"}
    assert layout["stored"]["count"]["stored"] == np.dtype(np.uint8).str
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
    with zipfile.ZipFile(path) as archive:  # numpy reads it as any .npz
        assert {i.filename for i in archive.infolist()} == {
            f"{name}.npy" for name in layout["stored"]}


def test_collisions_keep_both_writer_maps(tmp_path):
    # tid-rows on 1 x 64: several threads store each element.
    result = run(RunRequest(kernel="tid-rows", m=16, k=4, n=16, grid=(1,), block=(64,),
                            backend="cpu"))
    assert result.verdict.collided
    layout = save_maps(tmp_path / "maps.npz", result.maps_arrays(), "float32")
    assert "max_writer" in layout["stored"] and not layout["same_as"]
    back = load_maps(tmp_path / "maps.npz", layout)
    np.testing.assert_array_equal(back["max_writer"], result.maps.max_writer)


def test_thread_ids_along_rows_are_stored_as_differences(tmp_path):
    # The writer map of a grid-stride launch of 100,000 threads over 1024 x 1024
    # (the ids repeat further apart than deflate looks back).
    writer = (np.arange(1 << 20, dtype=np.int64) % 100_000).astype(np.int32).reshape(1024, 1024)
    noise = np.random.default_rng(1).integers(0, 100_000, (1024, 1024), dtype=np.int32)
    layout = save_maps(tmp_path / "maps.npz", {"min_writer": writer, "other": noise}, "float32")
    # +1 but at every 100,000th element: runs of differences
    assert layout["stored"]["min_writer"]["encoding"] == "delta+runs"
    assert layout["stored"]["other"]["encoding"] == "raw"  # differences would not help
    back = load_maps(tmp_path / "maps.npz", layout)
    np.testing.assert_array_equal(back["min_writer"], writer)
    np.testing.assert_array_equal(back["other"], noise)
    assert back["min_writer"].dtype == np.int32
    assert (tmp_path / "maps.npz").stat().st_size < writer.nbytes


def test_long_runs_are_stored_as_runs_and_short_ones_are_not(tmp_path):
    rng = np.random.default_rng(2)
    ones = np.ones((1024, 1024), np.int32)  # every element written once
    rows = np.repeat(np.arange(1024, dtype=np.int32), 1024).reshape(1024, 1024)
    ids = (np.arange(1 << 20) % 3000).astype(np.int32)  # differences: runs 3,000 long
    noisy_ids = ids + rng.integers(0, 2, ids.size, dtype=np.int32)  # short runs, small steps
    # long runs in the first elements, then none: the sample must not decide alone
    tail = np.concatenate([np.zeros(1 << 16, np.int32),
                           rng.integers(0, 50, (1 << 20) - (1 << 16), dtype=np.int32)])
    maps = {"ones": ones, "rows": rows, "ids": ids, "noisy_ids": noisy_ids, "tail": tail}
    layout = save_maps(tmp_path / "maps.npz", maps, "float32")
    encodings = {name: spec["encoding"] for name, spec in layout["stored"].items()}
    assert encodings == {"ones": "runs", "rows": "runs", "ids": "delta+runs",
                         "noisy_ids": "delta", "tail": "raw"}
    with np.load(tmp_path / "maps.npz") as archive:
        assert archive["ones"].size == 2  # one run: its value and its length
        assert archive["rows"].shape == (2, 1024)
    back = load_maps(tmp_path / "maps.npz", layout)
    for name, array in maps.items():
        assert back[name].dtype == array.dtype, name
        np.testing.assert_array_equal(back[name], array, err_msg=name)


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
