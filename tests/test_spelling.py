"""Spellings numba-cuda compiles are run, not refused (issue 43, point 1):
``raise`` (the thread ends, as numba-cuda compiles it without debug),
``len()``, rows taken as ``A[i]`` then indexed, ``A.T[k][j]`` and chained
stores ``out[i][j] =``.  Each kernel is first compiled by numba-cuda itself
(``compile_ptx`` for sm_90: no GPU needed), then run by ThreadMap against a
float64 reference."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from kernels import run
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request
from kernels.sources.spelling import normalise_spelling

WILD = Path(__file__).parent / "wild"


def compiled_by_numba(path: Path, name: str, signature: str) -> str:
    """PTX from numba-cuda for the kernel as written (the test's own file,
    trusted: run here to get its function)."""
    from numba import cuda

    space: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), space)  # noqa: S102 (our own file)
    ptx, _ = cuda.compile_ptx(space[name].py_func, signature, cc=(9, 0))
    return ptx


@pytest.mark.parametrize("name,signature", [
    ("xxt_len_rows.py", "void(float32[:, :], float32[:, :])"),
    ("xxt_raise_rows_cols.py", "void(float32[:, :], float32[:, :])"),
    ("row_sums_row_view.py", "void(float32[:, :], float32[:])"),
])
def test_numba_cuda_compiles_what_threadmap_now_runs(name, signature):
    from kernels.api import kernel_names

    kernel, = kernel_names(WILD / name)
    assert ".entry" in compiled_by_numba(WILD / name, kernel, signature)


def test_len_rows_and_a_transpose_run_as_numba_reads_them():
    request = describe_request(RunRequest(
        kernel=None, kernel_file=str(WILD / "xxt_len_rows.py"), backend="cpu", repeats=1,
        reference=f"{WILD / 'references.py'}:xxt"), as_it_is_unless_matmul=True)
    from kernels.presets import default_launch

    request = default_launch(request)
    assert (request.grid, request.block) == ((5, 5), (8, 8))  # the file's own launch
    result = run(request)
    assert result.verdict.passed, result.verdict.reasons
    np.testing.assert_array_equal(result.maps.count, 1)
    assert result.verdict.errors.rel_error < 1e-6  # float32 sums of 40 terms


def test_a_raise_ends_the_thread_and_the_note_says_so():
    request = describe_request(RunRequest(
        kernel=None, kernel_file=str(WILD / "xxt_raise_rows_cols.py"), grid=(1,),
        block=(1024,), backend="cpu", repeats=1,
        reference=f"{WILD / 'references.py'}:xxt"), as_it_is_unless_matmul=True)
    result = run(request)
    assert any(note.startswith("line 22: 'raise' ends the thread") for note in result.notes), \
        result.notes
    # rows * cols = 4,000 elements of a 100 x 100 output: e // rows runs to 39, so rows
    # 40 to 99 are never written (6,000 elements), and no element twice
    assert not result.verdict.passed
    assert result.verdict.unwritten == 6000, result.verdict.reasons
    assert int(result.maps.count.max()) == 1


def test_what_is_rewritten_and_what_is_left_as_written():
    def rewritten(body: str) -> str:
        tree = ast.parse(f"def k(A, B, C):\n{body}")
        node, _ = normalise_spelling(tree.body[0])
        return ast.unparse(node).split("\n", 1)[1].strip()

    assert rewritten("    x = len(A) + len(A[0])") == "x = A.shape[0] + A.shape[1]"
    assert rewritten("    C[i][j] = A.T[k][j]") == "C[i, j] = A[j, k]"
    assert rewritten("    C[i][1:3] = 0") == "C[i][1:3] = 0"  # (a slice in the chain)
    assert rewritten("    A = B\n    x = len(A)") == "A = B\n    x = len(A)"  # (A rebound)
    assert rewritten("    raise ValueError('x')") == "return"
    assert rewritten("    row = A[i]\n    x = row[k] + row.shape[0] + len(row)") \
        == "pass\n    x = A[i, k] + A.shape[1] + A.shape[1]"
    # (i bound twice: the row it names could change under it; left as written)
    assert rewritten("    i = 0\n    row = A[i]\n    i = 1\n    x = row[k]") \
        == "i = 0\n    row = A[i]\n    i = 1\n    x = row[k]"
