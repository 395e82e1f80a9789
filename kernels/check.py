"""Checking many kernel files at once: ``threadmap check``.

For a teacher with dozens of submissions of one exercise: every kernel of
every file, on every shape and launch asked for, with its verdict, reasons
and time, as ``report.csv``, ``report.json`` and a self-contained
``report.html`` (one row per file, a small count map per case).

One task per kernel (its cases share one compile).  A task runs its cases
as a kernel-file run does, in a child process with a time limit: a file
that does not parse, or a kernel that hangs, is a failed row, never a
stopped batch; so is ThreadMap failing on a case, or a worker process
ending under it.  Tasks run on a local process pool, or, given a scheduler
address, on a Dask distributed cluster (``pip install threadmap[dask]``);
the rows are the same either way, in the same order.

A symbolic link inside a folder checked is graded only with
``--follow-links`` (and marked as a link): by default it is an ERROR row,
and what it names is never opened, so ``mallory.py -> ../teacher/solution.py``
is not graded as Mallory's.

By default each kernel runs at its file's own launch on its own
THREADMAP_ARGS, as ``threadmap run`` runs it (a launch guessed, and said
so, for a file that states none); others only as ``--launches`` asks.  A
file without a kernel (a course's helpers, its references) is skipped with
a note, not a row.  ``--reference FILE.py`` (a module) holds a reference
per kernel, each found by the kernel's name (see :func:`kernel_reference`).
"""
from __future__ import annotations

import base64
import csv
import errno
import html
import json
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .errors import RequestError, ThreadMapError
from .sources.limits import LINK_REFUSED, file_kind, refusing_links
from .words import quoted

#: seconds one case may take (a kernel past it is one failed row)
CASE_LIMIT = 30.0
#: seconds to reach a scheduler
CONNECT_SECONDS = 8.0


#: A case whose checks passed but whose output no reference checked (a
#: described kernel that is not C = A @ B): never counted as a PASS.
CHECKED = "CHECKED"


class NoKernels(ThreadMapError):
    """None of the files has a kernel (the report is written, empty)."""


#: The start of kernel_names' refusal (a KernelSourceError's message) of a
#: file that defines no kernel: such a file is skipped, with a note, not graded.
NO_KERNEL = "no CUDA kernel found"
#: The name of a course's file of references, the one file among those
#: checked that ``--reference`` may name (see refuse_submitted_reference).
COURSE_REFERENCES = "references.py"


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


#: Characters of a link's target a report shows as they are.
LONGEST_TARGET = 200


@dataclass(frozen=True, slots=True)
class Link:
    """A symbolic link met on the way to a submission: its path, what it
    names (as the link says it: never opened), and whether it stands for a
    folder on the way."""

    path: str
    target: str
    folder: bool = False

    @property
    def shown_target(self) -> str:
        """The target on one line: a name with a newline or past
        :data:`LONGEST_TARGET` characters is quoted."""
        if self.target.isprintable() and len(self.target) <= LONGEST_TARGET:
            return self.target
        return quoted(self.target)

    @property
    def described(self) -> str:
        """The report's ``link`` field: ``LINK -> TARGET``."""
        return f"{self.path} -> {self.shown_target}"

    @property
    def refusal(self) -> str:
        """The reason of its ERROR row while links are refused."""
        return (f"a symbolic link{' to a folder' if self.folder else ''} "
                f"(to {self.shown_target}): {LINK_REFUSED}")


def _link(path: Path, folder: bool = False) -> Link:
    """The link at ``path`` (read with readlink: what it names is not opened)."""
    try:
        target = os.readlink(path)
    except OSError as exc:  # (gone, or no longer a link, since it was listed)
        target = f"? ({exc.strerror})"
    return Link(str(path), target, folder)


@dataclass(frozen=True, slots=True)
class Submission:
    """A ``.py`` file to grade, or a link found and refused."""

    path: Path
    #: the link it is, or lies below (``LINK -> TARGET``), when it is graded
    #: through one or refused for being one
    link: str | None = None
    #: why it is not graded (a link, while links are refused)
    refused: str | None = None
    #: the folder below which no step of its path may be a link when it is
    #: read (None: links are followed, or the teacher named this link)
    below: str | None = None


