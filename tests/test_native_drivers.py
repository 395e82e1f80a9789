"""The compiled tier's drivers run as native code without numba (derived/native.py)
give numba's results element by element, and anything the native code was not
made for still runs, through numba."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run
from kernels.derived import codegen, native
from kernels.presets import default_launch
from kernels.sources.arguments import describe_request
from tests.conftest import assert_same_results

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
KERNELS = Path(__file__).parent / "kernels"


def _example(name: str) -> RunRequest:
    request = describe_request(RunRequest(
        kernel=None, kernel_file=str(EXAMPLES / f"{name}.py"), backend="cpu", repeats=1,
        tier="compiled", reference=f"{EXAMPLES / 'references.py'}:{name}"))
    return default_launch(request)


def _matmul(kernel: str, shape, grid, block) -> RunRequest:
    m, k, n = shape
    where = {"kernel": None, "kernel_file": str(KERNELS / kernel)} if kernel.endswith(".py") \
        else {"kernel": kernel}
    return RunRequest(**where, m=m, k=k, n=n, grid=grid, block=block, backend="cpu",
                      tier="compiled", repeats=1)


CASES = {
    # coalescing; shared memory and barriers; warp shuffles; atomics; libm (exp)
    "transpose_naive": lambda: _example("transpose_naive"),
    "transpose_tiled": lambda: _example("transpose_tiled"),
    "reduce_shuffle": lambda: _example("reduce_shuffle"),
    "reduce_last_warp": lambda: _example("reduce_last_warp"),
    "histogram": lambda: _example("histogram"),
    "softmax_rows": lambda: _example("softmax_rows"),
    "scan_blelloch": lambda: _example("scan_blelloch"),
    # the matmuls: a grid-stride loop; out of bounds and collisions; a race
    "grid-stride": lambda: _matmul("grid-stride", (37, 19, 53), (3, 2), (32, 2)),
    "tid-rows": lambda: _matmul("tid-rows", (9, 4, 11), (1,), (12,)),
    "missing_barrier": lambda: _matmul("missing_barrier.py", (16, 16, 16), (1, 1), (16, 16)),
}


def _routes(monkeypatch, request: RunRequest):
    """The request run through numba, then through the native drivers that
    run left in the cache; and the module the second run used."""
    codegen._LOADED.clear()
    with monkeypatch.context() as patch:
        patch.setattr(codegen, "load_native", lambda path, numba: None)
        through_numba = run(request)
    codegen._LOADED.clear()
    used = []
    real = native.load_native

    def spied(path, numba):
        used.append(real(path, numba))
        return used[-1]

    with monkeypatch.context() as patch:
        patch.setattr(codegen, "load_native", spied)
        through_native = run(request)
    codegen._LOADED.clear()
    return through_numba, through_native, used


@pytest.mark.parametrize("name", CASES)
def test_the_native_drivers_give_numba_s_results(monkeypatch, name):
    through_numba, through_native, used = _routes(monkeypatch, CASES[name]())
    assert used and isinstance(used[0], native.NativeDrivers), "the native route was not taken"
    assert_same_results(through_numba, through_native)


def test_a_new_process_runs_the_compiled_tier_without_importing_numba():
    request = _example("transpose_naive")
    run(request)  # (the module and its native file in the cache)
    script = (
        "import sys\n"
        "from kernels import run\n"
        "from kernels.presets import default_launch\n"
        "from kernels.sources.arguments import describe_request\n"
        "from kernels.request import RunRequest\n"
        f"r = default_launch(describe_request(RunRequest(kernel=None, kernel_file={str(EXAMPLES / 'transpose_naive.py')!r}, backend='cpu', repeats=1, tier='compiled', reference={str(EXAMPLES / 'references.py') + ':transpose_naive'!r})))\n"
        "result = run(r)\n"
        "print(result.verdict.word, 'numba' in sys.modules)\n")
    assert _in_a_fresh_process(script) == ["PASS", "False"]


def _in_a_fresh_process(script: str) -> list[str]:
    """The words ``script`` prints, run by a new interpreter."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _native_file(request: RunRequest) -> Path:
    codegen._LOADED.clear()
    run(request)
    (gen,) = codegen._LOADED.values()
    path = native.native_path(gen.path)
    assert path.exists()
    codegen._LOADED.clear()
    return path


