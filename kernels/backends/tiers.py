"""Which tier of the CPU emulation runs a job: instant (numpy) or compiled (numba)."""
from __future__ import annotations

from .common import BackendOutput, KernelJob


def run_emulation(job: KernelJob) -> BackendOutput:
    tier = job.request.tier
    if tier == "instant":
        from .instant import run_instant

        return run_instant(job)
    from .cpu import run_cpu

    return run_cpu(job)