def find_submissions(paths, follow_links: bool = False) -> list[Submission]:
    """The .py files of ``paths`` (files, or folders searched recursively),
    sorted.  A link inside a folder given (a file, or a folder the files of
    which would be found through it) is a refused :class:`Submission`,
    unless ``follow_links``: then it is walked (each folder once, a loop
    included) and its files say the link they came through."""
    found: dict[str, Submission] = {}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            # (A folder the teacher named is walked even if it is a link:
            # links are refused only inside it.)
            for submission in _walk(path, follow_links):
                found.setdefault(str(submission.path), submission)
        elif path.is_file():
            # A file the teacher named is graded even if it is a link (the
            # teacher chose it), and marked as one.
            if path.is_symlink():
                found.setdefault(str(path), Submission(path, link=_link(path).described))
            else:
                found.setdefault(str(path), Submission(path, below=str(path.parent)))
        elif path.exists():
            from .sources.limits import read_source
            read_source(str(path))  # refused there, saying what it is (a FIFO, a device)
            raise ThreadMapError(f"{path}: not a kernel file or a folder")
        else:
            raise ThreadMapError(f"{path}: no such file or folder")
    return [found[key] for key in sorted(found)]


def _walk(root: Path, follow_links: bool):
    """The submissions below ``root`` (see :func:`find_submissions`).
    (``Path.rglob`` lists a linked file as a file, and whether it walks a
    linked folder depends on Python's version: ``os.walk`` says which.)"""
    seen = set()
    try:
        info = os.stat(root)
        seen.add((info.st_dev, info.st_ino))
    except OSError:
        pass
    for folder, subfolders, names in os.walk(root, followlinks=follow_links):
        here = Path(folder)
        walked = []
        for name in sorted(subfolders, key=lambda name: ((here / name).is_symlink(), name)):
            path = here / name
            if not follow_links:
                if path.is_symlink():  # (os.walk lists it, and does not enter it)
                    link = _link(path, folder=True)
                    yield Submission(path, link=link.described, refused=link.refusal)
                continue
            try:
                info = os.stat(path)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:  # (a loop is walked once)
                seen.add((info.st_dev, info.st_ino))
                walked.append(name)
        if follow_links:
            subfolders[:] = walked
        for name in names:
            if not name.endswith(".py"):
                continue
            path = here / name
            # (a FIFO, a device or a dangling link named .py is a row too, an
            # ERROR that says what it is, and is never opened: it had vanished
            # from the report)
            if follow_links:
                link = first_link(str(root), str(path))
                yield Submission(path, link=link.described if link else None,
                                 refused=_not_regular(path, follow=True))
            elif path.is_symlink():
                link = _link(path)
                yield Submission(path, link=link.described, refused=link.refusal)
            else:
                yield Submission(path, below=str(root), refused=_not_regular(path))


def _not_regular(path: Path, follow: bool = False) -> str | None:
    """Why ``path`` is no kernel file (what it is, or what it names through
    a link when ``follow``), told without opening it; None for a regular
    file, or one that cannot be looked at (reading it says why)."""
    try:
        mode = os.stat(path, follow_symlinks=follow).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return f"{path}: not a regular file ({file_kind(mode)}): a kernel file is a .py file"


#: Whether the steps of a path can be opened one from another (POSIX).
_STEPWISE = {os.open, os.stat, os.readlink} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


