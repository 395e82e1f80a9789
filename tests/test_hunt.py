"""threadmap hunt: the smallest failing (shape, launch) of a kernel file."""
import json
import shutil
from pathlib import Path

import pytest

from kernels import RunRequest

ROOT = Path(__file__).resolve().parents[1]

#: the seed's kernel (the built-in tid-rows), as a student would hand it in
SEED = (ROOT / "kernels" / "sources" / "builtin" / "tid_rows.py").read_text()

HANGS = '''from numba import cuda


@cuda.jit
def matmul(A, B, C):
    i = cuda.grid(1)
    while i >= 0:
        i += 0
    C[0, 0] = A[0, 0] * B[0, 0]
'''


def threadmap(*args):
    from app.launcher import main
    return main(list(args))


def test_the_seed_kernel_fails_at_its_smallest_case(tmp_path, capsys):
    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "smallest failing case" in printed
    report = json.loads((out / "hunt.json").read_text())
    failing = report["failing"]
    assert failing["verdict"] == "FAIL" and failing["shape"] == [1, 1, 1]
    # the smallest: no case before it fails, and it is the last one tried
    assert report["cases"][-1] == failing
    assert all(c["verdict"] in ("PASS", "skipped") for c in report["cases"][:-1])
    assert any("more than one thread" in r for r in failing["reasons"])
    assert {p.name for p in out.iterdir()} == {"hunt.json", "result.json", "maps.npz"}
    result = json.loads((out / "result.json").read_text())
    assert result["request"]["m"] == 1 and "hunt" in result["request"]["launch_source"]


def test_a_grid_stride_kernel_passes_every_case(tmp_path, capsys):
    kernel = tmp_path / "grid_stride.py"
    shutil.copy(ROOT / "kernels" / "sources" / "builtin" / "grid_stride.py", kernel)
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(out),
                     "--budget", "120") == 0
    report = json.loads((out / "hunt.json").read_text())
    assert report["failing"] is None and report["stopped"] is None
    tried = [c for c in report["cases"] if c["verdict"] != "skipped"]
    assert len(tried) >= 40 and all(c["verdict"] == "PASS" for c in tried)
    shapes = {tuple(c["shape"]) for c in tried}
    assert (1, 1, 1) in shapes and (100, 37, 90) in shapes  # ones, ragged
    assert f"no failing case: {len(tried)} cases tried" in capsys.readouterr().out
    assert [p.name for p in out.iterdir()] == ["hunt.json"]


def test_a_naive_kernel_fails_where_the_launch_does_not_cover_c(tmp_path):
    from kernels.search import hunt
    kernel = tmp_path / "naive.py"
    shutil.copy(ROOT / "kernels" / "sources" / "builtin" / "naive_2d.py", kernel)
    report = hunt(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"), budget=120)
    assert report.failing is not None and "fewer threads than elements" in report.failing.why
    assert "grid-stride loop" in report.hint


def test_a_kernel_that_hangs_is_a_failed_case_not_a_hung_search(tmp_path, monkeypatch):
    from kernels import search
    monkeypatch.setattr(search, "CASE_LIMIT", 4.0)
    kernel = tmp_path / "hangs.py"
    kernel.write_text(HANGS)
    report = search.hunt(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"),
                               budget=60)
    assert report.failing is not None
    assert "did not finish" in report.failing.reasons[0]
    assert report.seconds < 40


def test_bad_hunts_are_refused(tmp_path, capsys):
    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    assert threadmap("hunt", "--kernel-file", str(kernel), "--out", str(tmp_path / "o"),
                     "--budget", "-1") == 2
    broken = tmp_path / "broken.py"
    broken.write_text("from numba import cuda\n\n@cuda.jit\ndef k(A, B, C):\n    C[0, 0 = 1\n")
    assert threadmap("hunt", "--kernel-file", str(broken), "--out", str(tmp_path / "o")) == 2
    assert "broken.py" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args,said", [
    (("--block", "2048"), "block x = 2,048 is past CUDA's limit of 1,024"),
    (("--block", "32x33"), "1,056 threads is past CUDA's limit of 1,024 threads per block"),
    (("--grid", "70000x70000", "--block", "32"), "grid y = 70,000 is past CUDA's limit"),
    (("--scalar", "n=3"), "has no scalar parameter n (its scalars: none)"),
])
def test_what_every_case_would_refuse_is_refused_before_the_hunt(tmp_path, capsys, args, said):
    """Each case had been skipped for it, and the hunt said 'no failing case:
    0 cases tried' and exited 0, as if the kernel were right."""
    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    assert threadmap("hunt", "--kernel-file", str(kernel), "--backend", "cpu", "--out",
                     str(tmp_path / "o"), *args) == 2
    err = capsys.readouterr().err
    assert said in err and "no failing case" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("shape", [(1, 1, 1), (100, 37, 90)])
