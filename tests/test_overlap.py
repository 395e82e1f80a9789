"""What the whole command's overlaps change (issue 22, point 6), checked for what
they must keep: a reference made while the kernel runs gives the verdict it gave
after it; the engine's face and the simulator's switch are read without
importing what the command does not need yet; the workers' maps folded on
several threads, and the plain run's C kept in a buffer faulted in ahead,
equal one worker's run."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import run
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

ROOT = Path(__file__).resolve().parents[1]

SAXPY = '''from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "y": "float32[1000]", "out": "float32[1000]",
                  "n": 1000, "alpha": 2.5}


@cuda.jit
def saxpy(x, y, out, n, alpha):
    start = cuda.grid(1)
    for i in range(start, n, cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]
'''

REFERENCES = '''import threading

CALLED_ON = []


def saxpy(x, y, n, alpha):
    CALLED_ON.append(threading.current_thread().name)
    return alpha * x + y


def saxpy_wrong(x, y, n, alpha):
    return alpha * x - y


def raises(x, y, n, alpha):
    return {}["no such key"]
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("overlap")
    (folder / "saxpy.py").write_text(SAXPY)
    (folder / "refs.py").write_text(REFERENCES)
    return folder


def described(kernel: Path, reference: str | None = None) -> RunRequest:
    return describe_request(RunRequest(kernel=None, kernel_file=str(kernel), grid=(8,),
                                       block=(32,), backend="cpu", repeats=1,
                                       reference=reference))


@pytest.mark.parametrize("reference", ["saxpy", "saxpy_wrong", "raises"])
def test_a_reference_made_while_the_kernel_runs_gives_the_verdict_it_gave_after(
        files, reference):
    request = described(files / "saxpy.py", f"{files / 'refs.py'}:{reference}")
    after = run(request)  # (in this process: the reference after the kernel)
    meanwhile = run(request, isolate=True)  # (in a child: the reference on a thread here)
    assert meanwhile.verdict.passed == after.verdict.passed
    assert meanwhile.verdict.reasons == after.verdict.reasons
    assert meanwhile.verdict.reference_note == after.verdict.reference_note
    if reference == "raises":
        assert "raised KeyError" in meanwhile.verdict.reference_note
        return
    assert meanwhile.verdict.errors.wrong == after.verdict.errors.wrong
    assert meanwhile.verdict.errors.rel_error == after.verdict.errors.rel_error
    np.testing.assert_array_equal(meanwhile.reference, after.reference)
    assert meanwhile.reference.shape == meanwhile.c.shape == (25, 40)  # (the drawn shape)


def test_the_reference_of_an_isolated_run_is_made_on_a_thread_of_its_own(files):
    request = described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy")
    result = run(request, isolate=True)
    assert result.verdict.passed
    # (each run loads the file afresh, under one module name: the last one is this run's)
    refs = [m for name, m in sys.modules.items() if name.startswith("threadmap_reference_")
            and getattr(m, "__file__", None) == str(files / "refs.py")]
    assert len(refs) == 1 and refs[0].CALLED_ON == ["threadmap reference"]


def test_the_reference_keeps_no_array_of_its_own_function(files):
    """The expected output is copied once, into C order: a reference that
    returns an array it keeps (the Python API's caller's) is never aliased."""
    from kernels.reference_code import expected_output
    from kernels.sources.loader import load_plan

    request = described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy")
    plan = load_plan(request)
    length = next(a for a in request.arguments if a.name == plan.output).shape
    kept = np.arange(np.prod(length), dtype=np.float64).reshape(length)
    expected = expected_output(request, plan, given=lambda *_: kept)
    assert expected.reference is not None, expected.why_none
    assert not np.shares_memory(expected.reference.c, kept)
    assert expected.reference.c.flags.c_contiguous
    np.testing.assert_array_equal(expected.reference.c.reshape(-1), kept.reshape(-1))


def _fresh_python(code: str, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_command_line_is_reached_without_the_rest_of_the_face():
    """``threadmap run`` starts its kernel's child before it imports the
    analyses: ``command_line`` comes without the face, and the face comes
    whole on its first name."""
    out = json.loads(_fresh_python(
        "import json, sys, kernels\n"
        "from kernels import command_line\n"
        "light = 'kernels.api' not in sys.modules and 'kernels.engine' not in sys.modules\n"
        "from kernels import RunRequest, run, __all__\n"
        "print(json.dumps({'light': light, 'face': 'kernels.api' in sys.modules,\n"
        "  'same': kernels.command_line is command_line, 'all': len(__all__),\n"
        "  'missing': [n for n in __all__ if not hasattr(kernels, n)],\n"
        "  'dir': set(__all__) <= set(dir(kernels))}))\n"))
    assert out["light"] and out["face"] and out["same"] and out["dir"]
    assert out["all"] > 50 and not out["missing"]


def test_an_unknown_name_of_the_face_is_an_attribute_error():
    import kernels

    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        kernels.no_such_name  # noqa: B018


@pytest.mark.parametrize("value,expected", [("1", True), ("0", False), ("", False)])
def test_the_simulators_switch_is_read_as_numba_reads_it_without_importing_numba(
        value, expected):
    out = json.loads(_fresh_python(
        "import json, sys\n"
        "from kernels.backends.device import simulating\n"
        "before = simulating()\n"
        "imported = 'numba' in sys.modules\n"
        "from numba import config\n"
        "print(json.dumps([before, imported, bool(config.ENABLE_CUDASIM)]))\n",
        NUMBA_ENABLE_CUDASIM=value))
    assert out == [expected, False, expected]


def test_maps_folded_in_pieces_on_threads_equal_the_folds_whole():
    from kernels.backends import cpu

    rng = np.random.default_rng(7)
    whole = [rng.integers(0, 50, 3000, dtype=np.int32) for _ in range(3)]
    other = [rng.integers(0, 50, 3000, dtype=np.int32) for _ in range(3)]
    expected = [np.add(whole[0], other[0]), np.minimum(whole[1], other[1]),
                np.maximum(whole[2], other[2])]
    strided = rng.integers(0, 9, (40, 80), dtype=np.uint8)[:, ::2]  # (not contiguous)
    strided_other = np.ones_like(strided)
    expected.append(strided + 1)
    old = cpu._FOLD_PIECE
    cpu._FOLD_PIECE = 256  # (3,000 elements: 12 pieces)
    try:
        cpu._fold_in_parallel([(np.add, whole[0], other[0]), (np.minimum, whole[1], other[1]),
                               (np.maximum, whole[2], other[2]),
                               (np.add, strided, strided_other)], threads=3)
    finally:
        cpu._FOLD_PIECE = old
    for got, want in zip(whole + [strided], expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernel,shape,grid,block", [
    ("tid-rows", (9, 4, 11), (6,), (32,)),  # threads of different workers store one element
    ("grid-stride", (37, 19, 53), (3,), (64,)),  # each worker's elements interleaved, all written
])
def test_workers_folded_in_pieces_with_the_last_plain_c_equal_one_worker(
        monkeypatch, kernel, shape, grid, block):
    """A run on three workers, its maps folded in small pieces and its plain
    run repeated (the last run's C, merged from the workers', is the
    output), equals one worker's run, map by map and C."""
    from kernels.backends import cpu

    m, k, n = shape
    request = RunRequest(kernel=kernel, m=m, k=k, n=n, grid=grid, block=block,
                         backend="cpu", tier="compiled")
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "1")
    alone = run(request)
    monkeypatch.setenv("THREADMAP_EMULATION_WORKERS", "3")
    monkeypatch.setattr(cpu, "_FOLD_PIECE", 8)
    split = run(request)
    assert "3 cores" in split.timings[1].method
    assert split.timings[-1].samples > 1  # (repeated: the last run's C is the output)
    ours, theirs = split.maps_arrays(), alone.maps_arrays()
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert np.array_equal(ours[name], theirs[name], equal_nan=True), name
    assert np.array_equal(split.c, alone.c, equal_nan=True)
    assert alone.verdict.passed == split.verdict.passed
    if kernel == "grid-stride":  # (its plain run ran, and its C is whole and right)
        assert split.timing("kernel").samples > 1 and split.verdict.passed
        assert not np.isnan(split.c).any()


