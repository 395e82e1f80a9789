"""Kernels run as they are (issue 22, point 1): their arguments described, inputs made from
the descriptions, the output of its own shape, maps for it and read counts for every input,
and the user's reference (run by the command, never in the kernel's sandbox) for a verdict."""
import json
import subprocess
import sys

import numpy as np
import pytest

from kernels import run
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request, wrapped_shape

SAXPY = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]",
                  "n": 1000, "alpha": 2.5}


@cuda.jit
def saxpy(x, y, out, n, alpha):
    start = cuda.grid(1)
    for i in range(start, n, cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]
'''

TRANSPOSE = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[40, 24]", "out": "float32[24, 40]"}


@cuda.jit
def transpose(a, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[j, i]
'''

# Each thread sums a window of three around its element; the block's window
# is staged in shared memory with its halo.
STENCIL = '''from numba import cuda, float32

TPB = 32
WITH_HALO = TPB + 2
THREADMAP_ARGS = {"x": "float32[256]", "out": "float32[256]"}


@cuda.jit
def stencil(x, out):
    tile = cuda.shared.array(WITH_HALO, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t + 1] = x[i]
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0.0
    if t == TPB - 1:
        tile[TPB + 1] = x[i + 1] if i + 1 < x.size else 0.0
    cuda.syncthreads()
    out[i] = tile[t] + tile[t + 1] + tile[t + 2]
'''

REFERENCES = '''import numpy as np


def saxpy(x, y, n, alpha):
    return alpha * x + y


def saxpy_wrong(x, y, n, alpha):
    return alpha * x - y


def transpose(a):
    return a.T


def stencil(x):
    padded = np.concatenate([[0.0], x, [0.0]])
    return padded[:-2] + padded[1:-1] + padded[2:]


def raises(x, y, n, alpha):
    return {}["no such key"]


def too_short(x, y, n, alpha):
    return x[:10]
'''


@pytest.fixture
def files(tmp_path):
    for name, text in (("saxpy.py", SAXPY), ("transpose.py", TRANSPOSE),
                       ("stencil.py", STENCIL), ("refs.py", REFERENCES)):
        (tmp_path / name).write_text(text)
    return tmp_path


def described(path, reference=None, tier="auto", grid=(8,), block=(32,), **changes):
    request = RunRequest(kernel=None, kernel_file=str(path), grid=grid, block=block,
                         backend="cpu", tier=tier, repeats=1, reference=reference, **changes)
    return describe_request(request)


@pytest.mark.parametrize("length,shape", [(4096, (64, 64)), (1000, (25, 40)), (997, (1, 997)),
                                          (12, (3, 4)), (1, (1, 1))])
def test_a_1d_output_is_drawn_wrapped_into_rows(length, shape):
    assert wrapped_shape(length) == shape


