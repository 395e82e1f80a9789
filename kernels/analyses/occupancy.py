"""Occupancy and waves of a launch on a chosen GPU model, without the GPU.

Per configuration: how many blocks fit on one SM and what limits them
(blocks, warps, registers or shared memory per SM), the theoretical
occupancy, the number of waves of blocks over the SMs, and how idle the last
wave leaves them.  The arithmetic is that of NVIDIA's occupancy calculator
(cuda_occupancy.h: cudaOccMaxBlocksPerSMRegsLimit and friends; CUDA C++
Programming Guide, Compute Capabilities table).

Registers per thread come from the compiled kernel: from numba on a GPU, else
from ``ptxas -v`` on the kernel's PTX when the CUDA toolkit's ptxas is
installed, else from an assumption the user can change (stated as such).
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ThreadMapError

#: Default registers per thread when nothing measured them.
ASSUMED_REGISTERS = 32
#: Static shared memory per block that CUDA can build (48 KiB).
MAX_STATIC_SHARED = 48 * 1024


@dataclass(frozen=True)
class GpuModel:
    """Per-SM limits of a GPU, with where each figure comes from."""

    name: str
    compute_capability: tuple[int, int]
    sms: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    shared_per_sm: int  # bytes usable by blocks
    max_shared_per_block: int  # bytes, with the opt-in
    reserved_shared_per_block: int  # bytes the system keeps per block
    register_unit: int = 256  # registers are allocated per warp in units of this
    shared_unit: int = 128  # shared memory allocation granularity (bytes)
    sub_partitions: int = 4  # SM sub-partitions (schedulers) sharing the register file
    registers_per_block: int = 65536
    source: str = ""


_CC = ("CUDA C++ Programming Guide, Compute Capabilities table (technical "
       "specifications per compute capability)")
GPU_MODELS: dict[str, GpuModel] = {g.name: g for g in (
    GpuModel("H100 SXM", (9, 0), 132, 2048, 64, 32, 65536, 255, 228 * 1024, 227 * 1024, 1024,
             source="SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 "
                    f"SMs); per-SM limits: {_CC}, 9.0; Hopper Tuning Guide (228 KB shared per SM)"),
    GpuModel("H200", (9, 0), 132, 2048, 64, 32, 65536, 255, 228 * 1024, 227 * 1024, 1024,
             source="NVIDIA H200 Tensor Core GPU datasheet (GH100, 132 SMs as H100 SXM); "
                    f"per-SM limits: {_CC}, 9.0"),
    GpuModel("A100", (8, 0), 108, 2048, 64, 32, 65536, 255, 164 * 1024, 163 * 1024, 1024,
             source="SMs: NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs); "
                    f"per-SM limits: {_CC}, 8.0; Ampere Tuning Guide (164 KB shared per SM)"),
    GpuModel("RTX 4090", (8, 9), 128, 1536, 48, 24, 65536, 255, 100 * 1024, 99 * 1024, 1024,
             source="SMs: NVIDIA Ada GPU Architecture whitepaper (AD102 in RTX 4090: 128 SMs); "
                    f"per-SM limits: {_CC}, 8.9; Ada Tuning Guide (100 KB shared per SM)"),
    GpuModel("T4", (7, 5), 40, 1024, 32, 16, 65536, 255, 64 * 1024, 64 * 1024, 0,
             shared_unit=256,  # cuda_occupancy.h: cudaOccSMemAllocationGranularity, 7.5
             source="SMs: NVIDIA T4 datasheet / Turing architecture whitepaper (TU104 in T4: "
                    f"40 SMs); per-SM limits: {_CC}, 7.5; Turing Tuning Guide"),
)}


@dataclass(frozen=True)
class Occupancy:
    """One launch on one GPU model."""

    gpu: str
    threads_per_block: int
    blocks: int
    registers_per_thread: int
    registers_source: str
    shared_per_block: int
    warps_per_block: int
    #: blocks resident on one SM, and the limit that sets it
    blocks_per_sm: int
    limited_by: str
    #: every limit: "blocks", "warps", "registers", "shared memory" -> blocks per SM
    limits: dict
    occupancy: float  # active warps / max warps per SM
    waves: int
    #: of the last wave's block slots (blocks_per_sm x SMs), the share left idle
    last_wave_idle: float

    def describe(self) -> str:
        if self.blocks_per_sm == 0:
            return f"{self.gpu}: does not fit ({self.limited_by})"
        return (f"{self.gpu}: {self.blocks_per_sm} blocks/SM ({self.limited_by}), occupancy "
                f"{self.occupancy:.0%}, {self.waves} wave{'s' if self.waves != 1 else ''}, "
                f"last wave {self.last_wave_idle:.0%} idle")

    def summary(self) -> dict:
        return {k: (v if not isinstance(v, float) else round(v, 4))
                for k, v in self.__dict__.items()}


def occupancy(gpu: GpuModel, blocks: int, threads_per_block: int, registers_per_thread: int,
              shared_per_block: int = 0, registers_source: str = "assumed") -> Occupancy:
    """Resident blocks per SM, occupancy and waves of ``blocks`` x ``threads_per_block``."""
    warps_per_block = -(-threads_per_block // 32)
    limits = {"blocks": gpu.max_blocks_per_sm,
              "warps": gpu.max_warps_per_sm // warps_per_block}
    if registers_per_thread > gpu.max_registers_per_thread:
        limits["registers"] = 0
    elif registers_per_thread > 0:
        # As cudaOccMaxBlocksPerSMRegsLimit: registers are allocated per warp in
        # units, within each of the SM's sub-partitions; the hardware refuses a
        # block whose warps, rounded up to the sub-partitions, need more than
        # the per-block register limit.
        per_warp = math.ceil(registers_per_thread * 32 / gpu.register_unit) * gpu.register_unit
        rounded_warps = -(-warps_per_block // gpu.sub_partitions) * gpu.sub_partitions
        if per_warp * rounded_warps > gpu.registers_per_block:
            limits["registers"] = 0
        else:
            warps_per_partition = (gpu.registers_per_sm // gpu.sub_partitions) // per_warp
            limits["registers"] = warps_per_partition * gpu.sub_partitions // warps_per_block
    if shared_per_block > 0:
        per_block = math.ceil((shared_per_block + gpu.reserved_shared_per_block)
                              / gpu.shared_unit) * gpu.shared_unit
        # Static shared memory past 48 KiB cannot be built for any of these
        # GPUs (ptxas refuses it; more needs dynamic shared memory and an opt-in).
        fits = shared_per_block <= min(gpu.max_shared_per_block, MAX_STATIC_SHARED)
        limits["shared memory"] = gpu.shared_per_sm // per_block if fits else 0
    limited_by = min(limits, key=lambda k: (limits[k], list(limits).index(k)))
    per_sm = limits[limited_by]
    capacity = per_sm * gpu.sms
    if per_sm == 0:
        return Occupancy(gpu.name, threads_per_block, blocks, registers_per_thread,
                         registers_source, shared_per_block, warps_per_block, 0, limited_by,
                         limits, 0.0, 0, 1.0)
    waves = -(-blocks // capacity)
    remainder = blocks % capacity
    idle = 0.0 if remainder == 0 else 1.0 - remainder / capacity
    return Occupancy(gpu.name, threads_per_block, blocks, registers_per_thread, registers_source,
                     shared_per_block, warps_per_block, per_sm, limited_by, limits,
                     per_sm * warps_per_block / gpu.max_warps_per_sm, waves, idle)


@dataclass(frozen=True)
class Resources:
    """Registers per thread and static shared memory per block of a kernel."""

    registers: int
    shared_bytes: int
    source: str


@functools.lru_cache(maxsize=64)
def ptxas_resources(ptx: str, compute_capability: tuple[int, int]) -> Resources | str | None:
    """Ask the CUDA toolkit's ptxas what the kernel uses (no GPU needed):
    its figures, why it refused the kernel (a message), or None without ptxas."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    arch = f"sm_{compute_capability[0]}{compute_capability[1]}"
    # The PTX targets sm_90 at most; point it at the model's own architecture.
    text = re.sub(r"\.target\s+sm_\d+", f".target {arch}", ptx)
    note = ""
    output, ok = _run_ptxas(ptxas, text, arch)
    older = re.search(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'",
                      output)
    if not ok and older:
        # numba-cuda's NVVM may be newer than the installed toolkit: a simple
        # kernel assembles the same at the older PTX ISA version.
        text = re.sub(r"\.version\s+\d+\.\d+", f".version {older.group(2)}", text)
        note = f", PTX ISA {older.group(1)} read as {older.group(2)}"
        output, ok = _run_ptxas(ptxas, text, arch)
    registers = re.search(r"Used (\d+) registers", output)
    if not ok or registers is None:
        refusal = re.search(r"ptxas (?:fatal|error)\s*:\s*(?:Entry function '[^']*' )?(.+)",
                            output)
        return refusal.group(1).strip() if refusal else (output.strip().splitlines() or
                                                          ["ptxas failed"])[-1]
    shared = re.search(r"(\d+) bytes smem", output)
    version = re.search(r"release (\d+\.\d+)", _ptxas_version(ptxas))
    label = f"ptxas {version.group(1)} for {arch}" if version else f"ptxas for {arch}"
    return Resources(int(registers.group(1)), int(shared.group(1)) if shared else 0,
                     label + note)


