"""Checking many kernel files at once: ``threadmap check``.

For a teacher with dozens of submissions of one exercise: every kernel of
every file, on every shape and launch asked for, with its verdict, reasons
and time, as ``report.csv``, ``report.json`` and a self-contained
``report.html`` (one row per file, a small count map per case).

One task per kernel (its cases share one compile).  A task runs its cases
as a kernel-file run does, in a child process with a time limit: a file
that does not parse, or a kernel that hangs, is a failed row, never a
stopped batch.  Tasks run on a local process pool, or, given a scheduler
address, on a Dask distributed cluster (``pip install threadmap[dask]``);
the rows are the same either way, in the same order.
"""
from __future__ import annotations

import base64
import csv
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ThreadMapError

#: seconds one case may take (a kernel past it is one failed row)
CASE_LIMIT = 30.0
#: seconds to reach a scheduler
CONNECT_SECONDS = 8.0


#: A case whose checks passed but whose output no reference checked (a
#: described kernel that is not C = A @ B): never counted as a PASS.
CHECKED = "CHECKED"


class NoKernels(ThreadMapError):
    """None of the files has a kernel (the report is written, empty)."""


@dataclass(frozen=True)
class Launch:
    """A launch of the check: ``file`` (the file's own, or one guessed) or grid:block."""

    text: str
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None


def parse_launches(text: str) -> tuple[Launch, ...]:
    """``file,1:1024,4x4:16x16`` -> launches; refused with the bad item."""
    from .request import parse_dims

    launches = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "file":
            launches.append(Launch("file"))
            continue
        grid, sep, block = item.partition(":")
        if not sep:
            raise ThreadMapError(f"--launches: {item!r} is not GRID:BLOCK (e.g. 4:256 or "
                                 "4x4:16x16) or 'file'")
        launches.append(Launch(item, parse_dims(grid, "grid"), parse_dims(block, "block")))
    if not launches:
        raise ThreadMapError("--launches is empty")
    return tuple(launches)


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    from .request import parse_shape

    shapes = tuple(parse_shape(part.strip()) for part in text.split(",") if part.strip())
    if not shapes:
        raise ThreadMapError("--shapes is empty")
    return shapes


