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
