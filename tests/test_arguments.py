"""A kernel's arguments as the user describes them (issue 22, point 1's first layer):
``--arg`` and a file's ``THREADMAP_ARGS``, read (never run) and held against the kernel."""
import json
import subprocess
import sys

import pytest

from kernels.errors import KernelSourceError, RequestError
from kernels.sources.arguments import (
    ArrayArgument,
    ScalarArgument,
    check_arguments,
    file_arguments,
    parse_argument,
    parse_arguments,
)
from kernels.sources.plan import parameter_uses
from kernels.sources.source import parse_module

VADD = '''from numba import cuda


@cuda.jit
def vadd(x, y, out, n, alpha):
    i = cuda.grid(1)
    for j in range(i, n, cuda.gridsize(1)):
        out[j] = alpha * x[j] + y[j]
'''

MATMUL = '''from numba import cuda

THREADMAP_ARGS = {"A": "float32[48, 20]", "B": "float32[20, 36]", "C": "float32[48, 36]"}


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc
'''

FLAT = '''from numba import cuda


@cuda.jit
def matmul(a, b, c, m, k, n):
    t = cuda.grid(1)
    if t < m * n:
        row = t // n
        col = t % n
        acc = 0.0
        for p in range(k):
            acc += a[row * k + p] * b[p * n + col]
        c[t] = acc
'''


@pytest.mark.parametrize("text,expected", [
    ("x=float32[4096]", ArrayArgument("x", "float32", (4096,))),
    ("a = float64[64, 32]", ArrayArgument("a", "float64", (64, 32))),
    ("v=int32[2,3,4]", ArrayArgument("v", "int32", (2, 3, 4))),
    ("x=float32[4096,]", ArrayArgument("x", "float32", (4096,))),
    ("n=4096", ScalarArgument("n", 4096)),
    ("n=1_000", ScalarArgument("n", 1000)),
    ("n=0x10", ScalarArgument("n", 16)),
    ("alpha=2.5", ScalarArgument("alpha", 2.5)),
    ("alpha=float32(2.5)", ScalarArgument("alpha", 2.5, "float32")),
    ("n=int32(4096)", ScalarArgument("n", 4096, "int32")),
])
def test_specs_are_read(text, expected):
    assert parse_argument(text) == expected


@pytest.mark.parametrize("text,message", [
    ("x", "--arg takes NAME=SPEC"),
    ("1x=3", "--arg takes NAME=SPEC"),
    ("x=float33[4]", "--arg x: unknown element type 'float33'"),
    ("x=float32[]", "--arg x: an array needs its shape"),
    ("x=float32[0]", "--arg x: a dimension of 0"),
    ("x=float32[1,2,3,4]", "--arg x: 4 dimensions"),
    ("x=float32[a]", "--arg x: 'a' is not a dimension"),
    ("n=int32(2.5)", "--arg n: int32(2.5) is not a whole number"),
    ("n=uint32(-1)", "--arg n: -1 does not fit uint32"),
    ("n=int8(3)", "--arg n: unknown scalar type 'int8'"),
    ("n=abc", "--arg n: 'abc' is neither an array"),
])
def test_a_spec_that_does_not_parse_is_one_line_naming_the_argument(text, message):
    with pytest.raises(RequestError) as caught:
        parse_argument(text)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_name_given_twice_is_refused():
    with pytest.raises(RequestError, match="--arg x is given twice"):
        parse_arguments(["x=float32[4]", "x=float32[8]"])


def _vadd():
    module = parse_module(VADD, "vadd.py")
    kernel = module.kernel(None)
    return kernel.params, parameter_uses(module, kernel)


def test_the_kernels_use_of_its_parameters_is_read():
    params, uses = _vadd()
    assert uses.arrays == ("x", "y", "out")
    assert uses.ranks == {"x": {1}, "y": {1}, "out": {1}}
    assert uses.stored == ("out",) and uses.loaded == {"x", "y"}
    assert uses.scalars == ("n", "alpha")
    assert uses.integer_uses == {"n": (7, "a bound of range()")}


GOOD = ["x=float32[64]", "y=float32[64]", "out=float32[64]", "n=64", "alpha=2.5"]


def test_a_description_that_fits_comes_back_in_parameter_order():
    params, uses = _vadd()
    ordered = check_arguments(parse_arguments(list(reversed(GOOD))), params, uses, "vadd")
    assert [a.name for a in ordered] == list(params)


