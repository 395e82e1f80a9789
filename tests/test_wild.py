"""The corpus of real-code idioms (tests/wild/, issue 43): each kernel is run
at its own launch against its reference (``references.py``, by the kernel's
name), and its diagnoses are exactly the ones its ``# diagnosis:`` line says,
worked out by hand: a rule on the right line, or none.  A bug no rule covers
yet says ``none (missed: ...)``: it counts against recall, in
``wild_tally``, which ``benchmarks/bench_diagnoses.py`` prints."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernels import run
from kernels.presets import default_launch
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

WILD = Path(__file__).parent / "wild"
KERNELS = sorted(p.name for p in WILD.glob("*.py") if p.name != "references.py")


def verdict_expected(path: Path) -> bool:
    """Whether the run must PASS: a correct kernel does, a buggy one does not,
    unless a ``# verdict: PASS (missed: ...)`` line records that ThreadMap
    still misses that bug (the test then fails once it is found, so the
    line is taken out)."""
    lines = path.read_text().splitlines()
    said = next((line for line in lines if line.startswith("# verdict: ")), None)
    if said is not None:
        return said.startswith("# verdict: PASS")
    return labelled(path)[0].startswith("correct")


def labelled(path: Path) -> tuple[str, tuple[tuple[str, tuple[int, ...]], ...]]:
    """(its label, the diagnoses it must get: (rule, lines) each)."""
    lines = path.read_text().splitlines()
    label = next(line[len("# label: "):] for line in lines if line.startswith("# label: "))
    said = next(line[len("# diagnosis: "):] for line in lines
                if line.startswith("# diagnosis: "))
    if said.startswith("none"):
        return label, ()
    expected = []
    for part in said.split(";"):
        rule, *numbers = part.split()
        expected.append((rule, tuple(int(n) for n in numbers)))
    return label, tuple(expected)


def run_wild(path: Path):
    """The kernel at its own launch: a described one against its reference
    in references.py (by its name), a matmul at its ``# shape:`` against
    ThreadMap's own float64 A @ B."""
    shape = next((line.split()[2] for line in path.read_text().splitlines()
                  if line.startswith("# shape: ")), None)
    if shape is not None:
        m, k, n = (int(d) for d in shape.split("x"))
        request = RunRequest(kernel=None, kernel_file=str(path), m=m, k=k, n=n,
                             backend="cpu", repeats=1)
    else:
        request = describe_request(RunRequest(
            kernel=None, kernel_file=str(path), backend="cpu", repeats=1,
            reference=f"{WILD / 'references.py'}:{_kernel_name(path)}"),
            as_it_is_unless_matmul=True)
    return run(default_launch(request))  # (the file's own launch)


def _kernel_name(path: Path) -> str:
    from kernels.api import kernel_names

    name, = kernel_names(path)
    return name


@pytest.mark.parametrize("name", KERNELS)
def test_each_wild_kernel_gets_the_diagnoses_worked_out_by_hand(name):
    path = WILD / name
    label, expected = labelled(path)
    result = run_wild(path)
    assert result.verdict.passed == verdict_expected(path), (label, result.verdict.reasons)
    found = tuple((d.rule, tuple(d.lines)) for d in result.diagnoses)
    assert found == expected, (found, result.verdict.reasons)


#: The figures each newer rule must give, worked out by hand in the file's
#: ``# label:`` line (the rule and line alone could be right for the wrong
#: reason): a part of its message, and one of its evidence.
HAND_FIGURES = {
    "matmul_ceil_rows_per_thread.py": ("16 threads x 4 = 64 rows, past its 50",
                                       "168 out-of-bounds writes of C"),
    "matmul_gridstride_2d_wrong_stride.py": ("(24 threads wide), but steps by `sx` = 16",
                                             "320 elements of C written by more than one"),
    "matmul_while_col_not_reset.py": ("`col` is set once, at line 11",
                                      "576 elements of C never written"),
    "transpose_guard_on_output.py": ("of which this run's a has 24",
                                     "192 out-of-bounds reads of a"),
    "vector_add_2d_launch_block_width.py": ("`cuda.blockDim.x` = 16 wide",
                                            "472 elements never written"),
    "xxt_raise_rows_cols.py": ("`rows * cols` = 4,000, but out has 10,000 elements",
                               "6,000 elements of out from flat index 4,000 on"),
    "scale_2d_gridstride_wrong_stride.py": ("steps by `sx` = 64",
                                            "2,720 elements of out never written"),
    "matvec_guard_on_input.py": ("`x.shape[0]` = 40", "400 out-of-bounds reads of A"),
    "scale_2d_while_not_reset.py": ("`j` is set once, at line 12",
                                    "870 elements of out never written"),
    "outer_product_flat_short.py": ("the last 600 (rows 18-29)", "600 elements of out"),
    "row_sums_tiled_grid_bounded.py": ("cover 64 of A's 300 columns",
                                       "columns 64-299 of A never read (236 columns)"),
    "scale_chunk_ceil_unguarded.py": ("192 threads x 6 = 1,152 elements, past its 1,000",
                                      "152 out-of-bounds writes of out"),
    "relu_chunk_floor.py": ("192 threads x 5 = 960 elements",
                            "the last 40 elements of out never written"),
    "scale_fixed_size_guard.py": ("`N` = 1,024 (line 6)", "24 out-of-bounds writes of out"),
}


@pytest.mark.parametrize("name", sorted(HAND_FIGURES))
def test_the_newer_rules_give_the_figures_worked_out_by_hand(name):
    message, evidence = HAND_FIGURES[name]
    diagnosis, = run_wild(WILD / name).diagnoses
    assert message in diagnosis.message, diagnosis.message
    assert evidence in diagnosis.evidence, diagnosis.evidence
