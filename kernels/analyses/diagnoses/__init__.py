"""Diagnoses: the cause of a failure, named at its line.

A rule has two halves, and a diagnosis is made only when both hold, never on
a guess (a wrong diagnosis is worse than none):

* a pattern in the kernel's source, read from its syntax tree (source.py:
  nothing in the file is evaluated; module constants come as the loader's
  allow-listed values);
* evidence in the run's records (out-of-bounds accesses with their first
  index, the writers of each element, the reads of A and B, the lockstep
  emulation's races, barriers and bank conflicts).

Each diagnosis says the cause in one sentence in the kernel's own names and
the run's numbers, gives the evidence (which threads and elements, how
many), and a fix, as the edited line where one is clear (as rustc's
``help:`` lines do).  Rules by subject: guards.py, indexing.py, loops.py,
coverage.py, writes.py, shared.py, inputs.py, warps.py.
"""
from __future__ import annotations

import ast

from .coverage import counter_not_reset, flat_index_width, other_axis_stride, short_flat_loop
from .diagnosis import Diagnosis
from .guards import (
    barrier_in_branch,
    early_return_before_barrier,
    guard_of_other_array,
    wrong_operator_guard,
)
from .indexing import (
    crossed_index,
    shifted_index,
    thread_as_reduction_index,
    thread_index_only,
    work_from_a,
)
from .inputs import all_ones_would_pass
from .loops import (
    block_stride,
    bound_past_size,
    fixed_size,
    launch_bounded_loop,
    rounded_down_chunk,
    skipped_terms,
    unguarded_chunk_end,
)
from .shared import missing_barrier, transposed_tile
from .source import Context
from .warps import mask_leaves_out_callers, warp_call_in_branch, warp_synchronous_race
from .writes import store_and_atomic, unprotected_update

#: rules for the causes of a FAIL
FAILURE_RULES = (wrong_operator_guard, thread_index_only, thread_as_reduction_index,
                 crossed_index, work_from_a, unguarded_chunk_end, rounded_down_chunk,
                 launch_bounded_loop, fixed_size, block_stride, other_axis_stride,
                 flat_index_width, short_flat_loop, counter_not_reset, guard_of_other_array,
                 bound_past_size, skipped_terms, shifted_index, store_and_atomic,
                 unprotected_update,
                 missing_barrier, early_return_before_barrier, barrier_in_branch,
                 warp_call_in_branch,
                 mask_leaves_out_callers, warp_synchronous_race, all_ones_would_pass)
#: rules for memory traffic past the ideal (a PASS can have it)
PERFORMANCE_RULES = (transposed_tile,)
#: rules that read no matmul's A, B and C (barriers, shared memory, warps, how
#: the output's elements are dealt to threads, guards, loop bounds): they run
#: on every kernel, a described one's too.  The others reason about A's rows,
#: B's columns and the sum over K, and run only on matmuls (docs/maps.md).
ANY_KERNEL_RULES = frozenset({missing_barrier, early_return_before_barrier, barrier_in_branch,
                              store_and_atomic, unprotected_update,
                              warp_call_in_branch, mask_leaves_out_callers,
                              warp_synchronous_race, transposed_tile, shifted_index,
                              thread_index_only, block_stride, other_axis_stride,
                              flat_index_width, short_flat_loop, counter_not_reset,
                              guard_of_other_array, unguarded_chunk_end, rounded_down_chunk,
                              fixed_size, launch_bounded_loop, wrong_operator_guard,
                              bound_past_size})

__all__ = ["ANY_KERNEL_RULES", "Diagnosis", "diagnose", "FAILURE_RULES", "PERFORMANCE_RULES"]


def diagnose(kernel: ast.FunctionDef, result, constants: dict | None = None,
             constant_lines: dict | None = None, ones_errors=None,
             notes: list[str] | None = None, matmul: bool = True) -> tuple[Diagnosis, ...]:
    """Every rule's diagnosis of ``result`` (a RunResult) whose kernel
    function is ``kernel``, with the module's constants' values (and their
    lines), and the error figures of the same launch on all-ones inputs where
    it was tried: the causes of a failure, and of memory traffic past the
    ideal (those also where the run passed); ``matmul`` False (a described
    kernel): only :data:`ANY_KERNEL_RULES`.  A rule that fails on an odd
    kernel is left out, and said so in ``notes``."""
    ctx = Context(kernel, result, dict(constants or {}), dict(constant_lines or {}),
                  ones_errors)
    rules = PERFORMANCE_RULES if result.verdict.passed else FAILURE_RULES + PERFORMANCE_RULES
    if not matmul:  # (a described kernel: only the rules that read no matmul's A, B, C)
        rules = tuple(rule for rule in rules if rule in ANY_KERNEL_RULES)
    found = []
    for rule in rules:
        try:
            diagnosis = rule(ctx)
        except Exception as exc:  # noqa: BLE001 (a rule's bug must never lose the run)
            diagnosis = None
            ctx.failed.append(f"diagnosis rule {rule.__name__} failed on this kernel "
                              f"({type(exc).__name__}: {exc}); its finding is left out")
        if diagnosis is not None:
            found.append(diagnosis)
    if notes is not None:
        notes.extend(ctx.failed)
    # (in line order; the all-ones finding, about the test and not a line, last)
    return tuple(sorted(found, key=lambda d: (d.rule == "all-ones-would-pass", d.lines)))
