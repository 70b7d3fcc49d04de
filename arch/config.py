"""Named GPU configurations shared by the driver, the ISS backend and the RTL.

One :class:`GpuConfig` fixes every size the hardware is built with and the driver checks
launches against, so a kernel that launches on ``small`` under the ISS launches on the
``small`` RTL build too. It lives below both the driver and the RTL::

    from simtgpu.arch.config import CONFIGS, GpuConfig
"""

from __future__ import annotations

from dataclasses import dataclass

from simtgpu.errors import SimtgpuError
from simtgpu.isa.abi import GLOBAL_NULL_GUARD, NUM_REGS, RECONVERGENCE_STACK_DEPTH

KIB = 1024
MIB = 1024 * KIB


class ConfigError(SimtgpuError):
    """A configuration that cannot be built, or a name that no configuration has."""

    def render(self) -> str:
        return f"configuration error: {self}"


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


@dataclass(frozen=True)
class GpuConfig:
    """Sizes of one GPU build.

    Parameters
    ----------
    name:
        The configuration's name (``tiny``, ``small``, ``full`` or a user's own).
    cores:
        SIMT cores (SMs); blocks are dispatched to them.
    warps_per_core:
        Warp slots per core; a block may use at most all of them.
    lanes:
        Threads per warp (the warp size), a power of two from 4 to 32.
    regs:
        32-bit registers per thread.
    shared_bytes_per_core:
        Shared memory per core; a block's ``.shared`` size plus the launch's dynamic
        shared bytes must fit.
    memory_bytes:
        Device (global) memory size. Addresses below ``GLOBAL_NULL_GUARD`` fault, so the
        usable heap is ``[GLOBAL_NULL_GUARD, memory_bytes)``.
    mem_latency:
        Cycles from a global request to its response in the RTL memory model.
    stack_depth:
        Reconvergence-stack entries per warp.
    imem_bytes:
        Instruction memory size; the sum of the loaded modules' code must fit.
    """

    name: str
    cores: int
    warps_per_core: int
    lanes: int
    regs: int = NUM_REGS
    shared_bytes_per_core: int = 16 * KIB
    memory_bytes: int = 16 * MIB
    mem_latency: int = 8
    stack_depth: int = RECONVERGENCE_STACK_DEPTH
    imem_bytes: int = 16 * KIB

    def __post_init__(self) -> None:
        problems = []
        if self.cores < 1:
            problems.append(f"cores must be at least 1, not {self.cores}")
        if not _is_pow2(self.warps_per_core):
            problems.append(f"warps_per_core must be a power of two, not {self.warps_per_core}")
        if not (_is_pow2(self.lanes) and 4 <= self.lanes <= 32):
            problems.append(f"lanes must be a power of two from 4 to 32, not {self.lanes}")
        if self.regs != NUM_REGS:
            problems.append(f"regs must be {NUM_REGS} (the ISA's register count), not {self.regs}")
        if self.shared_bytes_per_core % 4 or self.shared_bytes_per_core < 0:
            problems.append("shared_bytes_per_core must be a non-negative multiple of 4, "
                            f"not {self.shared_bytes_per_core}")
        if not _is_pow2(self.memory_bytes) or self.memory_bytes <= 2 * GLOBAL_NULL_GUARD:
            problems.append("memory_bytes must be a power of two above "
                            f"{2 * GLOBAL_NULL_GUARD:#x}, not {self.memory_bytes:#x}")
        if self.mem_latency < 1:
            problems.append(f"mem_latency must be at least 1, not {self.mem_latency}")
        if self.stack_depth < 1:
            problems.append(f"stack_depth must be at least 1, not {self.stack_depth}")
        if not _is_pow2(self.imem_bytes) or self.imem_bytes < 64:
            problems.append(f"imem_bytes must be a power of two >= 64, not {self.imem_bytes}")
        if problems:
            raise ConfigError(f"configuration {self.name!r}: " + "; ".join(problems))

    @property
    def max_threads_per_block(self) -> int:
        """A block must fit in one core's warp slots."""
        return self.warps_per_core * self.lanes

    @property
    def warp_size(self) -> int:
        return self.lanes


CONFIGS: dict[str, GpuConfig] = {
    cfg.name: cfg
    for cfg in (
        GpuConfig("tiny", cores=1, warps_per_core=2, lanes=4, shared_bytes_per_core=4 * KIB,
                  memory_bytes=1 * MIB, mem_latency=4, imem_bytes=4 * KIB),
        GpuConfig("small", cores=2, warps_per_core=4, lanes=8, shared_bytes_per_core=16 * KIB,
                  memory_bytes=16 * MIB, mem_latency=8, imem_bytes=16 * KIB),
        GpuConfig("full", cores=4, warps_per_core=8, lanes=32, shared_bytes_per_core=48 * KIB,
                  memory_bytes=64 * MIB, mem_latency=20, imem_bytes=64 * KIB),
    )
}


def get_config(config: str | GpuConfig) -> GpuConfig:
    """Look up a configuration by name (or pass a :class:`GpuConfig` through)."""
    if isinstance(config, GpuConfig):
        return config
    try:
        return CONFIGS[config]
    except KeyError:
        raise ConfigError(
            f"unknown configuration {config!r}; known: {', '.join(CONFIGS)}") from None
