"""Integer arrays and arrays of different dtypes in one kernel (issue 22, point 2): a
histogram's int32 bins, a gather's int32 indices beside float64 values.  Each array is
typed, made, poisoned, compared and costed in sectors by its own dtype, and the three
backends agree element by element."""
import numpy as np
import pytest

from kernels import run
from kernels.element_types import dtype_of, mixed_element_types
from kernels.errors import RequestError, ThreadMapError
from kernels.inputs import INTEGER_SPAN, make_described_inputs, poison_value
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

GATHER = '''from numba import cuda

THREADMAP_ARGS = {"vals": "float64[1024]", "idx": "int32[1024]", "out": "float64[1024]"}


@cuda.jit
def gather(vals, idx, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = vals[idx[i]] * 2.0
'''

# Counts of each key, and (for the poison) a guard that skips the last bin.
COUNTS = '''from numba import cuda

THREADMAP_ARGS = {"keys": "int32[2048]", "bins": "int64[16]", "scale": "uint8[16]"}


@cuda.jit
def counts(keys, bins, scale):
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(bins, keys[i], scale[keys[i]])
'''

# One thread per element writes its square, but the guard misses the last one.
SQUARES = '''from numba import cuda

THREADMAP_ARGS = {"a": "int16[100]", "out": "int32[100]"}


@cuda.jit
def squares(a, out):
    i = cuda.grid(1)
    if i < out.size - 1:
        out[i] = a[i] * a[i]
'''

REFERENCES = '''import numpy as np


def gather(vals, idx):
    return vals[idx.astype(np.int64)] * 2.0


def counts(keys, scale):
    return np.bincount(keys, weights=scale[keys], minlength=16)


def counts_off_by_one(keys, scale):
    out = counts(keys, scale)
    out[3] += 1
    return out


def squares(a):
    return a.astype(np.int64) ** 2
'''


@pytest.fixture
def files(tmp_path):
    for name, text in (("gather.py", GATHER), ("counts.py", COUNTS), ("squares.py", SQUARES),
                       ("refs.py", REFERENCES)):
        (tmp_path / name).write_text(text)
    return tmp_path


def described(path, reference=None, backend="cpu", tier="auto", grid=(8,), block=(128,),
              **changes):
    request = RunRequest(kernel=None, kernel_file=str(path), grid=grid, block=block,
                         backend=backend, tier=tier, repeats=1, reference=reference, **changes)
    return describe_request(request)


def test_element_types_name_each_array_only_when_they_differ():
    assert mixed_element_types([("a", "float32"), ("b", "float32")], "float32") == "float32"
    key = mixed_element_types([("x", "float32"), ("bins", "int32")], "int32")
    assert key == "x:float32,bins:int32"
    assert (dtype_of(key, "x"), dtype_of(key, "bins")) == ("float32", "int32")
    assert dtype_of("float64", "anything") == "float64"


def test_integer_inputs_are_small_non_negative_or_their_index(files):
    request = described(files / "counts.py")
    keys, scale = make_described_inputs(request.arguments, ("keys", "scale"), "random", 0)
    assert keys.dtype == np.int32 and scale.dtype == np.uint8
    assert keys.min() >= 0 and keys.max() < INTEGER_SPAN and len(np.unique(keys)) == 16
    (keys,) = make_described_inputs(request.arguments, ("keys",), "arange", 0)
    np.testing.assert_array_equal(keys, np.arange(2048, dtype=np.int32))
    assert poison_value("int32") == -2**31 and poison_value("uint8") == 255
    assert np.isnan(poison_value("float32"))


@pytest.mark.parametrize("backend,tier", [("cpu", "instant"), ("cpu", "compiled"),
                                          ("sim", "auto")])
def test_a_gather_of_float64_by_int32_indices_passes_on_every_backend(files, backend, tier):
    request = described(files / "gather.py", f"{files / 'refs.py'}:gather", backend, tier)
    assert request.element_types == "vals:float64,idx:int32,out:float64"
    result = run(request)
    assert result.verdict.passed, result.verdict.reasons
    assert result.c.dtype == np.float64
    vals, idx = make_described_inputs(request.arguments, ("vals", "idx"), "random", 0)
    np.testing.assert_array_equal(result.c.reshape(-1), vals[idx] * 2.0)
    np.testing.assert_array_equal(result.maps.count, 1)
    # each index read once; the values only at the 16 indices there are
    reads = result.read_maps()
    np.testing.assert_array_equal(reads["reads_idx"], 1)
    np.testing.assert_array_equal(reads["reads_vals"].reshape(-1)[:16],
                                  np.bincount(idx, minlength=16))
    assert int(np.count_nonzero(reads["reads_vals"])) == 16