def first_link(below: str, path: str) -> Link | None:
    """The first symbolic link on the way from the folder ``below`` down to
    ``path`` (the file itself included), or None.  Each folder on the way is
    opened from the one before with ``O_NOFOLLOW``, so a folder swapped for
    a link while this looks is a link here too, and nothing a link names is
    opened; the file itself is only ``lstat``-ed.  A path that cannot be
    looked at gives None: reading it says why."""
    parts = Path(os.path.relpath(path, below)).parts
    if not parts or ".." in parts:
        return None
    if not _STEPWISE:
        here = Path(below)
        for index, part in enumerate(parts):
            here = here / part
            if here.is_symlink():
                return _link(here, folder=index < len(parts) - 1)
        return None
    cloexec = getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(below, os.O_RDONLY | os.O_DIRECTORY | cloexec)
    except OSError:
        return None
    here = Path(below)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | cloexec,
                                dir_fd=fd)
            except OSError as exc:
                # (Linux says ENOTDIR for a link opened so, others ELOOP)
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    return None
                try:
                    return Link(str(here / part), os.readlink(part, dir_fd=fd), folder=True)
                except OSError:
                    return None  # (not a link: a file where a folder was)
            os.close(fd)
            fd, here = inner, here / part
        try:
            if stat.S_ISLNK(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                return Link(str(here / parts[-1]), os.readlink(parts[-1], dir_fd=fd))
        except OSError:
            pass
        return None
    finally:
        os.close(fd)


class Task(NamedTuple):
    """One kernel of one file to grade (plain data: a pool's or Dask's
    worker gets it); a plain ``(file, kernel, refused)`` is one too."""

    file: str
    #: the kernel (None: the file's only one, or none when ``refused``)
    kernel: str | None
    #: why it is not graded: its one ERROR row
    refused: str | None
    #: ``LINK -> TARGET`` when graded through a link (Submission.link)
    link: str | None = None
    #: checked again for links just before it is graded (Submission.below)
    below: str | None = None
    #: its own reference (``FILE:FUNCTION``) found in a ``--reference``
    #: module, which then replaces check's one ``reference``
    reference: str | None = None
    #: why that module holds none for it (its rows are CHECKED, and say so)
    no_reference: str | None = None
    #: that reference is the course's references.py, found on its own: run
    #: in the kernel's sandboxed child, never in check's process
    reference_in_child: bool = False


def tasks(submissions: list[Submission], skipped=None) -> list[Task]:
    """A task per kernel; a file that does not parse, or that is refused, is
    one task that fails with its reason.  A file without kernels is no task:
    ``skipped(path, why)`` is told of it."""
    from .sources.source import kernel_names

    skipped = skipped or (lambda path, why: None)
    found = []
    for submission in submissions:
        path = str(submission.path)
        if submission.refused is not None:
            found.append(Task(path, None, submission.refused, submission.link))
            continue
        try:
            # (a file swapped for a link since the listing is refused, not read)
            link = first_link(submission.below, path) if submission.below else None
            if link is not None:
                found.append(Task(path, None, link.refusal, link.described))
                continue
            with refusing_links(submission.below):
                names = kernel_names(path)
        except ThreadMapError as exc:
            # (its message, not str(exc): a file's name may say anything)
            if getattr(exc, "message", "").startswith(NO_KERNEL):
                skipped(path, _no_kernel_why(path))
                continue
            found.append(Task(path, None, str(exc), submission.link))
            continue
        except Exception as exc:  # (a bug of ours on this file: its row, not the report's end)
            found.append(Task(path, None, thread_map_failed(exc), submission.link))
            continue
        found += [Task(path, name, None, submission.link, submission.below) for name in names]
    return found


def _no_kernel_why(path: str) -> str:
    """Why a file without a kernel is skipped; a course's references.py not
    named by ``--reference`` gets the hint that would use it."""
    if Path(path).name == COURSE_REFERENCES:
        return (f"no @cuda.jit kernel (references beside kernels in a folder below the one "
                f"checked are not used: give --reference {path} to hold its kernels to it)")
    return "no @cuda.jit kernel"


#: Characters of an unexpected exception's message a row shows.
LONGEST_FAILURE = 200


def thread_map_failed(exc: BaseException) -> str:
    """The one-line reason of a row on which ThreadMap itself failed (an
    exception that is not a refusal: a bug, a RecursionError)."""
    try:
        message = " ".join(str(exc).split())
    except Exception:  # (a message that cannot be written: a 5,000-digit number)
        message = ""
    if len(message) > LONGEST_FAILURE:
        message = message[:LONGEST_FAILURE] + "..."
    what = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"ThreadMap failed on this case: {what} — a bug in ThreadMap, please report it"


def _error_row(task: Task, reasons: str) -> dict:
    """The one ERROR row of a task that was not graded."""
    return {"file": task.file, "kernel": task.kernel or "", "shape": "", "launch": "",
            "verdict": "ERROR", "reasons": reasons, "seconds": None, "thumbnail": None,
            "link": task.link}


def check_kernel(task: Task | tuple[str, str | None, str | None], shapes, launches,
                 dtype: str = "float32", seed: int = 0, backend: str = "auto",
                 case_limit: float = CASE_LIMIT, tier: str = "auto",
                 described_as: tuple[str, ...] = (), reference: str | None = None) -> list[dict]:
    """Every case of one kernel, as report rows (runs in a pool worker or on a
    Dask worker: plain data in, plain data out).  ThreadMap failing on a case
    (an exception that is not a refusal) is that case's ERROR row, never the
    end of the batch.

    ``described_as`` (``--arg`` items) describes every kernel's arguments in
    place of ``shapes`` (a submission's own THREADMAP_ARGS entries are
    replaced by name); ``reference`` (``FILE:FUNCTION``, the teacher's host
    code, never a submission's) holds each described kernel's output to it,
    unless the task has its own (``Task.reference``, from a module)."""
    from .backends.child import stop_all
    from .engine import FILE_COMPILE_LIMIT, compile_files_in_children

    task = Task(*task)
    if task.refused is not None:
        return [_error_row(task, task.refused)]
    # numba's typing and compile of the file in its child, within the case's
    # limit (a pool worker has it from the command; a Dask worker gets it here)
    restore = compile_files_in_children(
        min(FILE_COMPILE_LIMIT, case_limit or FILE_COMPILE_LIMIT), typist=False)
    try:
        # (the file swapped for a link since the listing: refused, not read)
        link = first_link(task.below, task.file) if task.below else None
        if link is not None:
            return [_error_row(task._replace(link=link.described), link.refusal)]
        with refusing_links(task.below):  # (and where it is read, step by step)
            rows = _check_cases(task.file, task.kernel, shapes, launches, dtype, seed,
                                backend, case_limit, tier, described_as,
                                task.reference or reference,
                                in_child=task.reference_in_child and not reference)
    except Exception as exc:
        return [_error_row(task, thread_map_failed(exc))]
    finally:
        stop_all()  # (a pool worker's child process ends with its task)
        restore()  # (a Dask worker's thread leaves its process as it found it)
    for row in rows:
        row["link"] = task.link
        used = task.reference or reference
        row["reference"] = (f"{used} (the course's {COURSE_REFERENCES}, found beside the "
                            "kernel; run in the sandbox)" if task.reference_in_child
                            and not reference else used) if used else None
        if task.no_reference and row["verdict"] == CHECKED:
            row["reasons"] = "; ".join(filter(None, (task.no_reference, row["reasons"])))
    return rows


def _check_cases(path: str, kernel: str | None, shapes, launches, dtype: str, seed: int,
                 backend: str, case_limit: float, tier: str, described_as: tuple[str, ...],
                 reference: str | None, in_child: bool = False) -> list[dict]:
    """The rows of :func:`check_kernel`'s cases (``in_child``: the reference
    is imported and called in the kernel's sandbox, not here)."""
    from .engine import run
    from .errors import RunTimedOut
    from .presets import GUESSED_LAUNCH, default_launch
    from .request import RunRequest, check_request
    from .thumbnail import count_thumbnail

    rows = []
    hung = ""
    # A kernel that is not C = A @ B and describes its arguments (THREADMAP_ARGS,
    # read, never run) is checked on those, not on --shapes: maps and checks
    # only, as a submission's reference is never run.
    described = None
    base = RunRequest(kernel=kernel, kernel_file=path, dtype=dtype, seed=seed, backend=backend,
                      tier=tier, reference_in_child=in_child)
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
                    guessed = request.launch_source.startswith(GUESSED_LAUNCH)
                    row["launch"] = (f"{'guessed' if guessed else 'file'}: "
                                     f"{'x'.join(map(str, request.grid))}:"
                                     f"{'x'.join(map(str, request.block))}")
                    row["launch_source"] = request.launch_source
                else:
                    request = request.with_(grid=launch.grid, block=launch.block)
                    row["launch_source"] = f"given: --launches {launch.text}"
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
            except Exception as exc:  # (a bug of ours on this case: the other cases still run)
                row["reasons"] = thread_map_failed(exc)
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
                               result.maps.writes, one_writer=(
                                   result.maps.min_writer == result.maps.max_writer),
                               atomic=result.maps.atomic_mask)).decode())
    return rows