@pytest.mark.parametrize("argv,expected", [
    (["run", "--kernel-file", "k.py", "--out", "o"], "k.py"),
    (["run", "--kernel-file=k.py", "--backend", "cpu"], "k.py"),
    (["run", "--backend=auto", "--kernel-file", "k.py"], "k.py"),
    (["run", "--kernel-file", "k.py", "--backend", "sim"], None),  # (its own child, later)
    (["run", "--kernel-file", "k.py", "--backend=gpu"], None),
    (["run", "--kernel", "naive-2d"], None),                     # (a built-in: no child)
    (["sweep", "--kernel-file", "k.py"], None),
    (["run", "--out", "o", "--", "--kernel-file", "k.py"], None),
    (["run", "--kernel-file"], None),
    ([], None),
])
def test_the_kernel_file_to_start_a_child_for_is_read_from_the_typed_arguments(argv, expected):
    from kernels.command import kernel_file_to_warm

    assert kernel_file_to_warm(argv) == expected


def test_a_run_s_child_starts_before_numpy_is_imported_and_runs_the_request(files, tmp_path):
    """``threadmap run --kernel-file`` starts its child from the arguments as
    typed, before the command line (and numpy) is imported, and the run
    takes that child, not a second one."""
    out = json.loads(_fresh_python(  # (its last line: the command prints its summary first)
        "import json, sys\n"
        "import kernels.backends.child as child\n"
        "real, seen = child.warm_for_file, []\n"
        "def spy(path):\n"
        "    real(path)\n"
        "    seen.append({'numpy': 'numpy' in sys.modules, 'pid': child.runner(False).pid})\n"
        "child.warm_for_file = spy\n"
        "from kernels import command_line\n"
        f"code = command_line(['run', '--kernel-file', {str(files / 'saxpy.py')!r}, '--out', "
        f"{str(tmp_path / 'out')!r}, '--reference', {str(files / 'refs.py') + ':saxpy'!r}])\n"
        "print(json.dumps({'seen': seen, 'code': code, 'after': child.runner(False).pid}))\n"
    ).splitlines()[-1])
    assert out["code"] == 0
    (early,) = out["seen"]
    assert not early["numpy"] and early["pid"] is not None
    assert out["after"] == early["pid"]  # (the same child ran it)
    summary = json.loads((tmp_path / "out" / "result.json").read_text())
    assert summary["verdict"] == "PASS" and "not_checked_against_a_reference" not in summary
    from kernels.maps_file import load_maps

    maps = load_maps(tmp_path / "out" / "maps.npz", summary["maps"])  # (one run's pair)
    np.testing.assert_allclose(maps["reference"], maps["C"], rtol=1e-6)


