"""The Python API on the caller's own arrays (issue 22): ``threadmap(kernel,
args=(...), reference=...)`` for a kernel of any arguments.  The inputs are
random, so a run that used other values than the caller's, or started its
output elsewhere than where it is said to, cannot match the reference."""
import importlib
import sys

import numpy as np
import pytest

from kernels import RequestError, threadmap

KERNELS = '''
from numba import cuda


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


@cuda.jit
def saxpy_short(a, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0] - 1:
        out[i] = a * x[i] + y[i]


@cuda.jit
def double_in_place(x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = 2.0 * x[i]


@cuda.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.shape[0]:
        b = int(values[i] * bins.shape[0])
        cuda.atomic.add(bins, b, 1.0)


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live_args")
    (folder / "course_kernels.py").write_text(KERNELS)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("course_kernels")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("course_kernels", None)


@pytest.fixture
def xy():
    rng = np.random.default_rng(7)
    return (rng.random(1000).astype(np.float32) * 2 - 1,
            rng.random(1000).astype(np.float32) * 2 - 1)


def test_a_kernel_runs_on_the_callers_arrays_against_their_reference(kernels, xy):
    x, y = xy
    out = np.full(1000, 5.0, np.float32)
    r = threadmap(kernels.saxpy, args=(np.float32(2.5), x, y, out),
                  reference=lambda a, x, y: a * x + y, backend="cpu")
    assert r.verdict == "PASS" and r.reasons == [] and r.reference_note == ""
    np.testing.assert_array_equal(out, 5.0)  # (the caller's arrays are never written)
    c = r.maps["C"].reshape(-1)  # (1,000 elements drawn as 25 rows of 40)
    assert r.maps["C"].shape == (25, 40)
    np.testing.assert_allclose(c, 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(r.maps["count"], 1)
    np.testing.assert_array_equal(r.maps["reads_x"], 1)
    summary = r.summary()
    assert summary["request"]["pattern"] == "given"
    assert summary["request"]["arguments"] == ["a=float32(2.5)", "x=float32[1000]",
                                               "y=float32[1000]", "out=float32[1000]"]
    assert "replaced by NaN" in " ".join(r.result.notes)


def test_the_expected_output_itself_may_be_the_reference(kernels, xy):
    x, y = xy
    expected = 2.5 * x.astype(np.float64) + y
    out = np.empty(1000, np.float32)
    assert threadmap(kernels.saxpy, args=(2.5, x, y, out), reference=expected,
                     backend="cpu").verdict == "PASS"
    # made inputs would not match: the caller's are used (one changed element fails)
    wrong = expected.copy()
    wrong[3] += 0.5
    r = threadmap(kernels.saxpy, args=(2.5, x, y, out), reference=wrong, backend="cpu")
    assert r.verdict == "FAIL"
    assert any("1 element" in reason and "off by more than" in reason for reason in r.reasons)


def test_an_unwritten_element_fails_and_shows(kernels, xy):
    x, y = xy
    r = threadmap(kernels.saxpy_short, args=(2.5, x, y, np.zeros(1000, np.float32)),
                  reference=lambda a, x, y: a * x + y, backend="cpu")
    assert r.verdict == "FAIL"
    assert any("1 of 1,000 elements of out never written" in reason for reason in r.reasons)
    assert np.isnan(r.maps["C"].reshape(-1)[-1])  # (poisoned, not the caller's zero)


def test_without_a_reference_the_result_says_it_has_no_verdict(kernels, xy):
    x, y = xy
    r = threadmap(kernels.saxpy, args=(2.5, x, y, np.zeros(1000, np.float32)), backend="cpu")
    assert r.verdict == "CHECKED" and r.passed
    assert "reference=" in r.reference_note
    assert r.reasons == [f"no correctness verdict: {r.reference_note}"]
    assert "reference" not in r.maps


def test_an_in_place_kernel_starts_from_the_values_given(kernels, xy):
    x, _ = xy
    r = threadmap(kernels.double_in_place, args=(x,), reference=2.0 * x.astype(np.float64),
                  backend="cpu")
    assert r.verdict == "PASS", r.reasons
    # and its reference function gets them too, as its starting values
    r = threadmap(kernels.double_in_place, args=(x,), reference=lambda x: 2 * x, backend="cpu")
    assert r.verdict == "PASS", r.reasons
    assert any("started with the values given for it" in note for note in r.result.notes)


def test_an_atomic_accumulator_starts_from_the_callers_counts(kernels):
    values = np.random.default_rng(3).random(4096).astype(np.float32)
    start = np.arange(16, dtype=np.float32) * 100  # not zeros: they must be kept
    expected = start + np.bincount((values * 16).astype(int), minlength=16)
    r = threadmap(kernels.histogram, args=(values, start), reference=expected, backend="cpu")
    assert r.verdict == "PASS", r.reasons
    assert int(r.maps["atomics"].sum()) == 4096


def test_a_matmul_kernel_given_its_arrays_runs_on_them(kernels):
    rng = np.random.default_rng(5)
    a = rng.random((37, 11)).astype(np.float32)
    b = rng.random((11, 29)).astype(np.float32)
    r = threadmap(kernels.matmul, args=(a, b, np.empty((37, 29), np.float32)),
                  reference=lambda A, B: A @ B, backend="cpu")
    assert r.verdict == "PASS", r.reasons
    np.testing.assert_allclose(r.maps["C"], a.astype(np.float64) @ b, rtol=1e-5)


def test_a_reference_that_fails_keeps_the_maps_and_says_why(kernels, xy):
    x, y = xy

    def broken(a, x, y):
        return x[5000]

    r = threadmap(kernels.saxpy, args=(2.5, x, y, np.zeros(1000, np.float32)),
                  reference=broken, backend="cpu")
    assert r.verdict == "CHECKED"
    assert "raised IndexError" in r.reference_note and "broken" in r.reference_note
    np.testing.assert_array_equal(r.maps["count"], 1)
    r = threadmap(kernels.saxpy, args=(2.5, x, y, np.zeros(1000, np.float32)),
                  reference=np.zeros(999), backend="cpu")
    assert "shape (999,), not the output's out=float32[1000]" in r.reference_note


@pytest.mark.parametrize("args, kwargs, message", [
    ((2.5, "x", "y"), {}, r"takes 4 arguments \(a, x, y, out\); args gives 3"),
    ((2.5, [1.0] * 4, "y", "out"), {}, r"args\[1\] \(x\): expected a numpy array .* list"),
    ((True, "x", "y", "out"), {}, r"args\[0\] \(a\): True is a bool"),
    ((2.5, "bool", "y", "out"), {}, r"args\[1\] \(x\) x=bool\[1000\]: .*int32, .* not bool"),
    ((2.5, "half", "y", "out"), {}, r"args\[1\] \(x\) x=float16\[1000\]: float16 arrays are not run"),
    ((np.float16(2.5), "x", "y", "out"), {}, r"args\[0\] \(a\): a float16 scalar"),
    ((float("nan"), "x", "y", "out"), {}, r"args\[0\] \(a\): nan is not a finite number"),
    ((2.5, "x", "y", "out"), {"shape": (4, 4, 4)}, "one of them"),
    ((2.5, "x", "y", "out"), {"scalars": {"a": 2.5}}, "scalars are given in args"),
    (None, {"reference": np.zeros(3), "shape": (4, 4, 4)}, "reference= is for a run on args"),
    ("xy", {}, "args must be a tuple"),
])
def test_bad_args_are_refused_with_the_argument_named(kernels, xy, args, kwargs, message):
    x, y = xy
    values = {"x": x, "y": y, "out": np.zeros(1000, np.float32), "bool": x > 0,
              "half": x.astype(np.float16)}
    if isinstance(args, tuple):
        args = tuple(values.get(a, a) if isinstance(a, str) else a for a in args)
    with pytest.raises(RequestError, match=message):
        threadmap(kernels.saxpy, args=args, backend="cpu", **kwargs)


def test_a_device_array_is_refused_with_what_to_give(kernels, xy):
    class DeviceLike:
        def copy_to_host(self):
            return None

    x, y = xy
    with pytest.raises(RequestError, match=r"args\[3\] \(out\) is a device array.*copy_to_host"):
        threadmap(kernels.saxpy, args=(2.5, x, y, DeviceLike()), backend="cpu")


def test_the_arrays_handed_to_the_run_are_removed_after_it(kernels, xy):
    from kernels.cache import cache_dir

    x, y = xy
    threadmap(kernels.saxpy, args=(2.5, x, y, np.zeros(1000, np.float32)), backend="cpu")
    folder = cache_dir().parent / "live"
    assert not list(folder.glob("args_*.npz"))


def test_the_simulator_runs_on_the_callers_arrays_too(kernels, xy):
    x, y = xy
    r = threadmap(kernels.saxpy, args=(2.5, x[:256], y[:256], np.zeros(256, np.float32)),
                  reference=lambda a, x, y: a * x + y, backend="sim")
    assert r.verdict == "PASS", r.reasons
    assert r.result.backend == "sim"


BYTE_ORDER_AND_NAMES = '''
from numba import cuda


@cuda.jit
def scale(file, allow_pickle):
    i = cuda.grid(1)
    if i < allow_pickle.shape[0]:
        allow_pickle[i] = 2.0 * file[i]
'''


def test_big_endian_arrays_and_savez_s_own_words_as_parameter_names(tmp_path):
    (tmp_path / "odd_names.py").write_text(BYTE_ORDER_AND_NAMES)
    sys.path.insert(0, str(tmp_path))
    try:
        kernel = importlib.import_module("odd_names").scale
        x = np.random.default_rng(2).random(300).astype(">f4")  # (as read from a FITS file)
        r = threadmap(kernel, args=(x, np.zeros(300, np.float32)),
                      reference=lambda file: 2 * file, backend="cpu")
        assert r.verdict == "PASS", r.reasons
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("odd_names", None)