def run_check(paths, shapes, launches, dtype: str = "float32", seed: int = 0,
              backend: str = "auto", scheduler: str | None = None,
              workers: int | None = None, progress=None,
              case_limit: float = CASE_LIMIT, tier: str = "auto",
              described_as: tuple[str, ...] = (), reference: str | None = None,
              follow_links: bool = False, skipped=None) -> list[dict]:
    """Every row of the report, in file, kernel, shape, launch order
    (``described_as``, ``reference``: see :func:`check_kernel`, and a
    module ``FILE.py`` for ``reference``: :func:`kernel_reference`;
    ``follow_links``: see :func:`find_submissions`).  ``skipped(path, why)``
    is told of each file not graded that is no row: one without a kernel,
    the reference module itself."""
    if described_as:
        from .sources.arguments import parse_arguments

        parse_arguments(described_as)  # (a spec that does not parse: said once, up front)
    skipped = skipped or (lambda path, why: None)
    module = functions = None
    if reference is not None:
        refuse_submitted_reference(reference, paths)
        module = reference_module(reference)
        if module is not None:
            functions = module_functions(module)  # (refused up front if it cannot be imported)
    files = find_submissions(paths, follow_links)
    if not files:
        raise NoKernels(f"no kernels in {', '.join(map(str, paths))}: no .py files there")
    courses = course_references(paths) if reference is None else {}
    for submission in [s for s in files if os.path.abspath(s.path) in courses]:
        files.remove(submission)
        skipped(str(submission.path), "the course's references: each kernel beside it held to "
                                      "the function named after it, run in the sandbox")
    if reference is not None:
        # The teacher's own file, where refuse_submitted_reference let it lie
        # among the files checked: host code, never graded.
        named = os.path.abspath(reference_path(reference))
        for submission in [s for s in files if os.path.abspath(s.path) == named]:
            files.remove(submission)
            skipped(str(submission.path), "your --reference: host code, not graded")
    work = tasks(files, skipped)
    if not work:
        raise NoKernels(f"no kernels in {', '.join(map(str, paths))}: none of its "
                        f"{len(files)} .py file{'s' if len(files) != 1 else ''} has a "
                        "@cuda.jit kernel")
    if module is not None:
        work = with_kernel_references(work, module, functions)
        reference = None  # (each task has its own, or none)
    elif reference is None:
        work = with_course_references(work, courses)
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