def test_a_described_saxpy_runs_against_its_reference(files):
    request = described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy")
    assert (request.m, request.k, request.n) == (25, 1, 40)  # 1,000 wrapped into rows of 40
    assert dict(request.scalars) == {"n": 1000, "alpha": 2.5}
    result = run(request)
    assert result.verdict.passed and not result.verdict.reference_note, result.verdict
    np.testing.assert_array_equal(result.maps.count, 1)  # each element stored once
    # 8 x 32 = 256 threads stride over 1,000 elements: thread t stores t, t + 256, ...
    np.testing.assert_array_equal(result.maps.min_writer.reshape(-1), np.arange(1000) % 256)
    np.testing.assert_array_equal(result.maps.iteration.reshape(-1), np.arange(1000) // 256)
    assert result.input_names == ("x", "y")
    for name in ("reads_x", "reads_y"):
        np.testing.assert_array_equal(result.read_maps()[name], 1)
    # the values: 2.5 x + y in float32 against the float64 reference, within 2**-12
    assert result.verdict.errors.rel_error < 1e-7


def test_a_wrong_reference_fails_with_the_elements_off(files):
    from kernels.inputs import make_described_inputs

    request = described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy_wrong")
    result = run(request)
    assert not result.verdict.passed
    # By the rule, worked out here: |C - ref| > 2**-12 (|ref| + rms(ref)) for ref = 2.5 x - y
    x, y = (v.astype(np.float64) for v in make_described_inputs(
        request.arguments, ("x", "y"), "random", 0))
    ref = 2.5 * x - y
    c = (np.float32(2.5) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float64)
    bound = 2.0**-12 * (np.abs(ref) + np.sqrt(np.mean(ref * ref)))
    wrong = int(np.count_nonzero(np.abs(c - ref) > bound))
    assert 990 < wrong <= 1000  # (an element whose y is within the bound of 0 passes)
    assert result.verdict.errors.wrong == wrong
    assert f"{wrong:,} elements off by more than its bound" in "; ".join(result.verdict.reasons)


@pytest.mark.parametrize("reference,why", [
    ("raises", "raised KeyError: 'no such key' (line 22)"),
    ("too_short", "returned an array of shape (10,), not the output's out=float32[1000]"),
])
def test_a_reference_that_fails_keeps_the_maps_and_says_why_there_is_no_verdict(
        files, reference, why):
    result = run(described(files / "saxpy.py", f"{files / 'refs.py'}:{reference}"))
    assert why in result.verdict.reference_note
    assert result.verdict.passed  # (the checks': every element stored once, in bounds)
    np.testing.assert_array_equal(result.maps.count, 1)


def test_without_a_reference_there_are_maps_and_checks_only(files):
    result = run(described(files / "transpose.py", grid=(2, 3), block=(16, 16)))
    assert result.verdict.reference_note.startswith("no reference given")
    assert result.verdict.summary().startswith("CHECKED (no reference given")
    np.testing.assert_array_equal(result.maps.count, 1)
    np.testing.assert_array_equal(result.read_maps()["reads_a"], 1)
    # a launch too small for the output leaves elements unwritten: still a FAIL
    short = run(described(files / "transpose.py", grid=(1, 1), block=(16, 16)))
    assert not short.verdict.passed
    assert "704 of 960 elements of out never written" in short.verdict.reasons[0]


def test_out_of_bounds_reads_of_a_described_input_are_named_by_it(files):
    # 256 elements over 8 blocks of 32: the halo reads x[i - 1] at 0 and x[i + 1] at
    # 255 are guarded; unguarded, the last block's last thread reads x[256]
    text = STENCIL.replace("x[i + 1] if i + 1 < x.size else 0.0", "x[i + 1]")
    (files / "stencil.py").write_text(text)
    result = run(described(files / "stencil.py", f"{files / 'refs.py'}:stencil"))
    (oob,) = result.maps.out_of_bounds
    assert (oob.array, oob.direction, oob.count, oob.first_thread, oob.first_index) == \
        ("x", "read", 1, 255, (256,))
    assert not result.verdict.passed


@pytest.mark.parametrize("name,grid,block", [("saxpy.py", (3,), (64,)),
                                             ("transpose.py", (2, 3), (16, 16)),
                                             ("stencil.py", (8,), (32,))])
def test_both_tiers_agree_element_by_element(files, name, grid, block):
    reference = f"{files / 'refs.py'}:{name[:-3]}"
    results = [run(described(files / name, reference, tier=tier, grid=grid, block=block))
               for tier in ("instant", "compiled")]
    instant, compiled = results
    assert instant.verdict.passed and compiled.verdict.passed
    for field in ("count", "min_writer", "max_writer", "iteration", "stores_per_thread"):
        np.testing.assert_array_equal(getattr(instant.maps, field),
                                      getattr(compiled.maps, field), err_msg=field)
    for got, want in zip(instant.maps.reads, compiled.maps.reads):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(instant.c, compiled.c)


def test_a_kernel_outside_the_convention_asks_for_its_arguments(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(TRANSPOSE.replace(TRANSPOSE.splitlines()[2], ""))
    from kernels.errors import RequestError
    with pytest.raises(RequestError, match=r"kernel 'transpose' \(a, out\) is not C = A @ B: "
                                           r"describe its arguments"):
        describe_request(RunRequest(kernel=None, kernel_file=str(path)))


def test_the_command_line_runs_a_described_kernel_and_writes_its_maps(files):
    out = files / "out"
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(files / "saxpy.py"), "--backend", "cpu", "--reference",
                           f"{files / 'refs.py'}:saxpy", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PASS  saxpy.py  x=float32[1000], y=float32[1000], "
                                  "out=float32[1000]")
    summary = json.loads((out / "result.json").read_text())
    assert summary["request"]["arguments"] == ["x=float32[1000]", "y=float32[1000]",
                                               "out=float32[1000]", "n=1000", "alpha=2.5"]
    assert summary["output"] == {"array": "out", "why": "the array the kernel stores into",
                                 "shape": [1000], "maps_shape": [25, 40], "row_length": 40}
    # (one shape per array, said once: the reads of x are wrapped as out's writes are)
    assert summary["arrays"]["x"] == {"shape": [1000], "maps_shape": [25, 40]}
    assert "wrapped into rows" in summary["maps_shape_rule"]
    maps = np.load(out / "maps.npz")  # numpy alone reads it
    assert maps["count"].shape == (25, 40) and maps["reads_x"].shape == (25, 40)
    assert maps["reads_x"].reshape(-1)[999] == 1  # (x[999] read once, by the last thread)
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(files / "saxpy.py"), "--backend", "cpu", "--reference",
                           "nofile.py:f", "--out", str(files / "bad")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--reference nofile.py:f: no file nofile.py" in proc.stderr
    assert not (files / "bad").exists()
    # a function the file lacks, told from its text before the run (the run
    # had gone ahead: 'PASS (checks only)', exit 0)
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(files / "saxpy.py"), "--backend", "cpu", "--reference",
                           f"{files / 'refs.py'}:nothere", "--out", str(files / "bad")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "refs.py has no function 'nothere' (it defines: " in proc.stderr, proc.stderr
    assert not (files / "bad").exists()


def test_the_simulator_agrees_with_the_emulation_on_a_described_kernel(files):
    reference = f"{files / 'refs.py'}:saxpy"
    emulated = run(described(files / "saxpy.py", reference, grid=(3,), block=(64,)))
    request = described(files / "saxpy.py", reference, grid=(3,), block=(64,))
    simulated = run(request.with_(backend="sim"))
    assert simulated.backend == "sim" and simulated.verdict.passed
    for field in ("count", "min_writer", "max_writer", "iteration", "stores_per_thread"):
        np.testing.assert_array_equal(getattr(simulated.maps, field),
                                      getattr(emulated.maps, field), err_msg=field)
    for got, want in zip(simulated.maps.reads, emulated.maps.reads):
        np.testing.assert_array_equal(got, want)
    # The values to a rounding: numba types alpha (a Python float) as float64
    # and rounds 2.5 x + y once, as a GPU does; the simulator's numpy computes
    # 2.5 x in float32 (NEP 50) and rounds twice: 300 of 1,000 differ by a
    # last bit of the operands (|2.5 x| < 2.5, so an ulp is at most 2**-22).
    np.testing.assert_allclose(simulated.c, emulated.c, rtol=0, atol=2.0**-21)


REDUCE = '''from numba import cuda, float32

TPB = 64
THREADMAP_ARGS = {"x": "float32[4096]", "partial": "float32[64]"}


@cuda.jit
def block_sums(x, partial):
    tile = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = tile[0]
'''


def test_a_reduction_is_launched_over_its_input_and_checked(files):
    (files / "reduce.py").write_text(REDUCE)
    (files / "reduce_ref.py").write_text("def block_sums(x):\n"
                                         "    return x.reshape(-1, 64).sum(axis=1)\n")
    request = describe_request(RunRequest(kernel=None, kernel_file=str(files / "reduce.py"),
                                          backend="cpu", repeats=1,
                                          reference=f"{files / 'reduce_ref.py'}:block_sums"))
    from kernels.presets import default_launch
    launched = default_launch(request.with_(block=(64,)))
    # one thread per element of the largest array, x: 4,096 / 256 = 16 blocks of 256
    assert (launched.grid, launched.block) == ((16,), (256,))
    assert "its largest array, x" in launched.launch_source
    result = run(request.with_(grid=(64,), block=(64,), launch_source="given"))
    assert result.verdict.passed, result.verdict
    # each block's thread 0 stores its sum once; x read once per element
    np.testing.assert_array_equal(result.maps.count, 1)
    np.testing.assert_array_equal(result.maps.min_writer.reshape(-1), np.arange(64) * 64)
    np.testing.assert_array_equal(result.read_maps()["reads_x"], 1)
    # the tree: log2(64) = 6 halvings, each a read-modify-write of shared
    # memory between barriers, with no race
    assert result.analysis.races.count == 0


def test_a_described_kernel_sweeps_with_maps_and_checks(files):
    out = files / "sweep"
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "sweep", "--kernel-file",
                           str(files / "transpose.py"), "--backend", "cpu", "--grids",
                           "1x1,2x3", "--blocks", "16x16", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["configurations"]
    assert [row["verdict"] for row in rows] == ["FAIL", "PASS"]
    cell = np.load(out / "grid2x3_block16x16.npz")
    assert cell["count"].shape == (24, 40) and "reference" not in cell.files


def test_check_runs_a_described_submission_on_its_own_arrays_and_never_a_reference(files):
    from kernels.check import check_kernel, parse_launches

    rows = check_kernel((str(files / "transpose.py"), None, None), [(8, 8, 8)],
                        parse_launches("file,1:32"), backend="cpu")
    shapes = {row["shape"] for row in rows}
    assert shapes == {"a=float32[40, 24], out=float32[24, 40]"}  # not --shapes' 8x8x8
    guessed, small = rows
    # checks alone are not a PASS: CHECKED, counted apart
    assert guessed["verdict"] == "CHECKED" and small["verdict"] == "FAIL"
    assert "no correctness verdict: no reference given" in guessed["reasons"]
    # one block of 32 x 1: i = 0..31, j = 0; 24 of them are rows of out
    assert "936 of 960 elements of out never written" in small["reasons"]
    # a file cannot name a reference: its literal holds arguments only
    (files / "sneaky.py").write_text(TRANSPOSE.replace(
        '"out": "float32[24, 40]"}', '"out": "float32[24, 40]", "reference": "refs.py:f"}'))
    (row,) = check_kernel((str(files / "sneaky.py"), None, None), [(8, 8, 8)],
                          parse_launches("file"), backend="cpu")
    assert row["verdict"] == "ERROR"


ADD3 = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[300]", "b": "float32[300]", "c": "float32[300]",
                  "out": "float32[300]"}


