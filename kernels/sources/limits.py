"""How much of a kernel file ThreadMap reads and analyses, with a refusal for each limit.

A hostile or broken file must cost a bounded time and never end in a
traceback: a FIFO would block the read forever, ``/dev/zero`` never ends, a
50 MB file or 10,000 kernels take minutes, 100,000 terms in one expression
exhaust Python's recursion, and 95 nested ``if``s take numba minutes to
compile.  Real kernels are far inside every limit.
"""
from __future__ import annotations

import ast
import errno
import os
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..errors import KernelSourceError
from ..words import whole_number

#: A kernel file larger than this is refused (the built-in kernels are ~1 KB).
MAX_FILE_BYTES = 1 << 20
#: Kernels in one file.
MAX_KERNELS = 100
#: Depth of the syntax tree (expressions within expressions and statements).
MAX_DEPTH = 200
#: Statements nested within a kernel (if / for / while inside each other).
MAX_NESTING = 12
#: Nodes of the syntax tree of one kernel (a matmul kernel has ~300; 5,000 is
#: an unrolled kernel of a few hundred lines, which numba compiles in seconds).
MAX_KERNEL_NODES = 5_000
#: Integers a kernel can hold: numba's are 64-bit (unsigned at most).
INTEGER_LIMIT = 1 << 64


def kernel_text(path: str) -> str:
    """A kernel file's text as it is parsed: without a byte-order mark."""
    return read_source(path).lstrip("\ufeff")


#: The folder below which no step of a kernel file's path may be a symbolic
#: link while it is read (:func:`refusing_links`); None: links are followed.
#: (A ContextVar: Dask runs ``check``'s tasks on threads of one worker.)
_LINKS_REFUSED_BELOW: ContextVar[str | None] = ContextVar("links_refused_below", default=None)
#: The end of a refused link's reason (``check --follow-links`` grades links).
LINK_REFUSED = "not graded; --follow-links grades links"


@contextmanager
def refusing_links(below: str | None):
    """Within it, :func:`read_source` refuses a path with a symbolic link on
    its way down from the folder ``below`` (the file itself included),
    opening each step from the one before with ``O_NOFOLLOW``: a submission
    swapped for a link after ``check`` listed it is refused where it is read,
    never followed.  ``below`` None: links are followed."""
    token = _LINKS_REFUSED_BELOW.set(below)
    try:
        yield
    finally:
        _LINKS_REFUSED_BELOW.reset(token)


def _open_source(path: str) -> int:
    """A descriptor of ``path`` opened for reading without blocking (see
    :func:`refusing_links` for the links refused)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    below = _LINKS_REFUSED_BELOW.get()
    if below is None or not hasattr(os, "O_NOFOLLOW") or os.open not in os.supports_dir_fd:
        return os.open(path, flags)
    parts = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(below))).parts
    if not parts or ".." in parts:
        return os.open(path, flags | os.O_NOFOLLOW)
    folder = os.open(below, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                            | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)


def read_source(path: str) -> str:
    """The text of a kernel file, read without blocking: a FIFO, a device or a
    folder is refused, and so is a file past :data:`MAX_FILE_BYTES`."""
    try:
        fd = _open_source(path)
    except OSError as exc:
        # (Linux says ELOOP for a link opened with O_NOFOLLOW, ENOTDIR for a
        # linked folder opened with O_DIRECTORY too)
        if _LINKS_REFUSED_BELOW.get() is not None and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise KernelSourceError(f"a symbolic link: {LINK_REFUSED}", path) from None
        raise KernelSourceError(f"cannot read the file: {exc.strerror or exc}", path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KernelSourceError(f"not a regular file ({file_kind(info.st_mode)}): a "
                                    "kernel file is a .py file", path)
        if info.st_size > MAX_FILE_BYTES:
            raise KernelSourceError(
                f"the file is {info.st_size / 2**20:.1f} MiB; ThreadMap reads kernel files of "
                f"up to {MAX_FILE_BYTES // 2**20} MiB", path)
        chunks = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_FILE_BYTES:  # (it grew while being read)
            raise KernelSourceError(f"the file is over {MAX_FILE_BYTES // 2**20} MiB", path)
    except OSError as exc:
        raise KernelSourceError(f"cannot read the file: {exc.strerror or exc}", path) from None
    finally:
        os.close(fd)
    try:
        # utf-8-sig: a byte-order mark is read as CPython reads it (ignored).
        return b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise KernelSourceError("the file is not UTF-8 text", path) from None


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words, from its ``st_mode``
    ("a FIFO", "a device", ...): the reason each refusal of one gives."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def parse(text: str, path: str) -> ast.Module:
    """``ast.parse``, with its recursion and memory errors (100,000 terms,
    50,000 unary minuses) as one refusal, and the tree's depth checked
    before any recursive pass over it."""
    if len(text) > MAX_FILE_BYTES:
        raise KernelSourceError(f"the text is over {MAX_FILE_BYTES // 2**20} MiB", path)
    if "\x00" in text:
        raise KernelSourceError("the file holds a NUL byte: it is not Python source", path)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise KernelSourceError(f"the file does not parse: {exc.msg}", path,
                                exc.lineno, exc.offset) from None
    except (RecursionError, MemoryError):
        raise KernelSourceError(
            "the file nests expressions too deeply for Python's parser (ThreadMap reads "
            f"expressions up to {MAX_DEPTH} levels deep)", path) from None
    check_depth(tree, path)
    return tree


def check_depth(tree: ast.AST, path: str) -> None:
    """Refuse a tree deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise KernelSourceError(
                f"an expression or statement nested more than {MAX_DEPTH} levels deep; "
                "ThreadMap analyses kernels up to that depth", path,
                getattr(node, "lineno", None))
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def check_kernel_size(func: ast.FunctionDef, path: str) -> None:
    """Refuse a kernel whose statements nest past :data:`MAX_NESTING`, whose
    tree has more than :data:`MAX_KERNEL_NODES` nodes, or that holds an
    integer literal past 64 bits."""
    nodes = 0
    stack: list[tuple[ast.AST, int]] = [(func, 0)]
    compound = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)
    while stack:
        node, nesting = stack.pop()
        nodes += 1
        if nodes > MAX_KERNEL_NODES:
            raise KernelSourceError(
                f"kernel {func.name!r} is too large to analyse (more than "
                f"{MAX_KERNEL_NODES:,} syntax nodes)", path, func.lineno)
        if isinstance(node, ast.Constant) and type(node.value) is int \
                and abs(node.value) >= INTEGER_LIMIT:
            # (refused here, before numba or ast.unparse writes it in decimal:
            # past 4,300 digits that raised ValueError)
            raise KernelSourceError(
                f"kernel {func.name!r}: {whole_number(node.value)} does not fit numba's "
                "64-bit integers", path, node.lineno)
        inner = nesting + 1 if isinstance(node, compound) else nesting
        if inner > MAX_NESTING:
            raise KernelSourceError(
                f"kernel {func.name!r} nests statements (if / for / while) more than "
                f"{MAX_NESTING} deep; ThreadMap emulates kernels up to that depth (numba "
                "takes minutes to compile deeper ones)", path, node.lineno)
        for child in ast.iter_child_nodes(node):
            # An elif is the else branch's one If: as deep as its if, not deeper.
            elif_ = isinstance(node, ast.If) and len(node.orelse) == 1 \
                and child is node.orelse[0] and isinstance(child, ast.If)
            stack.append((child, nesting if elif_ else inner))