def reference_path(reference: str) -> str:
    """The file of ``--reference``: ``FILE.py:FUNCTION``, or a module ``FILE.py``."""
    from .reference_code import parse_reference

    module = reference_module(reference)
    return module if module is not None else parse_reference(reference)[0]


def reference_module(reference: str) -> str | None:
    """The file of ``--reference FILE.py``, a module holding each kernel's
    reference; None for ``FILE.py:FUNCTION`` (or what parse_reference refuses)."""
    _, sep, function = reference.rpartition(":")
    if (sep and function.isidentifier()) or not reference.endswith(".py"):
        return None
    if not os.path.isfile(reference):
        raise RequestError(f"--reference {reference}: no file {reference}")
    return reference


def module_functions(path: str) -> frozenset[str]:
    """The names of the functions of the reference module ``path``.  Importing
    it runs it: the teacher's host code, as every reference is (never a
    submission's: refuse_submitted_reference)."""
    import importlib.util
    import sys

    name = f"threadmap_references_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RequestError(f"--reference {path}: it cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (a dataclass in it looks its module up)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 (the teacher's code: said, in one line)
        raise RequestError(f"--reference {path}: importing it raised {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:200]}") from None
    finally:
        sys.modules.pop(name, None)
    return frozenset(key for key, value in vars(module).items()
                     if callable(value) and not key.startswith("_"))


def kernel_reference(module: str, functions, kernel: str, file: str,
                     one_kernel: bool) -> tuple[str | None, str | None]:
    """A kernel's reference in the module ``module`` (``functions``, its
    names): ``(FILE:FUNCTION, None)``, or ``(None, why there is none)``.

    The function named after the kernel, else, in a file of one kernel, the
    one named after the file (``week1/add.py`` -> ``add``).  Not so in a
    file of several kernels: the file's name would hold every one of them to
    one output."""
    stem = Path(file).stem
    names = [kernel] + ([stem] if one_kernel and stem != kernel else [])
    for name in names:
        if name in functions:
            return f"{module}:{name}", None
    return None, (f"no reference: {module} has no function "
                  f"{' or '.join(repr(name) for name in names)}")


def with_kernel_references(work: list[Task], module: str, functions) -> list[Task]:
    """``work`` with each kernel's reference from the module (see
    :func:`kernel_reference`); a task refused keeps none."""
    kernels_in: dict[str, int] = {}
    for task in work:
        kernels_in[task.file] = kernels_in.get(task.file, 0) + (task.kernel is not None)
    found = []
    for task in work:
        if task.kernel is None:
            found.append(task)
            continue
        spec, why = kernel_reference(module, functions, task.kernel, task.file,
                                     kernels_in[task.file] == 1)
        found.append(task._replace(reference=spec, no_reference=why))
    return found


def course_references(paths) -> dict[str, frozenset[str]]:
    """The course's answer keys check finds on its own, where no
    ``--reference`` is given: ``references.py`` at the top of a folder
    given (a regular file, not a link), by its absolute path, with the
    names of its top-level functions read from its syntax tree.  Nothing of
    it runs here: each kernel's reference is imported and called in that
    kernel's sandboxed child (``RunRequest.reference_in_child``), as the
    kernel itself is, since a file among those checked is not the
    teacher's by being there."""
    import ast

    found = {}
    for given in paths:
        path = Path(given) / COURSE_REFERENCES
        try:
            if not Path(given).is_dir() or not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            if os.lstat(path).st_size > COURSE_REFERENCES_LIMIT:
                continue
            tree = ast.parse(path.read_bytes(), str(path))
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # (none, or none that parses: its kernels are CHECKED, as before)
        # (its functions, and names given to them: `reduce_strided = block_sums`)
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id in names:
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        found[os.path.abspath(path)] = frozenset(n for n in names if not n.startswith("_"))
    return found


#: The largest references.py check reads on its own (a course's answer key is
#: a few kilobytes; a larger file there is not read, and its kernels CHECKED).
COURSE_REFERENCES_LIMIT = 1 << 20


def with_course_references(work: list[Task], courses: dict[str, frozenset[str]]) -> list[Task]:
    """``work`` with each kernel in a folder given that has a course's
    references.py (``course_references``) held to its function there, in
    the sandbox; kernels elsewhere as they were."""
    if not courses:
        return work
    beside: dict[str, list[int]] = {}
    for index, task in enumerate(work):
        folder = os.path.dirname(os.path.abspath(task.file))
        module = next((path for path in courses if os.path.dirname(path) == folder), None)
        if module is not None and task.kernel is not None:
            beside.setdefault(module, []).append(index)
    held = list(work)
    for module, indices in beside.items():
        found = with_kernel_references([work[i] for i in indices], module, courses[module])
        for index, task in zip(indices, found):
            held[index] = task._replace(reference_in_child=True) if task.reference else task
    return held


def refuse_submitted_reference(reference: str, paths) -> None:
    """A reference is host code that check runs: the teacher's own, never a
    file among the submissions it checks (RequestError if it is one).

    One file among them may be named: ``references.py`` at the top of a
    folder given, a course's answer key beside its kernels
    (``examples/references.py``).  It is used only when the teacher names
    it, never found on its own, so a student's references.py is never run
    unless the teacher points at it; it is then not graded.  Any other file
    there (one in a student's folder, whatever its name) stays refused, and
    its real path is what counts: a link at the top to a file elsewhere
    among the submissions is refused."""
    path = reference_path(reference)
    where = Path(path).resolve()
    for given in paths:
        root = Path(given).resolve()
        if where == root or root in where.parents:
            if where.name == COURSE_REFERENCES and where.parent == root:
                continue
            raise RequestError(f"--reference {reference}: {path} is among the files checked "
                               f"({given}); check runs your own host code, never a "
                               "submission's: keep the reference outside them (or as "
                               f"{COURSE_REFERENCES} at the top of the folder checked)")


def _on_pool(work: list[Task], arguments, workers: int, progress) -> list[list[dict]]:
    """The tasks on ``workers`` local processes, each task's rows in task order.

    A worker that ends in the middle of a task (killed by the
    out-of-memory killer, a crash in compiled code) makes that task one
    ERROR row that says how it ended, and a fresh worker takes the tasks
    left: a ``multiprocessing.Pool`` had waited on that task forever.  A
    Ctrl-C or SIGTERM (an exception in this thread) ends every worker at
    once, and with them the kernels' child processes (which die with their
    parent): the batch stops within a second, not when the running cases
    finish."""
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context()
    waiting = deque(enumerate(work))
    done: dict[int, list[dict]] = {}
    pool: list[_Worker] = []

    def finish(index: int, rows: list[dict]) -> None:
        done[index] = rows
        progress(len(done), len(work))

    try:
        for _ in range(min(workers, len(work))):
            pool.append(_Worker(context, arguments))
            pool[-1].take(waiting)
        while len(done) < len(work):
            ready = set(wait([worker.connection for worker in pool if worker.task is not None]
                             + [worker.process.sentinel for worker in pool]))
            for worker in list(pool):
                if worker.task is not None and worker.connection in ready:
                    answered = worker.answer()
                    if answered is not None:
                        finish(*answered)
                if worker.process.sentinel in ready:
                    # It ended: its task, if it had not answered, is a row.
                    worker.process.join()
                    if worker.task is not None:
                        index, task = worker.task
                        finish(index, [_error_row(Task(*task),
                                                  _worker_ended(worker.process.exitcode))])
                    pool.remove(worker)
                    worker.connection.close()
                    if waiting:
                        pool.append(_Worker(context, arguments))
                        pool[-1].take(waiting)
                elif worker.task is None:
                    worker.take(waiting)
    except BaseException:
        for worker in pool:
            worker.process.terminate()
        for worker in pool:
            worker.process.join()
        raise
    for worker in pool:
        worker.stop()
    return [done[index] for index in range(len(work))]


class _Worker:
    """A process of :func:`_on_pool`'s, with its end of their pipe and the
    task it has (``(index, task)``, or None while it waits)."""

    def __init__(self, context, arguments):
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, os.getpid(), arguments),
                                       name="threadmap-check-worker", daemon=True)
        self.process.start()
        theirs.close()  # (its only holder is the worker: at its end, recv sees EOF)
        self.task: tuple[int, Task] | None = None

    def take(self, waiting: deque) -> None:
        """The next waiting task, if any (left waiting if this worker has
        ended: its end is seen, and it is replaced)."""
        if waiting:
            task = waiting.popleft()
            try:
                self.connection.send(task)
            except OSError:
                waiting.appendleft(task)
                return
            self.task = task

    def answer(self) -> tuple[int, list[dict]] | None:
        """Its task's rows, or None if it ended before it sent them whole."""
        try:
            answer = self.connection.recv()
        except (EOFError, OSError):
            return None
        self.task = None
        return answer

    def stop(self) -> None:
        """Ask it to end (not by closing the pipe: workers forked after it
        hold copies of this end) and wait for it."""
        try:
            self.connection.send(None)
        except OSError:
            pass
        self.process.join()
        self.connection.close()