@cuda.jit
def add3(a, b, c, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i] + c[i]
'''

IN_PLACE = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]"}


@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * 2.0
'''

MORE_REFERENCES = '''import numpy as np


def add3(a, b, c):
    return a + b + c


def double(x):
    return 2 * x


def triple(x):
    return 3 * x


def with_nan(x, y, n, alpha):
    r = alpha * x + y
    r[:5] = np.nan
    return r


def a_list(x, y, n, alpha):
    return [[1, 2], [3]]


def a_dict(x, y, n, alpha):
    return {"a": 1}


def complex_values(x, y, n, alpha):
    return (alpha * x + y) * 1j


def two_args(x, y):
    return x + y
'''


@pytest.fixture
def more(files):
    (files / "add3.py").write_text(ADD3)
    (files / "in_place.py").write_text(IN_PLACE)
    (files / "more_refs.py").write_text(MORE_REFERENCES)
    return files


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_three_inputs_are_read_and_named(more, tier):
    result = run(described(more / "add3.py", f"{more / 'more_refs.py'}:add3", tier=tier,
                           grid=(5,), block=(64,)))
    assert result.verdict.passed, result.verdict
    assert result.input_names == ("a", "b", "c")
    for name in ("reads_a", "reads_b", "reads_c"):
        np.testing.assert_array_equal(result.read_maps()[name], 1)
    # each access site is named by its array, not A / B
    assert {s.site.role for s in result.analysis.coalescing} >= {"a", "b", "c"}


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_an_in_place_kernel_starts_from_values_the_reference_gets_too(more, tier):
    request = described(more / "in_place.py", f"{more / 'more_refs.py'}:double", tier=tier,
                        grid=(16,), block=(256,))
    result = run(request)
    assert result.verdict.passed, result.verdict
    assert result.verdict.errors.rel_error == 0.0  # x * 2 is exact
    assert any("it started with the values made as the inputs' are" in note
               for note in result.notes)
    wrong = run(request.with_(reference=f"{more / 'more_refs.py'}:triple"))
    assert not wrong.verdict.passed and wrong.verdict.errors.wrong > 4000


