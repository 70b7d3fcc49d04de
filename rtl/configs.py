"""Hardware build configurations: the driver's :class:`GpuConfig` plus RTL-only parameters.

The sizes that a kernel can observe (cores, warps, lanes, memories) come from
``simtgpu.arch.config`` so the driver, the ISS and the RTL always agree on what
``tiny``, ``small`` and ``full`` mean. :class:`RtlConfig` adds what only the hardware needs:
the memory bus width, the tag widths, the watchdogs, and derived bit widths used by every
block in ``rtl/``.

Usage::

    from simtgpu.rtl.configs import get_rtl_config
    cfg = get_rtl_config("small")           # or get_rtl_config(GpuConfig(...), line_words=4)
    cfg.lanes, cfg.warps, cfg.line_words, cfg.source_bits
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from simtgpu.arch.config import (
    CONFIGS,
    GpuConfig,
    L1Config,
    L2Config,
    MemoryConfig,
    memory_settings,
)
from simtgpu.errors import SimtgpuError

__all__ = ["RTL_CONFIGS", "RtlConfig", "RtlConfigError", "get_rtl_config"]


class RtlConfigError(SimtgpuError):
    """A hardware parameter is out of range; the message names the parameter and the value."""


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _bits(n: int) -> int:
    """Bits to index ``n`` items (at least 1, so a one-item index is still a signal)."""
    return max(1, (n - 1).bit_length())


def _default_lsu_depth(gpu: GpuConfig) -> int:
    """``RtlConfig.lsu_depth`` 0: the L1's reorder buffer, or 8 with no L1."""
    l1 = gpu.l1_cache
    return l1.rob_depth if l1 is not None else 8


