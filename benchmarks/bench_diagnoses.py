"""Precision and recall of the diagnoses on kernels in the idioms of real code
(issue 43): every kernel of ``tests/wild/``, run at its own launch, its
diagnoses against the ones its ``# diagnosis:`` line gives, worked out by
hand.

    .venv/bin/python benchmarks/bench_diagnoses.py

Prints, per rule: how often it fired, how often it was right (the rule and
the lines the label gives), how often a kernel labelled with it got nothing
(missed); then recall (buggy kernels whose cause was named at its line) and
precision (diagnoses that were right, none on a correct kernel).  The test
over the same corpus is ``tests/test_wild.py``.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_wild import KERNELS, WILD, labelled, run_wild  # noqa: E402


def main() -> int:
    fired, right, missed = Counter(), Counter(), Counter()
    bugs = named = wrong_on_correct = uncovered = 0
    for name in KERNELS:
        label, expected = labelled(WILD / name)
        found = tuple((d.rule, tuple(d.lines)) for d in run_wild(WILD / name).diagnoses)
        buggy = not label.startswith("correct")
        bugs += buggy
        uncovered += buggy and not expected
        for rule, lines in found:
            fired[rule] += 1
            right[rule] += (rule, lines) in expected
            wrong_on_correct += not buggy
        for rule, lines in expected:
            missed[rule] += (rule, lines) not in found
        named += buggy and bool(expected) and set(expected) <= set(found)
        print(f"{name:40} {'bug' if buggy else 'correct':8} found: "
              f"{', '.join(f'{r} {l}' for r, l in found) or '-'}", flush=True)
    print()
    print(f"{'rule':32} {'fired':>6} {'right':>6} {'missed':>7}")
    for rule in sorted(set(fired) | set(missed)):
        print(f"{rule:32} {fired[rule]:6} {right[rule]:6} {missed[rule]:7}")
    total = sum(fired.values())
    print()
    print(f"recall: {named} of {bugs} buggy kernels named at the right line "
          f"({uncovered} missed: each file says why)")
    print(f"precision: {sum(right.values())} of {total} diagnoses right; "
          f"{wrong_on_correct} on a correct kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