def test_the_cases_cover_the_shapes_the_issue_names(shape):
    from kernels.search import SHAPES
    assert shape in SHAPES
    assert any(1 in s for s in SHAPES) and any(s[0] != s[2] for s in SHAPES)


def test_the_app_s_button_finds_the_failing_case_and_opens_it(qtbot, tmp_path):
    from app.main_window import MainWindow
    from app.settings import Settings

    kernel = tmp_path / "seed.py"
    kernel.write_text(SEED)
    window = MainWindow(synchronous=True, settings=Settings(str(tmp_path / "s.ini")),
                        confirm=lambda title, text: True)
    qtbot.addWidget(window)
    assert window.controller.open_kernel_file(str(kernel))
    window.controls.hunt_button.click()
    shown = window.session.current
    assert shown is not None and not shown.verdict.passed
    assert (shown.request.m, shown.request.k, shown.request.n) == (1, 1, 1)
    assert "hunt" in shown.request.launch_source
    assert window.tabs.currentWidget() is window.maps_view
    assert window.status.currentMessage().startswith("smallest failing case")
    assert window.controls.hunt_button.isEnabled()


def test_hunt_labels_are_true_respect_the_kernel_s_block_and_can_be_pinned():
    """(issue 20: 1x1x1 on a block of 32 was called "fewer threads than
    elements", and the search tried 8x8 blocks on a kernel of 16x16 tiles)"""
    from kernels.search import hunt_cases

    for case in hunt_cases(RunRequest(kernel="grid-stride")):
        m, _, n = case.shape
        fewer = case.threads < m * n
        assert ("fewer threads than elements" in case.why) == fewer, case.label()
        assert ("more threads than elements" in case.why) == (case.threads > m * n)
    tiled = hunt_cases(RunRequest(kernel="tiled"))
    assert {case.block for case in tiled} == {(16, 16)}  # its TPB x TPB shared tiles
    pinned = hunt_cases(RunRequest(kernel="naive-2d"), (2, 3), (8, 4))
    assert {(case.grid, case.block) for case in pinned} == {((2, 3), (8, 4))}
    assert len(pinned) == len({case.shape for case in pinned}) > 5


# A kernel run as it is (issue 22): hunted on its own arrays, resized.
GRID_STRIDE_ADD = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]", "y": "float32[4096]", "out": "float32[4096]",
                  "n": 4096}


