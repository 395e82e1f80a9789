"""Where a kernel runs: a real GPU, numba's CUDA simulator, or the CPU emulation.

Each backend is a small object with a ``name``, ``available()`` and
``run(job)``; the engine looks them up in :data:`REGISTRY` by the name a
request carries, instead of comparing strings at every turn.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # (not imported: a child process is started before numpy is)
    from .common import BackendOutput, KernelJob


class Backend(Protocol):
    """What the engine needs of a place to run a kernel."""

    #: the name a request carries ("gpu", "sim", "cpu")
    name: str
    #: whether it needs a process of its own (numba reads NUMBA_ENABLE_CUDASIM
    #: once, at import): then runs go through backends/child.py
    needs_own_process: bool

    def available(self) -> bool:
        """Whether it can run here (in this process, or in its own)."""

    def run(self, job: KernelJob) -> BackendOutput:
        """Run the recording kernel, then (where it found nothing out of
        bounds) the plain kernel, timed; in this process."""


class CpuEmulation:
    name = "cpu"
    needs_own_process = False

    def available(self) -> bool:
        return True

    def run(self, job: KernelJob) -> BackendOutput:
        from .tiers import run_emulation

        return run_emulation(job)


class CudaSimulator:
    name = "sim"
    needs_own_process = True

    def available(self) -> bool:
        return True

    def run(self, job: KernelJob) -> BackendOutput:
        from .cuda_target import run_cuda

        return run_cuda(job)


class CudaGpu:
    name = "gpu"
    needs_own_process = False

    def available(self) -> bool:
        from .device import gpu_available

        return gpu_available()

    def run(self, job: KernelJob) -> BackendOutput:
        from .cuda_target import run_cuda

        return run_cuda(job)


REGISTRY: dict[str, Backend] = {b.name: b for b in (CudaGpu(), CpuEmulation(), CudaSimulator())}


def backend(name: str) -> Backend:
    """The backend called ``name`` (a request's resolved backend)."""
    return REGISTRY[name]