def _serve(connection, parent: int, arguments) -> None:
    """A worker of :func:`_on_pool`: tasks in, rows out, until told to stop."""
    _worker_signals(parent)
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        index, task = message
        try:
            rows = check_kernel(task, **arguments)
        except BaseException as exc:  # (SystemExit from a bug: still this task's row)
            rows = [_error_row(Task(*task), thread_map_failed(exc))]
        connection.send((index, rows))


def _worker_ended(exitcode: int | None) -> str:
    """The reason of the row of a task whose worker process ended under it."""
    import signal

    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == getattr(signal, "SIGKILL", None):
            return (f"ThreadMap failed on this case: its worker process ended: killed "
                    f"({name}), as the out-of-memory killer ends a process — too little "
                    "memory, or a bug in ThreadMap: please report it")
        how = f"killed ({name})"
    else:
        how = f"exit status {exitcode}"
    return (f"ThreadMap failed on this case: its worker process ended: {how} — a bug in "
            "ThreadMap, please report it")


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
            try:
                rows = future.result()
            except Exception as exc:
                if future.status != "error":
                    raise
                # (the task failed on its worker, which check_kernel did not
                # catch: a worker lost, KilledWorker: that task's row alone)
                rows = [_error_row(Task(*work[index]), thread_map_failed(exc))]
            results.append(rows)
            progress(index + 1, len(work))
        return results
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        client.close()