def test_sectors_are_counted_in_each_arrays_own_element_size(files):
    result = run(described(files / "gather.py", f"{files / 'refs.py'}:gather"))
    by_text = {s.site.text: s for s in result.analysis.coalescing}
    # 32 float64 stores in a row: 256 bytes, 8 sectors; 32 int32 loads: 128 bytes, 4
    assert (by_text["out[i]"].element_bytes, by_text["out[i]"].mean_sectors) == (8, 8.0)
    assert (by_text["idx[i]"].element_bytes, by_text["idx[i]"].mean_sectors) == (4, 4.0)
    # 16 distinct float64 values at most: 128 bytes, 4 sectors
    assert by_text["vals[idx[i]]"].element_bytes == 8
    assert by_text["vals[idx[i]]"].max_sectors == 4


def test_integer_counts_agree_across_backends_and_are_held_exactly(files):
    reference = f"{files / 'refs.py'}:counts"
    results = [run(described(files / "counts.py", reference, backend, tier, grid=(16,)))
               for backend, tier in (("cpu", "instant"), ("cpu", "compiled"), ("sim", "auto"))]
    request = results[0].request
    keys, scale = make_described_inputs(request.arguments, ("keys", "scale"), "random", 0)
    want = np.bincount(keys, weights=scale[keys], minlength=16).astype(np.int64)
    for result in results:
        assert result.c.dtype == np.int64
        np.testing.assert_array_equal(result.c.reshape(-1), want)
        assert result.verdict.passed and result.verdict.errors.exact
        np.testing.assert_array_equal(result.maps.atomics.reshape(-1),
                                      np.bincount(keys, minlength=16))
    for other in results[1:]:
        for field in ("count", "atomics", "min_writer", "max_writer"):
            np.testing.assert_array_equal(getattr(results[0].maps, field),
                                          getattr(other.maps, field), err_msg=field)
    # a count off by one fails: integers have no tolerance
    wrong = run(described(files / "counts.py", f"{files / 'refs.py'}:counts_off_by_one",
                          grid=(16,)))
    assert not wrong.verdict.passed and wrong.verdict.errors.wrong == 1
    assert "1 element of bins differs from the reference (integers, compared exactly)" in \
        wrong.verdict.reasons
    assert wrong.verdict.errors.describe().startswith("compared exactly (integers): 1 element")


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_an_unwritten_integer_element_holds_the_poison_and_fails(files, tier):
    result = run(described(files / "squares.py", f"{files / 'refs.py'}:squares", tier=tier,
                           grid=(1,)))
    flat = result.c.reshape(-1)
    assert flat.dtype == np.int32 and flat[-1] == np.iinfo(np.int32).min
    assert result.maps.count.reshape(-1)[-1] == 0
    (a,) = make_described_inputs(result.request.arguments, ("a",), "random", 0)
    np.testing.assert_array_equal(flat[:-1], a[:-1].astype(np.int32) ** 2)
    assert not result.verdict.passed
    assert any("1 of 100 elements of out never written" in r for r in result.verdict.reasons)


def test_arrays_of_types_not_run_are_refused_by_name(files):
    (files / "half.py").write_text(SQUARES.replace('"int16[100]"', '"float16[100]"'))
    with pytest.raises(RequestError, match=r"a=float16\[100\]: float16 arrays are not run"):
        described(files / "half.py")
    (files / "flag.py").write_text(SQUARES.replace('"int16[100]"', '"bool[100]"'))
    with pytest.raises(ThreadMapError, match=r"unknown element type .bool."):
        described(files / "flag.py")


def test_maps_npz_keeps_an_integer_output_in_its_own_type():
    from kernels.maps_file import compact_maps

    bins = np.array([[3, 0], [250, 7]], np.int32)
    stored, layout = compact_maps({"C": bins, "reference": bins.astype(np.float64),
                                   "count": np.ones((2, 2), np.int32)}, "int32")
    # the counts in their one type (int32); the kernel's own int32 values stay int32
    assert stored["count"].dtype == np.int32
    assert stored["C"].dtype == np.int32 and stored["reference"].dtype == np.int32
    np.testing.assert_array_equal(stored["C"], bins)