@dataclass(frozen=True)
class RtlConfig:
    """One hardware build.

    Parameters
    ----------
    gpu:
        The driver-visible sizes (cores, warps per core, lanes, memories, latency).
    line_words:
        32-bit words per memory-bus line. Defaults to ``lanes``, so a warp's fully
        coalesced access to consecutive aligned words is one transaction.
    tag_bits:
        Width of the tag a core puts on its memory requests (its warp slot and anything
        else it needs to match responses). The interconnect widens it by ``source_bits``.
    watchdog_cycles:
        A kernel that runs longer than this many cycles is stopped with a ``WATCHDOG`` fault.
    barrier_watchdog_cycles:
        A barrier that waits longer than this raises ``BARRIER_DEADLOCK``.
    drain_timeout_cycles:
        After a fault, how long the host interface waits for the halted cores to drain before
        flushing them anyway (a core that never drains must not block the queue).
    sim_memory_bytes:
        Size of the simulation memory model behind the external port. Defaults to
        ``gpu.memory_bytes``; unit tests use a few KiB. With a smaller memory than
        ``memory_bytes`` the model wraps addresses past its end, so keep kernels inside it.
    sfus:
        Special-function units per core (a divisor of ``lanes``). A warp's SFU instruction
        goes through them in ``lanes / sfus`` passes. Defaults to ``lanes / 4`` (at least
        one): SFU instructions are rare, and each unit is as large as several FPUs.
    mma_dots:
        Dot-product trees of the core's matrix unit (rtl/matrix_unit.py): ``mma`` output
        elements started per cycle, each tree ``k`` FP32 multipliers and ``k`` adders of the
        ``mma`` shape at this warp width. Defaults to ``lanes / 4`` (at least one), which
        gives ``lanes / 4 * k`` multiply-adds per cycle (tiny 8, small 16, full 128), twice
        to four times the ``lanes`` FFMAs of the FP32 lanes, for about as many FP32 nodes as
        a few lanes' FPUs; a power of two dividing ``lanes``.
    mem_queue_depth:
        Entries of the simulation DRAM model's response queue: the most requests in flight
        that any timing programmed at run time may allow. Defaults to the largest of the
        configuration's named memory settings (:func:`simtgpu.arch.config.memory_settings`)
        and its own ``memory``.
    clock_gating:
        Register the half unit's operands on a gated clock (an OR gate of the core clock and
        "no half instruction this cycle"), which a Verilator model evaluates only when that
        clock rises: the simulation models use it. False gives the same registers a clock
        enable on the core clock instead, the form an FPGA wants; the FPGA flow
        (:mod:`simtgpu.rtlsim.synth`) builds that. Same function and cycle counts.
    max_blocks:
        Blocks a core may hold at once (block slots); 0, the default, means ``warps`` (a
        block has at least one warp); 1 gives the one-block-at-a-time core. A block is
        placed only where its warps and shared memory fit beside the resident ones.
    lsu_depth:
        Global transactions a core's LSU may have outstanding on its memory port (its
        response FIFO), a power of two from 2 to 64. 0, the default, means the L1's
        ``rob_depth`` (what the cache below can hold in flight: a deeper LSU would only wait
        on it, a shallower one would leave it idle), or 8 with no L1 (the LSU every figure
        without an L1 was measured with). By Little's law a core keeps at most
        ``lsu_depth / latency`` lines per cycle moving (docs/memory-system.md).
    """

    gpu: GpuConfig
    line_words: int = 0  # 0 = lanes
    tag_bits: int = 8
    watchdog_cycles: int = 1 << 24
    barrier_watchdog_cycles: int = 1 << 16
    drain_timeout_cycles: int = 1 << 16
    sim_memory_bytes: int = 0  # 0 = gpu.memory_bytes
    sfus: int = 0  # 0 = max(1, lanes // 4)
    mma_dots: int = 0  # 0 = max(1, lanes // 4)
    mem_queue_depth: int = 0  # 0 = the largest in-flight limit of the memory settings
    clock_gating: bool = True
    max_blocks: int = 0  # 0 = warps
    lsu_depth: int = 0  # 0 = the L1's rob_depth, 8 with no L1

    def __post_init__(self) -> None:
        if self.mem_queue_depth == 0:
            limits = [m.inflight_limit for m in memory_settings(self.gpu).values()]
            object.__setattr__(self, "mem_queue_depth",
                               max(*limits, self.gpu.memory_timing.inflight_limit))
        if self.line_words == 0:
            object.__setattr__(self, "line_words", self.gpu.lanes)
        if self.sim_memory_bytes == 0:
            object.__setattr__(self, "sim_memory_bytes", self.gpu.memory_bytes)
        if self.sfus == 0:
            object.__setattr__(self, "sfus", max(1, self.gpu.lanes // 4))
        if self.max_blocks == 0:
            object.__setattr__(self, "max_blocks", self.gpu.warps_per_core)
        if self.mma_dots == 0:
            object.__setattr__(self, "mma_dots", max(1, self.gpu.lanes // 4))
        if self.lsu_depth == 0:
            object.__setattr__(self, "lsu_depth", _default_lsu_depth(self.gpu))
        problems = []
        if not (_is_pow2(self.lsu_depth) and 2 <= self.lsu_depth <= 64):
            problems.append(f"lsu_depth must be a power of two from 2 to 64, "
                            f"not {self.lsu_depth}")
        if not 1 <= self.max_blocks <= self.gpu.warps_per_core:
            problems.append(f"max_blocks must be from 1 to warps_per_core "
                            f"({self.gpu.warps_per_core}), not {self.max_blocks}")
        if not 1 <= self.sfus <= self.gpu.lanes or self.gpu.lanes % self.sfus:
            problems.append(f"sfus must divide lanes ({self.gpu.lanes}), not {self.sfus}")
        if not _is_pow2(self.mma_dots) or self.gpu.lanes % self.mma_dots:
            problems.append(f"mma_dots must be a power of two dividing lanes "
                            f"({self.gpu.lanes}), not {self.mma_dots}")
        if not (_is_pow2(self.line_words) and self.line_words <= 32):
            problems.append("line_words must be a power of two from 1 to 32, "
                            f"not {self.line_words}")
        if not 1 <= self.tag_bits <= 16:
            problems.append(f"tag_bits must be from 1 to 16, not {self.tag_bits}")
        if (1 << self.tag_bits) < self.gpu.warps_per_core:
            problems.append(f"tag_bits must hold a warp slot ({self.gpu.warps_per_core} warps), "
                            f"not {self.tag_bits}")
        if self.gpu.cores > 16:
            problems.append(f"cores must be at most 16, not {self.gpu.cores}")
        if self.gpu.warps_per_core > 32:
            problems.append(f"warps_per_core must be at most 32, not {self.gpu.warps_per_core}")
        if not 1 <= self.watchdog_cycles < 1 << 32:
            problems.append("watchdog_cycles must be from 1 to 2**32-1, "
                            f"not {self.watchdog_cycles}")
        if not 1 <= self.barrier_watchdog_cycles < 1 << 32:
            problems.append("barrier_watchdog_cycles must be from 1 to 2**32-1, "
                            f"not {self.barrier_watchdog_cycles}")
        if not 1 <= self.drain_timeout_cycles < 1 << 32:
            problems.append("drain_timeout_cycles must be from 1 to 2**32-1, "
                            f"not {self.drain_timeout_cycles}")
        line_bytes = 4 * self.line_words
        if (not _is_pow2(self.sim_memory_bytes) or self.sim_memory_bytes < line_bytes
                or self.sim_memory_bytes > self.gpu.memory_bytes):
            problems.append("sim_memory_bytes must be a power of two no larger than memory_bytes "
                            f"({self.gpu.memory_bytes:#x}), not {self.sim_memory_bytes:#x}")
        if self.gpu.memory_timing.inflight_limit > self.mem_queue_depth:
            problems.append(f"mem_queue_depth ({self.mem_queue_depth}) must hold the memory "
                            f"setting's {self.gpu.memory_timing.inflight_limit} requests in "
                            "flight")
        if problems:
            raise RtlConfigError(f"RTL configuration {self.gpu.name!r}: " + "; ".join(problems))

    # --- driver-visible sizes, under the names the RTL uses -------------------------------
    @property
    def name(self) -> str:
        return self.gpu.name

    @property
    def cores(self) -> int:
        return self.gpu.cores

    @property
    def warps(self) -> int:
        """Warp slots per core."""
        return self.gpu.warps_per_core

    @property
    def lanes(self) -> int:
        return self.gpu.lanes

    @property
    def regs(self) -> int:
        return self.gpu.regs

    @property
    def shared_bytes(self) -> int:
        """Shared memory per core."""
        return self.gpu.shared_bytes_per_core

    @property
    def memory_bytes(self) -> int:
        return self.gpu.memory_bytes

    @property
    def memory_addr_bits(self) -> int:
        """Bits of an address inside the memory (``memory_bytes`` is a power of two): the
        caches take addresses modulo it, as the memory does (rtl/l1_cache.py)."""
        return self.gpu.memory_bytes.bit_length() - 1

    @property
    def mem_latency(self) -> int:
        return self.gpu.mem_latency

    @property
    def memory(self) -> MemoryConfig:
        """Device-memory timing of the harness's DRAM model (``gpu.memory_timing``)."""
        return self.gpu.memory_timing

    @property
    def l1(self) -> L1Config | None:
        """Each core's L1 data cache (``gpu.l1_cache``), or None: the core's port goes straight
        to the interconnect."""
        return self.gpu.l1_cache

    @property
    def l2(self) -> L2Config | None:
        """The shared L2 (``gpu.l2_cache``), or None: the interconnect's port goes straight to
        memory."""
        return self.gpu.l2_cache

    @property
    def stack_depth(self) -> int:
        return self.gpu.stack_depth

    @property
    def imem_words(self) -> int:
        return self.gpu.imem_bytes // 4

    # --- derived widths -------------------------------------------------------------------
    @property
    def lane_bits(self) -> int:
        return _bits(self.lanes)

    @property
    def warp_bits(self) -> int:
        return _bits(self.warps)

    @property
    def core_bits(self) -> int:
        return _bits(self.cores)

    @property
    def imem_addr_bits(self) -> int:
        """Width of a word address into instruction memory."""
        return _bits(self.imem_words)

    @property
    def line_bytes(self) -> int:
        return 4 * self.line_words

    @property
    def sources(self) -> int:
        """Memory-port initiators on the interconnect: every core plus the command processor
        (which is source ``cores``)."""
        return self.cores + 1

    @property
    def source_bits(self) -> int:
        return _bits(self.sources)

    @property
    def ext_tag_bits(self) -> int:
        """Tag width on the GPU's external memory port: the core's tag plus the source id."""
        return self.tag_bits + self.source_bits

    @property
    def sim_memory_lines(self) -> int:
        return self.sim_memory_bytes // self.line_bytes

    def for_build(self) -> RtlConfig:
        """The configuration a simulation model of this one is built from: the memory setting
        reset to ``ideal`` (the harness's DRAM timing is programmed at run time, so every
        setting shares one build), the DRAM model's queue still deep enough for this one."""
        if self.gpu.memory is None:
            return self
        base = self.with_(memory=None)
        if base.mem_queue_depth < self.mem_queue_depth:
            base = replace(base, mem_queue_depth=self.mem_queue_depth)
        return base

    def timing_command(self) -> tuple[int, int, int]:
        """``(latency, cycles_per_line, max_inflight)`` of the memory setting: what the
        harness's ``mem_timing`` port is loaded with."""
        m = self.memory
        return m.latency, m.cycles_per_line(self.line_bytes), m.inflight_limit

    def with_(self, **changes) -> RtlConfig:
        """A copy with RTL parameters or :class:`GpuConfig` fields changed (tests use this)."""
        gpu_names = {f.name for f in fields(GpuConfig)}
        gpu_changes = {k: v for k, v in changes.items() if k in gpu_names}
        rtl_changes = {k: v for k, v in changes.items() if k not in gpu_names}
        gpu = replace(self.gpu, **gpu_changes) if gpu_changes else self.gpu
        if gpu_changes and "line_words" not in rtl_changes and self.line_words == self.gpu.lanes:
            rtl_changes["line_words"] = 0
        if gpu_changes and "sim_memory_bytes" not in rtl_changes \
                and self.sim_memory_bytes == self.gpu.memory_bytes:
            rtl_changes["sim_memory_bytes"] = 0
        if gpu_changes and "mem_queue_depth" not in rtl_changes:
            rtl_changes["mem_queue_depth"] = 0
        if gpu_changes and "lsu_depth" not in rtl_changes \
                and self.lsu_depth == _default_lsu_depth(self.gpu):
            rtl_changes["lsu_depth"] = 0
        return replace(self, gpu=gpu, **rtl_changes)

    def with_caches(self, l1: bool | None = None, l2: bool | None = None) -> RtlConfig:
        """Each core's L1 and the shared L2 on (True: the configuration's default cache), off
        (False) or as they are (None)."""
        cfg = self
        if l1 is not None:
            cfg = cfg.with_(l1=cfg.gpu.with_l1(l1).l1)
        if l2 is not None:
            cfg = cfg.with_(l2=cfg.gpu.with_l2(l2).l2)
        return cfg


RTL_CONFIGS: dict[str, RtlConfig] = {name: RtlConfig(gpu) for name, gpu in CONFIGS.items()}
"""The named configurations ``tiny`` (1 core, 2 warps, 4 lanes), ``small`` (2 cores, 8 warps,
8 lanes) and ``full`` (4 cores, 8 warps, 32 lanes) with default RTL parameters."""


def get_rtl_config(config: str | GpuConfig | RtlConfig, **rtl_params) -> RtlConfig:
    """Look up a configuration by name, or wrap a :class:`GpuConfig`; ``rtl_params`` override
    RTL-only fields (``line_words``, ``watchdog_cycles``, ...)."""
    if isinstance(config, RtlConfig):
        return replace(config, **rtl_params) if rtl_params else config
    if isinstance(config, GpuConfig):
        return RtlConfig(config, **rtl_params)
    try:
        base = RTL_CONFIGS[config]
    except KeyError:
        raise RtlConfigError(
            f"unknown configuration {config!r}; known: {', '.join(RTL_CONFIGS)}") from None
    return replace(base, **rtl_params) if rtl_params else base
