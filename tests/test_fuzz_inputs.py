"""Fuzzing the front door (issue 18): generated kernel sources and option
strings never give a traceback, never run the marker, and are refused in one
line with status 2.

The sources are kernels assembled from pieces, benign and hostile: module
constants (some huge, some calls), imports (some reaching ``os``),
decorators, annotations, statements.  Each goes through everything the
parent process does with a kernel file before any child starts: parsing,
planning, the evaluation of constants, shapes and signatures, numba's typing
pass, the derived code.  ``THREADMAP_FUZZ_EXAMPLES`` raises the number of
examples (``.ci/run`` runs a longer pass).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import RunRequest, ThreadMapError

EXAMPLES = int(os.environ.get("THREADMAP_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

MARKER = "MARKER"

#: Always there: what a plain kernel needs, so that most generated kernels get
#: past planning to the evaluation of constants and shapes, numba's typing and
#: the derived code, where the hostile pieces then land.
BASE_IMPORTS = ["from numba import cuda", "import numpy as np", "import math", "import numba",
                "from numba import float32, int32, void", "from math import sqrt"]
BASE_CONSTANTS = ["TPB = 16", "W = (4, 4)", "SCALE = np.float32(0.5)", "A0 = 2"]
IMPORTS = [
    "import os", "from numpy.testing._private.utils import os as np_os",
    "from numba.cuda import os as cu_os", "import numpy.testing", "from numba import cuda as gpu",
    "from numba.cuda import threadIdx",
]
CONSTANTS = [
    "N = 2 ** 10", "BIG = 2 ** 64", "A1 = A0 ** 64", "PI2 = math.pi * 2", "Z = 1 / 0",
    f"X = __import__('os').system('touch {MARKER}')", f"Y = open('{MARKER}', 'w')",
    "cuda = 5", "T = eval('16')", "L = [1, 2]", "F = 1e308 * 10", "S = 'float32'",
    "NEG = -(2 ** 63)", "SH = 1 << 65", "U = ~7", "TPB = 32", "if True:\n    TPB = 8",
    "np = __import__('os')", "H = np.float32(1e39)", "I8 = numba.int8(300)",
]
DECORATORS = ["@cuda.jit"] * 6 + [
    "@cuda.jit()", "@cuda.jit('void(float32[:, :], float32[:, :], float32[:, :])')",
    "@cuda.jit('void(int32[:, :], int32[:, :], int32[:, :])')", "@cuda.jit('garbage(')",
    f"@cuda.jit(open('{MARKER}', 'w'))", "@cuda.jit(debug=True, opt=False)",
    "@cuda.jit(link=['x.cu'])", "@cuda.jit(fastmath=1 + 1)", "@gpu.jit", "@numba.cuda.jit",
    "@cuda.jit(void(float32[:, :], float32[:, :], float32[:, :]))",
    "@cuda.jit('void(float64[:, :], float64[:, :], float64[:, :])')",
]
PARAMETERS = ["A, B, C"] * 6 + [
    "A, B, C, n", f"A: open('{MARKER}', 'w'), B, C", "A, B, C=1", "A, B, C, *rest",
    "A: float32, B, C",
]
STATEMENTS = [
    "x = cuda.threadIdx.x", "acc += A[i % A.shape[0], 0]", "acc = acc * TPB",
    "acc = acc * BIG", "acc = acc * A1", "acc = acc * X", "acc = acc * SCALE + sqrt(2.0)",
    "s = cuda.shared.array(TPB, float32)", "s = cuda.shared.array(np.save('MARKER', 1) or 4, float32)",
    "s = cuda.local.array(W, np.float32)", "s = cuda.shared.array(BIG, float32)",
    "s = cuda.shared.array((TPB, TPB), A.dtype)", "s = cuda.local.array(A0 ** 40, float32)",
    "s = cuda.shared.array(TPB, S)", "s = cuda.shared.array(-3, float32)",
    "np.testing._private.utils.os.system('touch MARKER')", "cuda.os.system('touch MARKER')",
    "np_os.system('touch MARKER')", "cu_os.system('touch MARKER')", "os.system('touch MARKER')",
    "open('MARKER', 'w')", "eval('1')", "getattr(A, 'tofile')('MARKER')", "A.tofile('MARKER')",
    "x = A.__class__", "x = '{0.__class__}'.format(A)", "print(A.shape[0])",
    "numba.objmode()", "cuda.syncthreads()", "cuda.syncwarp()", "x = cuda.popc(3)",
    "while True:\n        pass", "for k in range(A.shape[1]):\n        acc += A[0, k] * B[k, 0]",
    "x = [k for k in range(3)]", "x = lambda: 1", "(y): open('MARKER', 'w') = 1",
    "x = np.float32(1) + SCALE", "cuda.atomic.add(C, (0, 0), 1.0)", "x = n * 2", "return",
    "x = 10 ** 10 ** 10", "x = A[0, 0] if A[0, 0] > 0 else B[0, 0]",
    "print('\\nimport os\\nos.system(\"touch MARKER\")')", "global TPB", "del acc",
    "t = threadIdx.x", "acc = acc + math.pi + np.pi", "acc = acc / 0", "x = I8 + H",
    "x = cuda.threadIdx.x // 0", "k = 0\n    while k < 3:\n        k += 1",
    "if x > 0:\n        return", "acc = A.shape[0] * A.size * A.ndim",
]
FINAL = "if i < C.shape[0] and j < C.shape[1]:\n        C[i, j] = A[i, 0] * B[0, j] + acc"


@st.composite
def kernel_sources(draw) -> str:
    imports = BASE_IMPORTS + draw(st.lists(st.sampled_from(IMPORTS), max_size=2))
    constants = BASE_CONSTANTS + draw(st.lists(st.sampled_from(CONSTANTS), max_size=3))
    decorator = draw(st.sampled_from(DECORATORS))
    parameters = draw(st.sampled_from(PARAMETERS))
    body = ["i, j = cuda.grid(2)", "acc = 0.0"]
    body += draw(st.lists(st.sampled_from(STATEMENTS), max_size=4)) + [FINAL]
    lines = imports + constants + ["", decorator, f"def matmul({parameters}):"]
    lines += ["    " + statement for statement in body]
    return "\n".join(lines) + "\n"


def _check_source(folder: Path, text: str) -> None:
    from kernels.engine import prepare

    marker = folder / "marker"
    path = folder / "kernel.py"
    path.write_text(text.replace(MARKER, str(marker)))
    request = RunRequest(kernel=None, kernel_file=str(path), m=8, k=8, n=8, grid=(1, 1),
                         block=(8, 8), scalars=(("n", 8),) if ", n" in text else ())
    try:
        resolved, plan, _ = prepare(request)
        from kernels.derived.codegen import module_text
        module_text(plan, "cuda", resolved.dtype)  # the generated code, as imported later
    except ThreadMapError as exc:
        message = str(exc)
        assert message and "Traceback" not in message
    assert not marker.exists(), text


@FUZZ
@given(text=kernel_sources())
def test_generated_kernel_files_are_planned_or_refused_and_run_nothing(tmp_path_factory, text):
    _check_source(tmp_path_factory.mktemp("fuzz"), text)


@FUZZ
@given(text=st.text(max_size=400))
def test_any_text_as_a_kernel_file_is_refused_or_read(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("text")
    path = folder / "kernel.py"
    try:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    except (UnicodeEncodeError, ValueError):
        return
    from kernels.api import kernel_names

    try:
        kernel_names(path)
    except ThreadMapError as exc:
        assert str(exc)


OPTIONS = {
    "--shape": ["8x8x8", "0x1x1", "1x2", "axbxc", "100000x100000x100000", "-1x2x3", "", "8x8x8x8"],
    "--grid": ["1", "0", "2x2", "1x65536", "2147483648", "x", "1x1x1", "-3"],
    "--block": ["32", "0", "1025", "32x32x2", "64x32", "a"],
    "--seed": ["0", "-5", "1e9", "99999999999999999999", "nan"],
    "--time-limit": ["10", "0", "-1", "nan", "inf", "x"],
    "--dtype": ["float32", "float16", ""],
    "--backend": ["cpu", "gpu", "tpu", "sim"],
    "--scalar": ["n=16", "n", "=3", "n=x", "n=1e400"],
    "--registers": ["32", "0", "300"],
    "--gpu-model": ["H100 SXM", "V100"],
    "--out": ["", "OUT"],
    "--map": ["count", "nope"],
    "--size": ["100x100", "1x1", "99999x9", "x"],
    "--grids": ["1,2", "0", "", "a,b"],
    "--blocks": ["32", "2048", ","],
    "--workers": ["1", "0", "-2", "100000"],
    "--launches": ["file", "0:32", "1:2048", "x", "1x1:8x8", ""],
    "--shapes": ["8x8x8", "0x1x1", ""],
    "--budget": ["5", "0", "nan"],
    "--scheduler": ["notaurl", "tcp://:0", "tcp://host:99999"],
}
COMMANDS = {
    "run": ["--shape", "--grid", "--block", "--seed", "--time-limit", "--dtype", "--backend",
            "--scalar", "--registers", "--gpu-model", "--out", "--map", "--size"],
    "sweep": ["--shape", "--grids", "--blocks", "--seed", "--dtype", "--backend", "--out",
              "--map", "--time-limit"],
    "check": ["--shapes", "--launches", "--workers", "--seed", "--time-limit", "--out",
              "--scheduler", "--backend"],
    "hunt": ["--seed", "--budget", "--out", "--backend", "--dtype"],
}


@st.composite
def command_lines(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    options = draw(st.lists(st.sampled_from(COMMANDS[command]), max_size=4, unique=True))
    argv = [command]
    for option in options:
        argv += [option, draw(st.sampled_from(OPTIONS[option]))]
    return argv


@FUZZ
@given(argv=command_lines())
def test_option_strings_are_refused_in_one_line_or_accepted(tmp_path_factory, argv, capsys,
                                                            monkeypatch):
    """Options that pass validation must not start real work here: the run
    itself is replaced by a refusal that says it was reached."""
    import kernels.cli
    import kernels.engine

    folder = tmp_path_factory.mktemp("argv")
    kernel = folder / "k.py"
    kernel.write_text("from numba import cuda\n\n@cuda.jit\ndef matmul(A, B, C, n):\n"
                      "    C[0, 0] = A[0, 0] * B[0, 0] * n\n")
    argv = [a.replace("OUT", str(folder / "out")) for a in argv]
    if argv[0] in ("run", "sweep"):
        argv += ["--kernel-file", str(kernel)]
    elif argv[0] == "hunt":
        argv += ["--kernel-file", str(kernel)]
    else:
        argv.insert(1, str(folder))
    if "--out" not in argv:
        argv += ["--out", str(folder / "out")]

    class Reached(ThreadMapError):
        pass

    def reached(*args, **kwargs):
        raise Reached("reached the run")

    monkeypatch.setattr(kernels.engine, "run", reached)
    monkeypatch.setattr("kernels.check.run_check", reached)
    monkeypatch.setattr("kernels.search.hunt", reached)
    try:
        status = kernels.cli.main(argv)
    except SystemExit as exc:  # argparse's own refusal
        status = exc.code
    err = capsys.readouterr().err
    assert status in (0, 1, 2), (argv, status, err)
    if status == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 or "reached the run" in err, (argv, err)
        assert "Traceback" not in err


# -- costly sources (issue 42): each bounded in time, none typed in this process -------------

def _huge(digits: int) -> str:
    return "0x" + "f" * digits


@st.composite
def costly_sources(draw) -> str:
    """Kernels whose cost, not their constructs, is the attack: tuples nested
    so that their types double each line, module constants chained through
    thousands of assignments (the first maybe refused), and integer literals
    of thousands of digits, wherever a number goes."""
    digits = draw(st.sampled_from([19, 20, 40, 4000, 4400]))
    constants = ["a0 = " + draw(st.sampled_from(["undefined", "2", _huge(digits), "1.5"]))]
    constants += [f"a{q} = a{q - 1}" for q in range(1, draw(st.integers(0, 5000)))]
    last = f"a{len(constants) - 1}"
    depth = draw(st.integers(0, 26))
    body = ["i, j = cuda.grid(2)", "acc = 0.0", "t0 = A[0, 0]", "u0 = i"]
    body += [f"t{d} = (t{d - 1}, u{d - 1})\n    u{d} = (u{d - 1}, t{d - 1})"
             for d in range(1, depth + 1)]
    body += draw(st.lists(st.sampled_from([
        f"acc = acc * {last}", f"acc = acc + {_huge(digits)}", f"x = A[{_huge(digits)}, 0]",
        f"s = cuda.shared.array({_huge(digits)}, float32)", f"while {_huge(digits)}:\n        pass",
        f"for k in range(0, 4, {_huge(digits)}):\n        acc += 1.0",
    ]), max_size=2))
    body.append(FINAL)
    lines = BASE_IMPORTS + constants + ["", "@cuda.jit", "def matmul(A, B, C):"]
    return "\n".join(lines + ["    " + statement for statement in body]) + "\n"


@pytest.fixture(scope="module")
def typed_in_a_child():
    from kernels.engine import compile_files_in_children

    restore = compile_files_in_children(time_limit=5)
    yield
    restore()


#: (each example may take seconds by design: the CI's longer pass is not run on these)
COSTLY = settings(FUZZ, max_examples=min(EXAMPLES, 40))


@COSTLY
@given(text=costly_sources())
def test_costly_kernel_files_are_planned_or_refused_in_bounded_time(tmp_path_factory, text,
                                                                    typed_in_a_child):
    import time

    started = time.monotonic()
    _check_source(tmp_path_factory.mktemp("costly"), text)
    assert time.monotonic() - started < 30, text[:300]