def _run_ptxas(ptxas: str, ptx: str, arch: str) -> tuple[str, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(ptx)
        try:
            proc = subprocess.run([ptxas, "-v", f"-arch={arch}", str(source), "-o",
                                   str(Path(tmp) / "kernel.cubin")], capture_output=True,
                                  text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc), False
    return proc.stdout + proc.stderr, proc.returncode == 0


@functools.lru_cache(maxsize=1)
def _ptxas_version(ptxas: str) -> str:
    try:
        return subprocess.run([ptxas, "--version"], capture_output=True, text=True,
                              timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def kernel_resources(plan, dtype: str, gpu: GpuModel, assumed_registers: int = ASSUMED_REGISTERS,
                     dispatcher=None) -> Resources:
    """Registers and shared memory of the plain kernel: numba's figure on a GPU
    (when the compiled ``dispatcher`` is given), else ptxas, else the assumption."""
    if dispatcher is not None:
        try:
            registers = max(dispatcher.get_regs_per_thread().values())
            shared = max(dispatcher.get_shared_mem_per_block().values())
            return Resources(int(registers), int(shared), "numba, compiled for this GPU")
        except Exception:  # not compiled yet, or no GPU: fall through
            pass
    measured = _measured_by_ptxas(plan, dtype, gpu)
    if isinstance(measured, Resources):
        return measured
    why = ("no GPU, no ptxas" if not measured else measured
           if measured.startswith(_NOT_MEASURED) else f"ptxas refused the kernel: {measured}")
    return Resources(assumed_registers, static_shared_bytes(plan, dtype),
                     f"assumed {assumed_registers} registers ({why})")


#: How a register count that could not be measured begins (its reason follows).
_NOT_MEASURED = "not measured: "


def _measured_by_ptxas(plan, dtype: str, gpu: GpuModel) -> Resources | str | None:
    """ptxas's figures for the kernel (or why it refused it), kept on disk
    next to the generated modules: the kernel's PTX and ptxas take ~1 s, once
    per kernel source, dtype, architecture and ptxas."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    try:
        from ..cache import cache_dir
        from ..derived.codegen import module_text
        text, _ = module_text(plan, "cuda", dtype)
        key = hashlib.sha256("\0".join((text.text, str(gpu.compute_capability),
                                         _ptxas_version(ptxas))).encode()).hexdigest()[:20]
        stored = cache_dir() / f"resources_{key}.json"
        if stored.exists():
            figures = json.loads(stored.read_text())
            return Resources(**figures) if isinstance(figures, dict) else figures
        from .ptx import kernel_ptx

        try:
            ptx = kernel_ptx(plan, dtype, min(gpu.compute_capability, (9, 0)))
        except ThreadMapError as exc:  # (a file's compile, in its child, past its limit)
            return f"{_NOT_MEASURED}{exc}"  # (not kept: the next run measures again)
        measured = ptxas_resources(ptx, gpu.compute_capability)
    except Exception:  # numba or the toolkit missing: use the assumption
        return None
    if measured is not None:
        from ..outputs import OutputError, write_atomically

        try:  # (whole or not at all: two processes may measure at once)
            write_atomically(stored, json.dumps(asdict(measured) if isinstance(
                measured, Resources) else measured))
        except OutputError:  # a read-only or full cache: measure again next time
            pass
    return measured


def static_shared_bytes(plan, dtype: str) -> int:
    """Static shared memory per block, from the kernel's cuda.shared.array shapes."""
    import ast

    import numpy as np

    from ..derived.local_types import block_array_specs
    from ..sources.plan import cuda_attribute

    try:  # (each shared array's own element type: an int32 array is 4 bytes)
        items = {spec.line: np.dtype(spec.dtype).itemsize
                 for spec in block_array_specs(plan, dtype) if spec.kind == "shared"}
    except Exception:  # noqa: BLE001 (a declaration the specs refuse: the run says why)
        items = {}
    default = 4 if dtype == "float32" else 8
    total = 0
    for node in ast.walk(plan.kernel.node):
        if not (isinstance(node, ast.Call)
                and cuda_attribute(node.func, plan.module.aliases) == "shared.array"):
            continue
        shape = node.args[0] if node.args else next(
            (kw.value for kw in node.keywords if kw.arg == "shape"), None)
        dims = _int_value(shape, plan)
        if dims is None:
            continue  # a shape that is not a literal: unknown
        item = items.get(node.lineno, default)
        total += item * (math.prod(dims) if isinstance(dims, tuple) else dims)
    return total


def _int_value(node, plan):
    """An int or tuple of ints, through allow.evaluate (literals, constants,
    arithmetic); else None."""
    from ..sources.allow import NotConstant, evaluate
    from ..sources.source import qualified_name

    if node is None:
        return None
    try:
        value = evaluate(node, plan.module.values,
                         lambda n: qualified_name(n, plan.module.aliases))
    except NotConstant:
        return None
    parts = value if isinstance(value, tuple) else (value,)
    if not all(type(p) is int for p in parts):
        return None
    return value


_measured: dict[tuple, Resources | None] = {}


def cached_resources(plan, dtype: str, gpu: GpuModel,
                     assumed_registers: int = ASSUMED_REGISTERS) -> Resources:
    """kernel_resources, the measured figures remembered per (kernel source,
    dtype, architecture); the assumption applies only when nothing measured."""
    key = (plan.module.path, plan.name, hash(plan.module.text), dtype, gpu.compute_capability)
    if _measured.get(key) is None:
        dispatcher = None
        try:
            from ..backends.device import gpu_available

            # Only where numba.cuda is loaded already (a GPU or simulator run):
            # importing it costs ~0.2 s, and ptxas gives the same figures.
            if "numba.cuda" in sys.modules and gpu_available():
                from ..derived.codegen import load_module
                dispatcher = load_module(plan, "cuda", dtype).function(plan.name)
        except Exception:  # no usable GPU: ptxas or the assumption
            dispatcher = None
        found = kernel_resources(plan, dtype, gpu, assumed_registers, dispatcher)
        if found.source.startswith("assumed"):
            _measured.setdefault(key, None)
            return found
        _measured[key] = found
    return _measured[key]


def check_gpu_model(name: str) -> None:
    """Refuse a GPU model ThreadMap does not know, naming those it does."""
    if name not in GPU_MODELS:
        raise ThreadMapError(f"unknown GPU model {name!r}; models: {', '.join(GPU_MODELS)}")


def launch_occupancy(request, plan, gpu_name: str,
                     assumed_registers: int = ASSUMED_REGISTERS) -> Occupancy:
    """Occupancy and waves of ``request``'s launch on GPU model ``gpu_name``."""
    gpu = GPU_MODELS[gpu_name]
    resources = cached_resources(plan, request.element_types, gpu, assumed_registers)
    return occupancy(gpu, request.blocks, request.threads_per_block, resources.registers,
                     resources.shared_bytes, resources.source)


def warm(plan, dtype: str, assumed_registers: int = ASSUMED_REGISTERS) -> None:
    """Measure the kernel's registers for every model now (off the GUI thread),
    so that showing occupancy later costs nothing."""
    for gpu in GPU_MODELS.values():
        cached_resources(plan, dtype, gpu, assumed_registers)


def resources_for_every_gpu(plan, dtype: str) -> dict[str, Resources]:
    """The kernel's registers and shared memory on every GPU model, measured
    (ptxas, kept on disk) or, where nothing measures them, marked assumed
    (``source`` starts with "assumed"; the registers then come from the
    user's assumption, see :func:`occupancy_from`)."""
    return {name: cached_resources(plan, dtype, gpu) for name, gpu in GPU_MODELS.items()}


def occupancy_from(resources: Resources, gpu_name: str, blocks: int, threads_per_block: int,
                   assumed_registers: int = ASSUMED_REGISTERS) -> Occupancy:
    """Occupancy of a launch from the kernel's resources: pure arithmetic, so
    a result that carries its resources never reads its kernel again."""
    registers, source = resources.registers, resources.source
    if source.startswith("assumed"):
        registers = assumed_registers
        source = re.sub(r"assumed \d+ registers", f"assumed {assumed_registers} registers", source)
    return occupancy(GPU_MODELS[gpu_name], blocks, threads_per_block, registers,
                     resources.shared_bytes, source)