@pytest.mark.parametrize("change,message", [
    (["q=1"], "--arg q: kernel 'vadd' has no parameter 'q' (its parameters: x, y, out, n, "
              "alpha)"),
    (["x=float32[8, 8]"], "--arg x=float32[8, 8]: 2 dimensions, but kernel 'vadd' indexes x "
                          "with 1 index"),
    (["x=3"], "--arg x=3: kernel 'vadd' indexes x as an array"),
    (["n=float32[4]"], "--arg n=float32[4]: kernel 'vadd' uses n as a scalar"),
    (["n=64.5"], "--arg n=64.5: kernel 'vadd' uses n as a bound of range() (line 7), which "
                 "must be an integer"),
    (["n=float64(64)"], "--arg n=float64(64.0): kernel 'vadd' uses n as a bound of range()"),
])
def test_a_description_that_does_not_fit_the_kernel_names_the_argument(change, message):
    params, uses = _vadd()
    items = {item.split("=")[0]: item for item in GOOD}
    items.update({item.split("=")[0]: item for item in change})
    with pytest.raises(RequestError) as caught:
        check_arguments(parse_arguments(list(items.values())), params, uses, "vadd")
    assert str(caught.value).startswith(message), str(caught.value)


def test_a_description_outside_the_matmul_convention_says_how_the_kernel_was_read(tmp_path):
    path = tmp_path / "vadd.py"
    path.write_text(VADD.replace(", n, alpha", "").replace("range(i, n,", "range(i, out.size,")
                    .replace("alpha * ", ""))
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", "--arg",
                     "x=float32[64]", "--arg", "y=float32[64]", "--arg", "out=float32[64]",
                     "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.endswith("(ThreadMap read the kernel as C = A @ B: x as A, y as B, out "
                                "as C; to run it as it is, give --reference FILE.py:FUNCTION, "
                                "your code that returns the expected out)\n"), proc.stderr


def test_a_missing_argument_is_named_with_an_example():
    params, uses = _vadd()
    with pytest.raises(RequestError, match=r"kernel 'vadd' needs y described \(an array it "
                                           r"indexes with 1 index\); e.g. --arg y=float32"):
        check_arguments(parse_arguments(["x=float32[64]", "out=float32[64]", "n=64",
                                         "alpha=1"]), params, uses, "vadd")


def test_arrays_past_the_memory_given_are_refused_naming_the_largest():
    params, uses = _vadd()
    with pytest.raises(RequestError, match=r"the arrays described take .* \(the largest: "
                                           r"out=float32\[100000\]"):
        check_arguments(parse_arguments(["x=float32[10]", "y=float32[10]",
                                         "out=float32[100000]", "n=1", "alpha=1"]),
                        params, uses, "vadd", memory=1000)


def test_the_files_literal_is_read_and_never_run(tmp_path):
    module = parse_module(MATMUL, "mm.py")
    arguments, line = file_arguments(module)
    assert line == 3
    assert arguments == (ArrayArgument("A", "float32", (48, 20)),
                         ArrayArgument("B", "float32", (20, 36)),
                         ArrayArgument("C", "float32", (48, 36)))
    marker = tmp_path / "ran"
    hostile = MATMUL.replace(
        '{"A": "float32[48, 20]"',
        f'{{"A": __import__("os").system("touch {marker}") or "float32[48, 20]"')
    with pytest.raises(KernelSourceError) as caught:
        file_arguments(parse_module(hostile, "mm.py"))
    assert caught.value.line == 3 and "it is read, never run" in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize("literal,message", [
    ("[1, 2]", "must be a dict of names to specs, not a list"),
    ('{"A": "float32[48, 20", "B": 1, "C": 2}', "THREADMAP_ARGS['A']: 'float32[48, 20' is "
                                                "neither an array"),
    ('{3: "float32[4]"}', "3 is not a parameter name"),
])
def test_a_bad_literal_is_refused_at_its_line(literal, message):
    text = MATMUL.replace(MATMUL.splitlines()[2], f"THREADMAP_ARGS = {literal}")
    with pytest.raises(KernelSourceError) as caught:
        file_arguments(parse_module(text, "mm.py"))
    assert message in str(caught.value) and caught.value.line == 3