def kernel_files(paths) -> list[Path]:
    """The .py files of ``paths`` (files, or folders searched recursively), sorted."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.py") if p.is_file())
        elif path.is_file():
            found.append(path)
        elif path.exists():
            from .sources.limits import read_source
            read_source(str(path))  # refused there, saying what it is (a FIFO, a device)
            raise ThreadMapError(f"{path}: not a kernel file or a folder")
        else:
            raise ThreadMapError(f"{path}: no such file or folder")
    return sorted(set(found), key=str)


def tasks(files: list[Path]) -> list[tuple[str, str | None, str | None]]:
    """(file, kernel, why not) per kernel; a file without kernels or that does
    not parse is one task that fails with its reason."""
    from .sources.source import kernel_names

    found = []
    for path in files:
        try:
            names = kernel_names(path)
        except ThreadMapError as exc:
            found.append((str(path), None, str(exc)))
            continue
        found += [(str(path), name, None) for name in names]
    return found


def check_kernel(task: tuple[str, str | None, str | None], shapes, launches,
                 dtype: str = "float32", seed: int = 0, backend: str = "auto",
                 case_limit: float = CASE_LIMIT, tier: str = "auto",
                 described_as: tuple[str, ...] = (), reference: str | None = None) -> list[dict]:
    """Every case of one kernel, as report rows (runs in a pool worker or on a
    Dask worker: plain data in, plain data out).

    ``described_as`` (``--arg`` items) describes every kernel's arguments in
    place of ``shapes`` (a submission's own THREADMAP_ARGS entries are
    replaced by name); ``reference`` (``FILE:FUNCTION``, the teacher's host
    code, never a submission's) holds each described kernel's output to it."""
    from .engine import run
    from .errors import RunTimedOut
    from .presets import default_launch
    from .request import RunRequest, check_request
    from .thumbnail import count_thumbnail

    path, kernel, refused = task
    if refused is not None:
        return [{"file": path, "kernel": kernel or "", "shape": "", "launch": "",
                 "verdict": "ERROR", "reasons": refused, "seconds": None, "thumbnail": None}]
    rows = []
    hung = ""
    # A kernel that is not C = A @ B and describes its arguments (THREADMAP_ARGS,
    # read, never run) is checked on those, not on --shapes: maps and checks
    # only, as a submission's reference is never run.
    described = None
    base = RunRequest(kernel=kernel, kernel_file=path, dtype=dtype, seed=seed, backend=backend,
                      tier=tier)
    from .sources.arguments import describe_request

    if described_as or reference:
        # The teacher's description holds for every submission: one that
        # does not fit it is an ERROR row that says why.
        try:
            candidate = describe_request(
                base.with_(reference=reference), items=described_as,
                dtype_given=None, as_it_is_unless_matmul=reference is None)
        except ThreadMapError as exc:
            return [{"file": path, "kernel": kernel or "",
                     "shape": " ".join(described_as) or "(described)", "launch": "",
                     "verdict": "ERROR", "reasons": str(exc), "seconds": None,
                     "thumbnail": None}]
        if candidate.arguments:
            described = candidate
        else:  # (C = A @ B: M, K and N from the description's matrices, if it has any)
            from .sources.arguments import ArrayArgument, parse_arguments

            base = candidate
            if any(isinstance(a, ArrayArgument) for a in parse_arguments(described_as)):
                shapes = [candidate.shape]
    else:
        try:
            candidate = describe_request(base, as_it_is_unless_matmul=True)
            described = candidate if candidate.arguments else None
        except ThreadMapError:
            pass  # (each case says what is wrong)
    cases = [(described.shape_label, None)] if described is not None else [
        (f"{m}x{k}x{n}", (m, k, n)) for m, k, n in shapes]
    for shape, dims in cases:
        for launch in launches:
            row = {"file": path, "kernel": kernel, "shape": shape, "launch": launch.text,
                   "verdict": "ERROR", "reasons": "", "seconds": None, "thumbnail": None}
            rows.append(row)
            if hung:  # one hang is enough: the kernel's other cases are not run
                row["reasons"] = f"not run: {hung}"
                continue
            try:
                if dims is None:
                    request = described
                else:
                    m, k, n = dims
                    request = base.with_(m=m, k=k, n=n)
                if launch.grid is None:
                    request = default_launch(request)
                    # the file's own launch, or one guessed: said so (a
                    # guessed launch read as the file's own)
                    guessed = request.launch_source.startswith("guessed")
                    row["launch"] = (f"{'guessed' if guessed else 'file'}: "
                                     f"{'x'.join(map(str, request.grid))}:"
                                     f"{'x'.join(map(str, request.block))}")
                    row["launch_source"] = request.launch_source
                else:
                    request = request.with_(grid=launch.grid, block=launch.block)
                check_request(request)
                # (The limit counts the run: never the child's start-up or
                # numba's compile, which the child reports.)
                result = run(request, isolate=True, time_limit=case_limit,
                             compile_ahead=False)
            except RunTimedOut as exc:
                row["reasons"] = str(exc)
                if exc.kernel_hung:  # (a slow compile or start-up is not the kernel's)
                    hung = f"the case {shape} {launch.text} did not finish in time"
                continue
            except ThreadMapError as exc:
                row["reasons"] = str(exc)
                continue
            timing = result.shown_timing
            reasons = list(result.verdict.reasons) + (
                [f"no correctness verdict: {result.verdict.reference_note}"]
                if result.verdict.reference_note else [])
            # (checks alone are not a PASS: a submission describing its arrays
            # otherwise than as C = A @ B is never held to a reference)
            word = result.verdict.shown_word
            if reference is not None and result.verdict.reference_note:
                # (the teacher's reference failed on this case: not a grade)
                word = "ERROR"
            row.update(verdict=word, reasons="; ".join(reasons),
                       diagnoses="; ".join(
                           f"line {d.line_list}: {d.message} (fix: {d.fix})"
                           for d in result.diagnoses),
                       seconds=round(timing.seconds, 6) if timing else None,
                       time_what=f"{timing.label}" if timing else None,
                       thumbnail=base64.b64encode(
                           count_thumbnail(
                               result.maps.count, one_writer=(
                                   result.maps.min_writer == result.maps.max_writer))).decode())
    from .backends.child import stop_all
    stop_all()  # (a pool worker's child process ends with its task)
    return rows


def run_check(paths, shapes, launches, dtype: str = "float32", seed: int = 0,
              backend: str = "auto", scheduler: str | None = None,
              workers: int | None = None, progress=None,
              case_limit: float = CASE_LIMIT, tier: str = "auto",
              described_as: tuple[str, ...] = (), reference: str | None = None) -> list[dict]:
    """Every row of the report, in file, kernel, shape, launch order
    (``described_as``, ``reference``: see :func:`check_kernel`)."""
    if described_as:
        from .sources.arguments import parse_arguments

        parse_arguments(described_as)  # (a spec that does not parse: said once, up front)
    if reference is not None:
        refuse_submitted_reference(reference, paths)
    files = kernel_files(paths)
    if not files:
        raise NoKernels(f"no kernels in {', '.join(map(str, paths))}: no .py files there")
    work = tasks(files)
    if all(refused is not None and "no CUDA kernel found" in refused for _, _, refused in work):
        raise NoKernels(f"no kernels in {', '.join(map(str, paths))}: none of its "
                        f"{len(files)} .py file{'s' if len(files) != 1 else ''} has a "
                        "@cuda.jit kernel")
    progress = progress or (lambda done, total: None)
    arguments = dict(shapes=shapes, launches=launches, dtype=dtype, seed=seed, backend=backend,
                     case_limit=case_limit, tier=tier, described_as=tuple(described_as),
                     reference=reference)
    if scheduler:
        results = _on_dask(scheduler, work, arguments, progress)
    else:
        results = _on_pool(work, arguments, workers or max(1, (os.cpu_count() or 2) // 2),
                           progress)
    return [row for rows in results for row in rows]


def refuse_submitted_reference(reference: str, paths) -> None:
    """A reference is host code that check runs: the teacher's own, never a
    file among the submissions it checks (RequestError if it is one)."""
    from .errors import RequestError
    from .reference_code import parse_reference

    path, _ = parse_reference(reference)
    where = Path(path).resolve()
    for given in paths:
        root = Path(given).resolve()
        if where == root or root in where.parents:
            raise RequestError(f"--reference {reference}: {path} is among the files checked "
                               f"({given}); check runs your own host code, never a "
                               "submission's: keep the reference outside them")


def _on_pool(work, arguments, workers: int, progress) -> list[list[dict]]:
    """The tasks on ``workers`` local processes, in order.  A Ctrl-C or SIGTERM
    (an exception in this thread) ends every worker at once, and with them the
    kernels' child processes (which die with their parent): the batch stops
    within a second, not when the running cases finish."""
    import multiprocessing
    from functools import partial

    done = []
    pool = multiprocessing.Pool(workers, initializer=_worker_signals, initargs=(os.getpid(),))
    try:
        for index, rows in enumerate(pool.imap(partial(check_kernel, **arguments), work)):
            done.append(rows)
            progress(index + 1, len(work))
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
    return done


def _worker_signals(parent: int) -> None:
    """In a pool worker: it dies with the command, even one killed outright
    (SIGKILL: no handler runs, and a worker went on with its case, then
    printed a traceback); Ctrl-C is the command's to act on (it ends the
    workers); SIGTERM and SIGHUP end the worker at once, as by default."""
    import signal

    from .backends.lifeline import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if number is not None:
            signal.signal(number, signal.SIG_DFL)


#: Address schemes of a Dask scheduler.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler_address(address: str) -> None:
    """Refuse an address that cannot name a Dask scheduler, before connecting:
    ``tcp://host:8786`` (tls, ws, wss, ucx), or ``host:8786``."""
    from urllib.parse import urlsplit

    text = address if "://" in address else f"tcp://{address}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme not in SCHEDULER_SCHEMES or not parts.hostname \
            or port is None or not 0 < port < 65536 or parts.path not in ("", "/"):
        raise ThreadMapError(f"--scheduler {address!r} is not a scheduler's address: give "
                             "tcp://HOST:PORT (e.g. tcp://scheduler:8786)")