def test_maps_final_gets_the_result_with_its_reference_output_before_the_verdict(files):
    """What ``run``'s ``maps_final`` is given (and the command line writes
    maps.npz from) is the returned result less its verdict: the same maps,
    the reference's output already there, the check not yet made."""
    from kernels.analyses.correctness import NO_REFERENCE

    request = described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy_wrong")
    given = []
    result = run(request, isolate=True, maps_final=given.append)
    (early,) = given
    assert early.maps is result.maps and early.c is result.c
    np.testing.assert_array_equal(early.reference, result.reference)
    assert early.reference.shape == result.c.shape
    assert early.verdict.reference_note == NO_REFERENCE
    assert not result.verdict.passed and result.verdict.errors.wrong > 0


def test_numba_s_scalar_types_are_named_as_numba_names_them_without_importing_it():
    """A shared array's dtype (``cuda.shared.array(TPB, float32)``) is read
    from a table, not from numba (a 0.3 s import the child waited for):
    the table says what numba says, name by name."""
    from numba import types
    from numba.np.numpy_support import as_dtype

    from kernels.sources.allow import NUMBA_DTYPES, NUMBA_TYPES

    assert set(NUMBA_DTYPES) == NUMBA_TYPES - {"void", "none"}
    for name, dtype in NUMBA_DTYPES.items():
        assert str(as_dtype(getattr(types, name))) == dtype, name


def test_a_run_with_shared_memory_is_checked_without_importing_numba():
    out = json.loads(_fresh_python(
        "import json, sys\n"
        "from kernels import engine\n"
        "from kernels.request import RunRequest\n"
        "from kernels.sources.arguments import describe_request\n"
        "request = describe_request(RunRequest(kernel=None, kernel_file="
        "'examples/reduce_first_add.py', grid=(8,), block=(128,), backend='cpu'))\n"
        "_, plan, _ = engine.prepare(request)\n"
        "from kernels.derived.local_types import block_array_specs\n"
        "specs = block_array_specs(plan, request.element_types)\n"
        "print(json.dumps({'numba': 'numba' in sys.modules,\n"
        "                  'specs': [(s.kind, s.shape, s.dtype) for s in specs]}))\n"))
    assert out == {"numba": False, "specs": [["shared", [128], "float32"]]}


def test_a_child_started_early_reports_its_own_start_up_not_the_wait_for_its_run(files):
    """A child started from the typed arguments is read only when the run
    comes; its start-up timing ends where the child was ready, not where the
    parent came to look (here a second later)."""
    import time

    from kernels.backends.child import runner, stop_all, warm_for_file

    stop_all()
    began = time.monotonic()
    warm_for_file(str(files / "saxpy.py"))
    child = runner(simulator=False)
    assert child._from_child.poll(120)  # (its "ready" waits, unread)
    seen = time.monotonic() - began
    time.sleep(1.0)
    try:
        result = run(described(files / "saxpy.py", f"{files / 'refs.py'}:saxpy"),
                     isolate=True)
    finally:
        stop_all()
    (start_up,) = [t for t in result.timings if t.what == "child process start-up"]
    assert 0 < start_up.seconds <= seen
