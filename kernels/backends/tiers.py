"""Which tier of the CPU emulation runs a job: instant (numpy) or compiled (numba).

Engines that must both answer at once and run fast are tiered (V8's Ignition
and TurboFan, PyPy, LuaJIT): an interpreter answers while the optimising
compiler is not ready, and the compiled code takes over the work where it
pays.  Here the instant tier (``instant.py``) costs ~0.35 ms per statement it
runs over a vector of lanes and nothing to start; the compiled tier costs
seconds of numba compile per kernel (once: numba caches it on disk) and then
runs ~100x faster.  ``auto`` takes the compiled tier when its code is ready
(compiled in this process, or in numba's cache), else whichever the estimates
say finishes first, compile included.  After an instant run,
:func:`compile_in_background` can compile the kernel in a thread, so that
the next, larger run finds it ready (the app and the Python API do).
"""
from __future__ import annotations

import threading
from contextlib import nullcontext

from ..errors import EmulationUnsupported, ThreadMapError
from .common import BackendOutput, KernelJob

#: Whether an instant-tier run starts the compiled tier's compile in the
#: background (set in the child process that runs kernel files: child_main.py).
BACKGROUND_COMPILE = False

TIER_WORDS = {
    "instant": "CPU emulation, numpy lockstep: no compile",
    "compiled": "CPU emulation, compiled lockstep (numba)",
}


def choose_tier(request, plan) -> tuple[str, str]:
    """The tier for ``request`` ("instant" or "compiled") and why, in words."""
    from ..estimate import tier_seconds
    from ..result import format_seconds
    from .cpu import compiled_ready

    if request.tier != "auto":
        return request.tier, request.tier_source or f"--tier {request.tier}"
    if compiled_ready(plan, request):
        return "compiled", "its compiled code is ready"
    seconds = tier_seconds(request, plan)
    instant, compiled = seconds["instant"], seconds["compiled"]
    if instant <= compiled:
        return "instant", (f"estimated {format_seconds(instant)}, against "
                           f"{format_seconds(compiled)} with numba's compile")
    return "compiled", (f"estimated {format_seconds(compiled)} with numba's compile, "
                        f"against {format_seconds(instant)} without")


def run_emulation(job: KernelJob) -> BackendOutput:
    """Run ``job`` on the CPU emulation's chosen tier.  A kernel the instant
    tier cannot run goes to the compiled tier, which says why."""
    tier, why = choose_tier(job.request, job.plan)
    fallback = ""
    if tier == "instant":
        from .instant import TooSlow, run_instant
        from .phases import INSTANT_TRY, not_counted

        deadline = hand_over_after(job)
        # A try that auto chose is the engine's bet, bounded by its hand-over,
        # so a time limit does not count it: counted, the seed's kernel (1,267x
        # the work of the matmul the estimates assume) was ended as a hang at
        # 8 s on the instant tier, where the compiled one takes 0.05 s.
        attempt = not_counted(INSTANT_TRY) if deadline is not None else nullcontext()
        try:
            with attempt:
                output = run_instant(job, deadline)
        except EmulationUnsupported as exc:
            if job.request.tier == "instant":
                raise ThreadMapError(f"the instant tier cannot run {job.plan.name}: {exc}; "
                                     "choose --tier compiled or auto") from None
            fallback = f"; the instant tier cannot run it ({exc})"
        except TooSlow as exc:
            if exc.projected is not None:
                from ..result import format_seconds

                fallback = (f"; the instant tier handed over after {exc.seconds:.1f} s: its "
                            f"loops' trip counts project at least "
                            f"{format_seconds(exc.projected)}, past the compiled tier's "
                            "estimate with its compile: the kernel does more work than "
                            "M x N x K")
            else:
                fallback = (f"; the instant tier handed over after {exc.seconds:.1f} s, past "
                            "the compiled tier's estimate with its compile: the kernel does "
                            "more work than M x N x K")
        else:
            output.tier = f"{TIER_WORDS['instant']} ({why})"
            if BACKGROUND_COMPILE:
                compile_in_background(job)
            return output
    from .cpu import run_cpu

    output = run_cpu(job)
    output.tier = f"{TIER_WORDS['compiled']} ({why}{fallback})" if not fallback else \
        f"{TIER_WORDS['compiled']} ({fallback[2:]})"
    return output


def hand_over_after(job: KernelJob) -> float | None:
    """Seconds after which an instant run chosen by ``auto`` hands over to the
    compiled tier: when that tier, compile included, would have finished.  The
    estimates count a correct matmul's work; a kernel that does more (every
    thread computing all of C) then costs at most about twice the better
    tier.  None when the instant tier was asked for."""
    if job.request.tier != "auto":
        return None
    from ..estimate import tier_seconds

    compiled = tier_seconds(job.request.with_(tier="compiled"), job.plan)["compiled"]
    return max(1.0, compiled)


_BACKGROUND: dict[tuple, threading.Thread] = {}


def compile_in_background(job: KernelJob) -> threading.Thread | None:
    """Compile the compiled tier of ``job``'s kernel in a daemon thread (numba
    releases nothing while it compiles, but the instant answer is already
    shown); the next run of it finds the code ready.  None when it already is."""
    from .cpu import compile_emulation, compiled_ready

    plan, request = job.plan, job.request
    if compiled_ready(plan, request):
        return None
    key = (plan.module.path, plan.module.text, plan.name, request.element_types, job.scalar_types)
    running = _BACKGROUND.get(key)
    if running is not None and running.is_alive():
        return running

    def work() -> None:
        try:
            compile_emulation(job)
        except Exception:  # noqa: BLE001 - the next run reports a compile error itself
            pass

    thread = threading.Thread(target=work, name="threadmap-compile", daemon=True)
    _BACKGROUND[key] = thread
    thread.start()
    return thread