@cuda.jit
def add(x, y, out, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = x[i] + y[i]
'''


def test_a_kernel_run_as_it_is_is_hunted_on_its_arrays_resized(tmp_path):
    from kernels import wrapped_shape
    from kernels.search import hunt_cases
    from kernels.sources.arguments import describe_request

    kernel = tmp_path / "add.py"
    kernel.write_text(GRID_STRIDE_ADD)
    base = describe_request(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"),
                            as_it_is_unless_matmul=True)
    cases = hunt_cases(base)
    lengths = sorted({case.arguments[0].shape[0] for case in cases})
    # one distinct length, 1-D: C's element counts of the matmul shapes, 1 to 12,513
    assert lengths[0] == 1 and lengths[-1] == 129 * 97 and 527 in lengths
    for case in cases:
        x, y, out, n = case.arguments
        assert x.shape == y.shape == out.shape and n.value == x.shape[0]  # n follows
        rows, width = wrapped_shape(x.shape[0])  # (the output as drawn)
        assert case.shape == (rows, 1, width)
    # smallest first
    assert [c.elements for c in cases] == sorted(c.elements for c in cases)


def test_a_guarded_and_a_grid_stride_kernel_run_as_they_are(tmp_path, capsys):
    add = tmp_path / "add.py"
    add.write_text(GRID_STRIDE_ADD)
    reference = tmp_path / "ref.py"
    reference.write_text("def add(x, y, n):\n    return x + y\n")
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(add), "--reference", f"{reference}:add",
                     "--backend", "cpu", "--budget", "300", "--out", str(out)) == 0
    report = json.loads((out / "hunt.json").read_text())
    assert report["failing"] is None and not report["stopped"]
    assert all(case["verdict"] == "PASS" for case in report["cases"])
    assert report["cases"][0]["arguments"] == ["x=float32[1]", "y=float32[1]",
                                               "out=float32[1]", "n=1"]
    # without its loop and its guard: the extra threads of the smallest case step out
    broken = tmp_path / "broken.py"
    broken.write_text(GRID_STRIDE_ADD.replace(
        "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):\n        out[i]",
        "    i = cuda.grid(1)\n    out[i]"))
    out = tmp_path / "out2"
    assert threadmap("hunt", "--kernel-file", str(broken), "--reference", f"{reference}:add",
                     "--backend", "cpu", "--out", str(out)) == 0
    failing = json.loads((out / "hunt.json").read_text())["failing"]
    assert failing["arguments"][0] == "x=float32[1]"
    assert any("out-of-bounds writes of out" in reason for reason in failing["reasons"])
    assert (out / "maps.npz").exists()


def test_a_transposes_two_dimensions_get_two_sizes(tmp_path):
    from kernels.search import hunt_cases
    from kernels.sources.arguments import describe_request

    kernel = tmp_path / "t.py"
    kernel.write_text((ROOT / "examples" / "transpose_naive.py").read_text().replace(
        '"float32[64, 64]", "out": "float32[64, 64]"',
        '"float32[32, 64]", "out": "float32[64, 32]"'))
    base = describe_request(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu"),
                            as_it_is_unless_matmul=True)
    for case in hunt_cases(base):
        a, out = case.arguments
        assert out.shape == a.shape[::-1]  # rows and columns stay linked
    assert any(a.shape[0] != a.shape[1] for a, _ in (c.arguments for c in hunt_cases(base)))


def test_what_a_hunt_resizes_and_what_it_leaves(tmp_path):
    """A scalar given apart follows the dimension it equals; a dimension of 1 (a
    total) and a scalar equal to 1 (a step) stay; a matmul's dimension scalars never
    pin the sizes its cases change; the caller's own arrays are never resized."""
    from kernels.errors import RequestError
    from kernels.search import case_request, hunt_cases
    from kernels.sources.arguments import describe_request

    kernel = tmp_path / "total.py"
    kernel.write_text('''from numba import cuda

THREADMAP_ARGS = {"x": "float32[4096]", "total": "float32[1]", "step": 1}


@cuda.jit
def total(x, total, n, step):
    for i in range(cuda.grid(1), n, cuda.gridsize(1) * step):
        cuda.atomic.add(total, 0, x[i])
''')
    base = describe_request(RunRequest(kernel=None, kernel_file=str(kernel), backend="cpu",
                                       scalars=(("n", 4096),)), as_it_is_unless_matmul=True)
    for case in hunt_cases(base):
        request = case_request(base, case)
        x, total = (a for a in request.arguments if hasattr(a, "shape"))
        scalars = dict(request.scalars)
        assert total.shape == (1,) and scalars["step"] == 1
        assert scalars["n"] == x.shape[0]  # (given with --scalar, not described)
    with pytest.raises(RequestError, match="cannot resize the caller's own arrays"):
        hunt_cases(base.with_(given_inputs="/nonexistent.npz"))
    # a flattened matmul described with m, k and n: the hunt's cases set them
    matmul = tmp_path / "flat.py"
    matmul.write_text('''from numba import cuda

THREADMAP_ARGS = {"A": "float64[2048]", "B": "float64[1536]", "C": "float64[3072]",
                  "m": 64, "k": 32, "n": 48}


@cuda.jit
def flat(A, B, C, m, k, n):
    for i in range(cuda.grid(1), m * n, cuda.gridsize(1)):
        r, c = i // n, i % n
        s = 0.0
        for p in range(k):
            s += A[r * k + p] * B[p * n + c]
        C[i] = s
''')
    out = tmp_path / "out"
    assert threadmap("hunt", "--kernel-file", str(matmul), "--backend", "cpu",
                     "--dtype", "float32", "--budget", "120", "--out", str(out)) == 0
    report = json.loads((out / "hunt.json").read_text())
    assert report["failing"] is None, report["failing"]
    assert report["cases"][0]["shape"] == [1, 1, 1] and "arguments" not in report["cases"][0]


def test_a_kernel_whose_scalar_comes_from_a_square_shape_is_hunted(tmp_path, capsys):
    """Its size is worked out in each square case; checked on the default
    128x256x128 up front, the hunt had been refused outright."""
    kernel = tmp_path / "square.py"
    kernel.write_text("from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C, size):\n"
                      "    i, j = cuda.grid(2)\n"
                      "    if i < size and j < size:\n"
                      "        s = 0.0\n"
                      "        for k in range(size):\n"
                      "            s += A[i, k] * B[k, j]\n"
                      "        C[i, j] = s\n")
    assert threadmap("hunt", "--kernel-file", str(kernel), "--backend", "cpu", "--budget", "20",
                     "--out", str(tmp_path / "o")) == 0
    out = capsys.readouterr().out
    assert "PASS" in out or "FAIL" in out  # (cases ran: square ones at least)