@pytest.mark.parametrize("damage", ["another CPU", "garbled", "another format"])
def test_a_native_file_not_for_this_machine_is_passed_over_for_numba(damage):
    request = _example("vector_add")
    path = _native_file(request)
    expected = run(request)
    codegen._LOADED.clear()
    kept = path.read_bytes()
    try:
        record = json.loads(kept)
        if damage == "another CPU":
            record["host"]["cpu"] = "some-other-cpu"
            path.write_text(json.dumps(record))
        elif damage == "another format":
            record["format"] = native.FORMAT + 1
            path.write_text(json.dumps(record))
        else:
            path.write_bytes(kept[: len(kept) // 2])
        assert native.load_native(path, lambda: None) is None
        again = run(request)
        (gen,) = codegen._LOADED.values()
        assert not isinstance(gen.module, native.NativeDrivers)
        assert_same_results(expected, again)
    finally:
        path.write_bytes(kept)
        codegen._LOADED.clear()


def test_a_native_file_made_for_other_argument_types_is_replaced(monkeypatch):
    """Drivers kept for arrays of other types (the read counts were int64
    before) decline a run's arguments, which go through numba; the file is
    then made again from numba's code for them, and the next run takes the
    native route (else every run would pay numba's 0.24 s)."""
    request = _example("vector_add")
    path = _native_file(request)
    expected = run(request)
    codegen._LOADED.clear()
    kept = json.loads(path.read_text())
    record = json.loads(path.read_text())
    params = record["drivers"]["_tm_run_record"]["params"]
    which = next(i for i, p in enumerate(params) if p[0] == "array" and p[1] == "<i4")
    params[which][1] = "<i8"  # (as a file made when that record was int64)
    path.write_text(json.dumps(record))
    from kernels.backends import cpu

    monkeypatch.setattr(cpu, "_NATIVE_TRIED", set())  # (as in a new process)
    try:
        declined = run(request)
        (gen,) = codegen._LOADED.values()
        assert isinstance(gen.module, native.NativeDrivers) and gen.module.declined
        assert_same_results(expected, declined)
        assert json.loads(path.read_text())["drivers"]["_tm_run_record"]["params"] == \
            kept["drivers"]["_tm_run_record"]["params"]  # (made again, for these types)
        codegen._LOADED.clear()
        again = run(request)
        (gen,) = codegen._LOADED.values()
        assert isinstance(gen.module, native.NativeDrivers) and not gen.module.declined
        assert_same_results(expected, again)
    finally:
        path.write_text(json.dumps(kept))
        codegen._LOADED.clear()


def test_arguments_the_native_code_was_not_made_for_go_through_numba():
    request = _example("vector_add")
    path = _native_file(request)
    drivers = native.load_native(path, lambda: None)
    driver = drivers._tm_run_plain
    params = driver._params
    args = []
    for param in params:
        if param[0] == "array":
            args.append(np.zeros((2,) * param[2], param[1]))
        else:
            args.append(0)
    assert driver.accepts(args)
    strided = list(args)
    first = next(i for i, p in enumerate(params) if p[0] == "array")
    strided[first] = np.zeros((4,) * params[first][2], params[first][1])[::2]
    assert not driver.accepts(strided)
    wrong_type = list(args)
    wrong_type[first] = args[first].astype(np.complex64)
    assert not driver.accepts(wrong_type)
    assert not driver.accepts(args[:-1])
    # a number of another type than the code's (numba would compile another signature)
    number = next(i for i, p in enumerate(params) if p[0] == "number")
    assert params[number][1] == "int64"
    for other in (1.0, np.int32(1), True):
        wrong_number = list(args)
        wrong_number[number] = other
        assert not driver.accepts(wrong_number), other
    assert [native.number_type(v) for v in (1, 1.0, True, np.float32(1), np.uint8(1), "1")] \
        == ["int64", "float64", "bool", "float32", "uint8", None]


def test_the_comparison_runs_as_native_code_with_numba_s_figures():
    """The parent's comparison of C with the reference (analyses/correctness.py)
    loads its native code too: a described run's parent then imports no numba."""
    from kernels.analyses import correctness

    c = np.random.default_rng(7).standard_normal((300, 500)).astype(np.float32)
    ref = c.astype(np.float64) + 1e-4
    c[2, 3] = np.nan
    figures = {}
    for route in ("numba", "native"):
        correctness._compare_compiled.clear()
        if route == "numba":
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(native, "load_native", lambda path, numba: None)
                function = correctness._compiled_compare(np.dtype(np.float32))
            assert not isinstance(getattr(function, '__self__', None), native._Driver)
        else:
            function = correctness._compiled_compare(np.dtype(np.float32))
            assert isinstance(function.__self__, native._Driver)
        out = np.zeros(8)
        function(c, ref, np.abs(ref) * 1e-5 + 1e-6, 0.0, 0.0, out)
        elementwise = np.zeros(8)  # (its bound made in the loop: a user's reference's)
        function(c, ref, correctness.NO_BOUNDS, 1e-5, 1e-6, elementwise)
        assert np.array_equal(elementwise, out)
        figures[route] = out
    correctness._compare_compiled.clear()
    assert np.array_equal(figures["numba"], figures["native"])
    assert figures["native"][5] == 1  # the NaN
    script = ("import sys, numpy as np\n"
              "from kernels.analyses import correctness\n"
              "c = np.ones((700, 600), np.float32); ref = np.ones((700, 600))\n"
              "print(correctness._compare_block(c, ref, ref * 1e-3)[4], 'numba' in sys.modules)\n")
    assert _in_a_fresh_process(script) == ["0.0", "False"]


def test_a_driver_keeps_the_layout_of_its_callers_arrays_but_not_of_one_off_calls():
    request = _example("vector_add")
    drivers = native.load_native(_native_file(request), lambda: None)
    driver = drivers._tm_run_plain
    driver._laid_out.clear()
    for _ in range(native.LAYOUTS_KEPT + 3):
        args = [np.zeros((2,) * p[2], p[1]) if p[0] == "array" else 0
                for p in driver._params]
        assert driver._layout(args, keep=False) is not None
    assert not driver._laid_out
    for _ in range(native.LAYOUTS_KEPT + 3):
        args = [np.zeros((2,) * p[2], p[1]) if p[0] == "array" else 0
                for p in driver._params]
        assert driver._layout(args) is driver._layout(args)
    assert len(driver._laid_out) == native.LAYOUTS_KEPT
