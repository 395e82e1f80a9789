"""Errors a run can end with, each with a message meant for the user."""
from __future__ import annotations


class ThreadMapError(Exception):
    """Base of every error that ThreadMap reports to the user as a message."""


class RequestError(ThreadMapError, ValueError):
    """The request cannot run: bad shape, launch past CUDA's limits, too big..."""


class ArgumentsNeeded(RequestError):
    """The kernel is not C = A @ B and nothing describes its arguments: a
    front end asks for them (``--arg``, the app's Arguments field)."""


class KernelSourceError(ThreadMapError):
    """Something wrong with a kernel's source, located at a file and line."""

    def __init__(self, message: str, path: str | None = None,
                 line: int | None = None, column: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __reduce__(self):
        # Keep the location when sent from a child process.
        return (type(self), (self.message, self.path, self.line, self.column))

    def __str__(self) -> str:
        where = self.path or "<kernel>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.message}"


class UnsupportedConstruct(KernelSourceError):
    """The instrumentation cannot handle a construct of the kernel."""


class EmulationUnsupported(ThreadMapError):
    """The CPU emulation cannot run this kernel (it needs the simulator).

    ``lines`` names the offending source lines, ``reason`` says what they use.
    """

    def __init__(self, reason: str, lines: tuple[int, ...] = ()):
        self.reason = reason
        self.lines = tuple(lines)
        where = f" (line {', '.join(map(str, self.lines))})" if self.lines else ""
        super().__init__(f"{reason}{where}")

    def __reduce__(self):
        return (type(self), (self.reason, self.lines))


class KernelCompileError(ThreadMapError):
    """numba could not compile the kernel; the message keeps what matters."""


class KernelRuntimeError(ThreadMapError):
    """The kernel raised while running."""


class RunCancelled(ThreadMapError):
    """The user cancelled the run."""


class RunTimedOut(ThreadMapError):
    """The run went past its time limit and was ended.  ``kernel_hung`` is
    False when what was slow was not the kernel: numba's compile, or the
    start of the child process (neither counts in a run's time limit)."""

    def __init__(self, message: str, kernel_hung: bool = True):
        super().__init__(message)
        self.kernel_hung = kernel_hung

    def __reduce__(self):
        return (type(self), (str(self), self.kernel_hung))


class BackendUnavailable(RequestError):
    """The requested backend cannot run here (e.g. no CUDA device)."""
