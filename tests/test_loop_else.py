"""``for ... else`` and ``while ... else`` in the emulation (issue 44, point 3):
a loop's else runs for the lanes that left it by its test, not by a break,
in both tiers, which agree element by element; the construct is one rewrite
(derived/loop_else.py) and costs neither emitter a line."""
import ast
from pathlib import Path

import numpy as np
import pytest

from kernels import RunRequest, run
from kernels.derived.loop_else import else_of, without_loop_else
from kernels.inputs import make_inputs
from tests.conftest import assert_same_results

FILE = str(Path(__file__).parent / "kernels" / "loop_else.py")
LINES = Path(FILE).read_text().splitlines()


def _run(kernel: str, tier: str, shape=(45, 3, 2), grid=(2,), block=(32,)):
    m, k, n = shape
    return run(RunRequest(kernel=kernel, kernel_file=FILE, m=m, k=k, n=n, grid=grid,
                          block=block, backend="cpu", tier=tier))


def _line(text: str) -> int:
    (number,) = [i for i, line in enumerate(LINES, start=1) if text in line]
    return number


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_the_else_runs_where_the_loop_was_not_broken(tier):
    result = _run("first_negative", tier)
    a, _ = make_inputs("random", 45, 3, 2, "float32", seed=0)  # (the run's inputs)
    c = result.c
    for i in range(45):
        negative = np.flatnonzero(a[i] < 0)
        if negative.size:                  # broke at its first negative: no else
            assert c[i, 0] == negative[0] and np.isnan(c[i, 1]), i
        else:                              # ran out: the else, and -1 left
            assert c[i, 0] == -1 and c[i, 1] == 1.0, i
    # both kinds of row are there (the test could tell them apart)
    rows_without = [i for i in range(45) if (a[i] >= 0).all()]
    assert 0 < len(rows_without) < 45
    # the else is a branch of its own, named for its loop, at its line
    (branch,) = [d for d in result.analysis.divergence
                 if d.branch.text == f"else of the loop at line {_line('for k in range')}"]
    assert branch.branch.line == _line("C[i, 1] = 1.0")
    in_else = [w for w in range(2) if any(32 * w <= i < 32 * w + 32 for i in rows_without)]
    assert branch.requests == len(in_else)


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_an_inner_loop_s_else_breaks_the_outer_loop(tier):
    result = _run("nested", tier, shape=(40, 12, 2))
    a, _ = make_inputs("random", 40, 12, 2, "float32", seed=0)
    c = result.c
    found = 0
    for i in range(40):
        runs = [j for j in range(12 - 2) if (a[i, j:j + 3] > 0).all()]
        found += bool(runs)
        if runs:
            assert c[i, 0] == runs[0] and np.isnan(c[i, 1]), i
        else:
            assert c[i, 0] == -1 and c[i, 1] == 2.0, i
    assert 0 < found < 40  # both kinds of row


@pytest.mark.parametrize("kernel,shape", [("first_negative", (45, 3, 2)),
                                          ("nested", (40, 12, 2))])
def test_the_tiers_agree_element_by_element(kernel, shape):
    compiled = _run(kernel, "compiled", shape)
    instant = _run(kernel, "instant", shape)
    assert "numpy lockstep" in instant.timings[1].method
    assert_same_results(compiled, instant)


def test_the_rewrite_keeps_lines_and_flags_only_its_own_breaks():
    source = ("for i in range(3):\n"
              "    for j in range(3):\n"
              "        if j == 1:\n"
              "            break\n"
              "    else:\n"
              "        break\n"
              "else:\n"
              "    x = 1\n")
    body = without_loop_else(ast.parse(source).body)
    text = ast.unparse(ast.Module(body=body, type_ignores=[]))
    # the inner loop's break is its own (_tm_broke0); its else's break is the outer one's
    assert text == ("_tm_broke1 = False\n"
                    "for i in range(3):\n"
                    "    _tm_broke0 = False\n"
                    "    for j in range(3):\n"
                    "        if j == 1:\n"
                    "            _tm_broke0 = True\n"
                    "            break\n"
                    "    if not _tm_broke0:\n"
                    "        _tm_broke1 = True\n"
                    "        break\n"
                    "if not _tm_broke1:\n"
                    "    x = 1")
    assert [else_of(s) for s in body] == [None, None, 1]
    assert body[2].lineno == 8 and body[1].body[2].lineno == 6


def test_the_kernels_compile_for_a_gpu_as_written():
    import importlib.util

    from numba import cuda, float32

    spec = importlib.util.spec_from_file_location("tm_loop_else_kernels", FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (our own test file, not a user's)
    array = float32[:, :]
    for name in ("first_negative", "nested"):
        ptx, _ = cuda.compile_ptx(getattr(module, name).py_func, (array, array, array),
                                  cc=(9, 0))
        assert ".entry" in ptx