@pytest.mark.parametrize("reference,why", [
    ("with_nan", "returned 5 NaN or infinite values"),
    ("a_list", "returned what is not an array of real numbers"),
    ("a_dict", "returned what is not an array of real numbers"),
    ("complex_values", "returned what is not an array of real numbers"),
    ("two_args", "called with (x, y, n, alpha), raised TypeError"),
])
def test_a_reference_that_returns_something_else_gives_no_verdict_and_says_why(
        more, reference, why):
    result = run(described(more / "saxpy.py", f"{more / 'more_refs.py'}:{reference}"))
    assert why in result.verdict.reference_note, result.verdict.reference_note
    np.testing.assert_array_equal(result.maps.count, 1)


def test_a_reference_is_refused_where_nothing_is_described(more):
    from kernels.errors import RequestError
    with pytest.raises(RequestError, match="--reference is for a kernel file whose arguments "
                                           "are described"):
        describe_request(RunRequest(kernel="grid-stride", reference="x.py:f"))
    matmul = more / "mm.py"
    matmul.write_text(TRANSPOSE.replace(TRANSPOSE.splitlines()[2], "")
                      .replace("def transpose(a, out)", "def transpose(a, b, out)"))
    with pytest.raises(RequestError, match="--reference needs the arguments of kernel "
                                           "'transpose' described"):
        describe_request(RunRequest(kernel=None, kernel_file=str(matmul),
                                    reference=f"{more / 'more_refs.py'}:add3"))