def _on_dask(address: str, work, arguments, progress) -> list[list[dict]]:
    try:
        from distributed import Client
    except ImportError:
        raise ThreadMapError("--scheduler needs Dask distributed: pip install "
                             "'threadmap[dask]'") from None
    check_scheduler_address(address)
    try:
        client = Client(address, timeout=f"{CONNECT_SECONDS}s")
    except Exception as exc:  # (Dask raises many kinds: each is one message here)
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ThreadMapError(f"cannot reach the Dask scheduler at {address} within "
                             f"{CONNECT_SECONDS:g} s: {detail}") from None
    futures = []
    try:
        futures = client.map(check_kernel, work, pure=False, **arguments)
        results = []
        for index, future in enumerate(futures):  # (in task order: the rows' order)
            results.append(future.result())
            progress(index + 1, len(work))
        return results
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        client.close()


COLUMNS = ("file", "kernel", "shape", "launch", "launch_source", "verdict", "reasons",
           "diagnoses", "seconds", "time_what")


def write_report(rows: list[dict], out: Path, title: str = "ThreadMap check",
                 folder=None) -> None:
    """``report.csv``, ``report.json`` and ``report.html`` into ``out``, the
    three together or none (outputs.py); into ``folder`` (an OutputFolder the
    command holds) when given."""
    from .outputs import OutputFolder

    if folder is None:
        with OutputFolder(out) as own:
            _stage_report(own, rows, title)
            own.publish()
    else:
        _stage_report(folder, rows, title)


