"""What the command line prints: a run's summary, a sweep's lines, and
any text of the user's with its terminal control characters escaped."""
from __future__ import annotations

import sys


def print_summary(result, stream=None) -> None:
    # (sys.stdout looked up at each call: a default bound at import kept the
    # stream of whoever imported first, closed by then under pytest's capsys)
    stream = stream if stream is not None else sys.stdout
    request = result.request
    source = "" if request.launch_source == "given" else f" ({request.launch_source})"
    checks_only = " (checks only)" if result.verdict.reference_note else ""
    print(f"{result.verdict.word}{checks_only}  {printable(request.kernel_label)}  "
          f"{request.shape_label} "
          f"{'' if request.arguments else request.dtype + ' '} grid {'x'.join(map(str, request.grid))} x block "
          f"{'x'.join(map(str, request.block))}{source}  [{result.backend}: "
          f"{result.backend_note}]", file=stream)
    for reason in result.verdict.reasons:
        print(f"  - {printable(reason)}", file=stream)
    for diagnosis in result.diagnoses:
        first, *rest = diagnosis.describe().splitlines()
        print(f"  why ({diagnosis.rule}): {printable(first)}", file=stream)
        for line in rest:
            print(f"    {printable(line.strip())}", file=stream)
    if result.verdict.reference_note:
        print(f"  no correctness verdict: {printable(result.verdict.reference_note)}",
              file=stream)
    else:
        print(f"  {result.verdict.errors.describe()}", file=stream)
    for timing in result.timings:
        print(f"  {timing.describe()}", file=stream)
    for note in result.notes:
        print(f"  note: {printable(note)}", file=stream)
    print_kernel_output(result, stream)


def print_kernel_output(result, stream=None) -> None:
    """The kernel's own prints, once, fenced off from ThreadMap's summary."""
    stream = stream if stream is not None else sys.stdout
    from ..result import KERNEL_OUTPUT_LINES

    if not result.kernel_output:
        return
    lines = result.kernel_output.splitlines()
    print(f"  kernel output ({len(lines):,} line{'s' if len(lines) != 1 else ''} printed by "
          "the kernel in its instrumented launch; the timed launches' prints are dropped):",
          file=stream)
    for line in lines[:KERNEL_OUTPUT_LINES]:
        print(f"  | {printable(line)}", file=stream)
    more = len(lines) - KERNEL_OUTPUT_LINES
    if more > 0 or result.kernel_output_cut:
        print(f"  | ... {max(more, 0):,} more lines in result.json"
              + (f" ({result.kernel_output_cut:,} characters past 256 KiB cut)"
                 if result.kernel_output_cut else ""), file=stream)


def sweep_line(cell) -> str:
    """One configuration of a sweep: its launch, verdict, and kernel time with
    where it was measured."""
    from ..result import BACKEND_SHORT, format_seconds

    launch = f"{cell.label:>16}"
    if cell.result is None:
        return f"{launch} ERROR: {cell.error}"
    result = cell.result
    timing = result.shown_timing
    time_text = (f"  {timing.what} {format_seconds(timing.seconds)} "
                 f"[{BACKEND_SHORT.get(timing.backend, timing.backend)}]" if timing else "")
    return f"{launch} {result.verdict.word}{time_text}" + (
        f"  ({result.verdict.short_reasons})" if not result.verdict.passed else "")


def one_line(message: object) -> str:
    """A refusal's message on one line (numba's and others' run over several),
    its control characters shown, not obeyed."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return printable("; ".join(lines))


#: Control characters (C0 but tab and newline, DEL, C1) as escapes: a kernel's
#: prints or a file's name must not clear lines, fake them or retitle the
#: terminal (ESC [2K, ESC ]0;...BEL).
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0, 9), *range(11, 32), *range(127, 160))}


def printable(text: str) -> str:
    """``text`` with its terminal control characters escaped."""
    return text.translate(_CONTROLS)