COLUMNS = ("file", "link", "kernel", "shape", "launch", "launch_source", "reference", "verdict",
           "reasons", "diagnoses", "seconds", "time_what")


def write_report(rows: list[dict], out: Path, title: str = "ThreadMap check",
                 folder=None, skipped=()) -> None:
    """``report.csv``, ``report.json`` and ``report.html`` into ``out``, the
    three together or none (outputs.py); into ``folder`` (an OutputFolder the
    command holds) when given.  ``skipped``: ``(file, why)`` of each file not
    graded (run_check's), in report.json's ``skipped`` and report.html, never
    a row of report.csv."""
    from .outputs import OutputFolder

    if folder is None:
        with OutputFolder(out) as own:
            _stage_report(own, rows, title, skipped)
            own.publish()
    else:
        _stage_report(folder, rows, title, skipped)


def _stage_report(folder, rows: list[dict], title: str, skipped=()) -> None:
    rows = [{key: _printable(value) for key, value in row.items()} for row in rows]
    skipped = [{"file": _printable(path), "why": _printable(why)}
               for path, why in sorted(skipped)]  # (in file order, as the rows)

    def write_csv(path: Path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({key: _cell(value) for key, value in row.items()} for row in rows)

    folder.write("report.csv", write_csv)
    folder.write_text("report.json", json.dumps(
        {"rows": [{key: row.get(key) for key in COLUMNS} for row in rows],
         "skipped": skipped}, indent=2))
    folder.write_text("report.html", report_html(rows, title, skipped))


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


def report_html(rows: list[dict], title: str, skipped=()) -> str:
    """One table row per file (and kernel): a cell per case with its verdict,
    time and count map; reasons on hover and below; the files skipped
    (``{"file", "why"}``) in a list under it."""
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
        # (a file refused, or a kernel ThreadMap failed on before its cases:
        # one row without a shape, its reason across the cases)
        whole = not any(shape for shape, _ in by_case)
        if whole:
            row = next(iter(by_case.values()))
            cells.append(f"<td class='error' colspan='{max(len(cases), 1)}'>"
                         f"{e(row['reasons'])}</td>")
        for case in cases if not whole else ():
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
        link = next(iter(by_case.values())).get("link")
        note = f"<br><small class='link'>a link: {e(link)}</small>" if link else ""
        body.append(f"<tr><th class='file'>{e(shown[path])}<br><small>{e(kernel)}</small>"
                    f"{note}</th>{''.join(cells)}</tr>")
    skipped_list = ("<h2>Not graded</h2><ul>" + "".join(
        f"<li>{e(note['file'])}: {e(note['why'])}</li>" for note in skipped) + "</ul>"
        if skipped else "")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{e(title)}</title><style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px; vertical-align: top; font-size: 12px; }}
td.pass b {{ color: #1a7f37; }} td.fail b, td.error b {{ color: #c62828; }}
td.checked b {{ color: #8a6d00; }}
td.error {{ color: #c62828; }} .why {{ max-width: 14em; color: #555; }}
.cause {{ max-width: 14em; color: #8a3a00; }}
.link {{ color: #8a3a00; font-weight: normal; }}
th.file {{ text-align: left; }} img {{ image-rendering: pixelated; display: block; }}
</style></head><body>
<h1>{e(title)}</h1>
<p>{len(groups)} kernels or files, {len(rows)} cases: {passed} PASS, {checked_text}
{sum(r['verdict'] == 'FAIL' for r in rows)} FAIL, {sum(r['verdict'] == 'ERROR' for r in rows)}
ERROR. Count maps: black = never written, green = once, blue = more than once by one thread,
orange to dark red = more than once by several threads (collisions), lavender = updated
atomically by several threads (no collision). "guessed:" marks a launch
ThreadMap guessed for a file that gives none.</p>
<table><tr><th>file, kernel</th>{head}</tr>
{''.join(body)}
</table>{skipped_list}</body></html>
"""