def _stage_report(folder, rows: list[dict], title: str) -> None:
    rows = [{key: _printable(value) for key, value in row.items()} for row in rows]

    def write_csv(path: Path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({key: _cell(value) for key, value in row.items()} for row in rows)

    folder.write("report.csv", write_csv)
    folder.write_text("report.json", json.dumps(
        {"rows": [{key: row.get(key) for key in COLUMNS} for row in rows]}, indent=2))
    folder.write_text("report.html", report_html(rows, title))


def _printable(value):
    """A file name that is not UTF-8 (Python holds its bytes as surrogates)
    with those bytes written as ``\\xff``: the report of a folder holding
    one failed with UnicodeEncodeError after every case had run."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def _cell(value):
    """A CSV cell a spreadsheet shows as text: a file name or a reason that
    starts like a formula (``=HYPERLINK(...)``, ``+``, ``-``, ``@``) gets a
    leading apostrophe, as OWASP advises against formula injection."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _shown_names(rows: list[dict]) -> dict[str, str]:
    """Each file as the report shows it: its path below the folders all the
    files share (two students' matmul.py stay apart)."""
    paths = sorted({row["file"] for row in rows})
    if len(paths) < 2:
        return {path: Path(path).name for path in paths}
    try:
        common = os.path.commonpath([os.path.abspath(p) for p in paths])
    except ValueError:
        return {path: path for path in paths}
    return {path: os.path.relpath(os.path.abspath(path), common) for path in paths}


def _case(row: dict) -> tuple[str, str]:
    """A row's column of the report: its shape and launch as asked ("file",
    whatever launch the file gave)."""
    launch = row["launch"]
    return row["shape"], "file" if launch.startswith(("file", "guessed")) else launch


def report_html(rows: list[dict], title: str) -> str:
    """One table row per file (and kernel): a cell per case with its verdict,
    time and count map; reasons on hover and below."""
    from .result import format_seconds

    cases = list(dict.fromkeys(_case(row) for row in rows if row["shape"]))
    groups: dict[tuple[str, str], dict] = {}
    for row in rows:
        groups.setdefault((row["file"], row["kernel"] or ""), {})[_case(row)] = row
    passed = sum(r["verdict"] == "PASS" for r in rows)
    checked = sum(r["verdict"] == CHECKED for r in rows)
    checked_text = f"{checked} CHECKED (the checks passed; no reference)," if checked else ""
    e = html.escape
    shown = _shown_names(rows)
    head = "".join(f"<th>{e(shape)}<br>{e(launch)}</th>" for shape, launch in cases)
    body = []
    for (path, kernel), by_case in groups.items():
        cells = []
        if not kernel:
            row = next(iter(by_case.values()))
            cells.append(f"<td class='error' colspan='{max(len(cases), 1)}'>"
                         f"{e(row['reasons'])}</td>")
        for case in cases if kernel else ():
            row = by_case.get(case)
            if row is None:
                cells.append("<td></td>")
                continue
            image = (f"<img src='data:image/png;base64,{row['thumbnail']}' alt='count map'>"
                     if row.get("thumbnail") else "")
            seconds = (f"{format_seconds(row['seconds'])} <small>({e(row.get('time_what') or '')})"
                       "</small>" if row.get("seconds") is not None else "")
            verdict = e(row["verdict"])
            used = (f"<br><small title='{e(row.get('launch_source') or '')}'>"
                    f"{e(row['launch'])}</small>" if case[1] == "file" else "")
            cells.append(f"<td class='{verdict.lower()}' title='{e(row['reasons'])}'>"
                         f"<b>{verdict}</b> {seconds}{used}<br>{image}"
                         f"<div class='why'>{e(row['reasons'][:160])}</div>"
                         + (f"<div class='cause'><b>why:</b> {e(row['diagnoses'])}</div>"
                            if row.get("diagnoses") else "") + "</td>")
        body.append(f"<tr><th class='file'>{e(shown[path])}<br><small>{e(kernel)}</small>"
                    f"</th>{''.join(cells)}</tr>")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{e(title)}</title><style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px; vertical-align: top; font-size: 12px; }}
td.pass b {{ color: #1a7f37; }} td.fail b, td.error b {{ color: #c62828; }}
td.checked b {{ color: #8a6d00; }}
td.error {{ color: #c62828; }} .why {{ max-width: 14em; color: #555; }}
.cause {{ max-width: 14em; color: #8a3a00; }}
th.file {{ text-align: left; }} img {{ image-rendering: pixelated; display: block; }}
</style></head><body>
<h1>{e(title)}</h1>
<p>{len(groups)} kernels or files, {len(rows)} cases: {passed} PASS, {checked_text}
{sum(r['verdict'] == 'FAIL' for r in rows)} FAIL, {sum(r['verdict'] == 'ERROR' for r in rows)}
ERROR. Count maps: black = never written, green = once, blue = more than once by one thread,
orange to dark red = more than once by several threads (collisions). "guessed:" marks a launch
ThreadMap guessed for a file that gives none.</p>
<table><tr><th>file, kernel</th>{head}</tr>
{''.join(body)}
</table></body></html>
"""