def test_a_three_array_kernel_described_otherwise_sweeps_as_it_is(more):
    out = more / "sweep3"
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "sweep", "--kernel-file",
                           str(more / "add3.py"), "--backend", "cpu", "--grids", "1,5",
                           "--blocks", "64", "--out", str(out), "--map", "error"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--map error: a kernel run as it is is drawn as" \
        in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "sweep", "--kernel-file",
                           str(more / "saxpy.py"), "--backend", "cpu", "--grids", "1,4",
                           "--blocks", "64", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["configurations"]
    assert [row["verdict"] for row in rows] == ["PASS", "PASS"]  # (the checks': a stride loop)


@pytest.mark.parametrize("text,told", [
    # a script's main block is never run by an import: the function it lacks is told
    ("def saxpy(x):\n    return x\n\nif __name__ == '__main__':\n    def helper():\n"
     "        pass\n", True),
    ("from numpy import *\n", False),  # (a star import: importing it tells)
    ("import sys\nif sys.version_info > (3,):\n    def helper():\n        pass\n", False),
    ("helper = lambda x: x\n", False),  # (defined by an assignment: not refused)
    ("if __name__ == '__main__':\n    pass\nelse:\n    def helper():\n        pass\n",
     False),  # (the else of a script's test runs on an import)
    ("match 1:\n    case 1:\n        def helper():\n            pass\n", False),
    ("def __getattr__(name):\n    return print\n", False),
    ("-" * 100000 + "1\n", False),  # (too deep to parse: importing it says so)
])
def test_a_reference_function_the_file_lacks_is_told_from_its_text_where_it_can_be(
        tmp_path, text, told):
    from kernels.errors import RequestError
    from kernels.reference_code import parse_reference

    path = tmp_path / "refs.py"
    path.write_text(text)
    if told:
        with pytest.raises(RequestError, match=r"has no function 'helper' \(it defines: saxpy\)"):
            parse_reference(f"{path}:helper")
    else:
        assert parse_reference(f"{path}:helper") == (str(path), "helper")