def threadmap(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "app.launcher", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_a_file_that_describes_its_matrices_runs_on_those_shapes(tmp_path):
    path = tmp_path / "mm.py"
    path.write_text(MATMUL)
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    request = summary["request"]
    assert (request["m"], request["k"], request["n"]) == (48, 20, 36)
    assert summary["verdict"] == "PASS"
    # --arg replaces the file's entry by name; the shapes must still agree
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", "--arg",
                     "B=float32[21, 36]", "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2
    assert "--arg B=float32[21, 36]: its row count is 21, but A=float32[48, 20] makes K 20" \
        in proc.stderr
    # --shape wins over the file's matrices
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", "--shape",
                     "16x8x16", "--out", str(tmp_path / "shape"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "shape" / "result.json").read_text())["request"]["m"] == 16


def test_flattened_matrices_take_their_dimensions_from_the_scalars(tmp_path):
    path = tmp_path / "flat.py"
    path.write_text(FLAT)
    described = ["--arg", "a=float32[960]", "--arg", "b=float32[720]", "--arg",
                 "c=float32[1728]", "--arg", "m=48", "--arg", "k=20", "--arg", "n=36"]
    out = tmp_path / "out"
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", *described,
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "result.json").read_text())
    assert (summary["request"]["m"], summary["request"]["k"], summary["request"]["n"]) == \
        (48, 20, 36)
    assert summary["verdict"] == "PASS"
    wrong = [item.replace("720", "700") for item in described]
    proc = threadmap("run", "--kernel-file", str(path), "--backend", "cpu", *wrong,
                     "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2
    assert proc.stderr == "threadmap: error: --arg b=float32[700]: B holds K x N = 720 " \
                          "elements, not 700\n"
    assert not (tmp_path / "bad").exists()


# -- describe_request: the file's description, the command line's, and their meeting ---------

from kernels.request import RunRequest  # noqa: E402
from kernels.sources.arguments import describe_request  # noqa: E402

FLAT_DESCRIBED = FLAT.replace(
    "\n\n@cuda.jit",
    '\nTHREADMAP_ARGS = {"a": "float32[2048]", "b": "float32[1024]", "c": "float32[2048]",\n'
    '                  "m": 64, "k": 32, "n": 32}\n\n@cuda.jit', 1)

TWO = MATMUL.replace('"C": "float32[48, 36]"}', '"C": "float32[48, 36]", "alpha": 2.0}') \
    .replace("def matmul(A, B, C):", "def matmul(A, B, C, alpha):") + '''

@cuda.jit
def matmul2(X, Y, Z):
    i, j = cuda.grid(2)
    if i < Z.shape[0] and j < Z.shape[1]:
        acc = 0.0
        for k in range(X.shape[1]):
            acc += X[i, k] * Y[k, j]
        Z[i, j] = acc * 1.0
'''


def _file(tmp_path, text, name="k.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_dimension_with_a_trailing_underscore_is_refused_not_a_crash(tmp_path):
    with pytest.raises(RequestError, match="--arg A: '1_' is not a dimension"):
        parse_argument("A=float32[1_]")
    path = _file(tmp_path, MATMUL.replace("float32[48, 20]", "float32[48_, 20]"))
    with pytest.raises(KernelSourceError, match="'48_' is not a dimension"):
        describe_request(RunRequest(kernel=None, kernel_file=path))


@pytest.mark.parametrize("text,message", [
    ("x=float32[٣]", "'٣' is not a dimension"),
    ("n=٣", "is not a number written in ASCII digits"),
    ("n=inf", "'inf' is not a finite number"),
    ("a=float32(1e400)", "'1e400' is not a finite number"),
    ("a=float32(1e39)", "does not fit float32"),
])
def test_numbers_that_are_not_plain_finite_ones_are_refused(text, message):
    with pytest.raises(RequestError, match=message):
        parse_argument(text)


def test_a_scalar_that_names_an_array_is_refused(tmp_path):
    path = _file(tmp_path, MATMUL)
    with pytest.raises(RequestError, match="--scalar A: kernel 'matmul' indexes A as an array"):
        describe_request(RunRequest(kernel=None, kernel_file=path, scalars=(("A", 3),)))


def test_a_matrix_of_three_dimensions_is_refused(tmp_path):
    shape_only = MATMUL.replace("A[i, k] * B[k, j]", "1.0 * B.shape[0]")
    path = _file(tmp_path, shape_only)
    with pytest.raises(RequestError, match=r"--arg B=float32\[20, 36, 2\]: a matrix has 2 "
                                           r"dimensions \(or 1, flattened\)"):
        describe_request(RunRequest(kernel=None, kernel_file=path), ["B=float32[20, 36, 2]"])


def test_shape_replaces_the_files_matrices_and_its_dimension_scalars(tmp_path):
    path = _file(tmp_path, FLAT_DESCRIBED)
    described = describe_request(RunRequest(kernel=None, kernel_file=path))
    assert described.shape == (64, 32, 32) and dict(described.scalars) == \
        {"m": 64, "k": 32, "n": 32}
    asked = RunRequest(kernel=None, kernel_file=path, m=16, k=16, n=16)
    assert describe_request(asked, shape_given=True) == asked  # the file's m, k, n left out


def test_in_a_file_of_two_kernels_the_other_kernels_entries_are_left_out(tmp_path):
    path = _file(tmp_path, TWO)
    first = describe_request(RunRequest(kernel="matmul", kernel_file=path))
    assert first.shape == (48, 20, 36) and first.scalars == (("alpha", 2.0),)
    second = RunRequest(kernel="matmul2", kernel_file=path, m=8, k=8, n=8)
    assert describe_request(second) == second


def test_dtype_replaces_the_files_and_is_refused_against_arg_matrices(tmp_path):
    path = _file(tmp_path, MATMUL)
    assert describe_request(RunRequest(kernel=None, kernel_file=path),
                            dtype_given="float64").dtype == "float64"
    with pytest.raises(RequestError, match=r"--dtype float64, but --arg A=float32\[48, 20\] "
                                           "is float32"):
        describe_request(RunRequest(kernel=None, kernel_file=path), ["A=float32[48, 20]"],
                         dtype_given="float64")


def test_a_scalar_inside_a_call_in_an_index_is_no_integer_use():
    module = parse_module(VADD.replace("out[j] = alpha * x[j] + y[j]",
                                       "out[j] = x[int(alpha * j)] + y[j]"), "v.py")
    uses = parameter_uses(module, module.kernel(None))
    assert "alpha" not in uses.integer_uses and "n" in uses.integer_uses


def test_dimension_scalars_alone_give_the_shape(tmp_path):
    path = _file(tmp_path, FLAT)
    request = RunRequest(kernel=None, kernel_file=path)
    described = describe_request(request, ["m=64", "k=32", "n=16"])
    assert described.shape == (64, 32, 16)
    with pytest.raises(RequestError, match="--arg m=64, but --shape makes M 8"):
        describe_request(request.with_(m=8, k=8, n=8), ["m=64"], shape_given=True)
    with pytest.raises(RequestError, match="--arg m=-5: m is the matrices' M, a positive"):
        describe_request(request, ["m=-5"])
    # --scalar gives N where the matrices are flat
    flat = describe_request(request.with_(scalars=(("n", 32),)),
                            ["a=float32[2048]", "b=float32[1024]", "c=float32[2048]", "m=64",
                             "k=32"])
    assert flat.shape == (64, 32, 32)


def test_a_file_that_leaves_a_parameter_out_says_so(tmp_path):
    path = _file(tmp_path, MATMUL.replace(', "C": "float32[48, 36]"', ""))
    with pytest.raises(RequestError) as caught:
        describe_request(RunRequest(kernel=None, kernel_file=path))
    assert str(caught.value) == ("kernel 'matmul' needs C described (an array it indexes with "
                                 "2 indices); e.g. --arg C=float32[64, 64] (k.py:3 "
                                 "THREADMAP_ARGS does not describe it)")


def test_run_watch_reads_the_files_description_again_at_each_save(tmp_path):
    import signal
    import time

    kernel = tmp_path / "mm.py"
    kernel.write_text(MATMUL)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                             str(kernel), "--backend", "cpu", "--out", str(out), "--watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []

        def until(word: str) -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                lines.append(line)
                if word in line:
                    return
            raise AssertionError(lines)

        until("watching")
        assert json.loads((out / "result.json").read_text())["request"]["m"] == 48
        kernel.write_text(MATMUL.replace("[48, ", "[40, "))  # A and C now 40 rows
        until("before this save: PASS")
        request = json.loads((out / "result.json").read_text())["request"]
        assert (request["m"], request["k"], request["n"]) == (40, 20, 36)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
