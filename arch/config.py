"""Named GPU configurations shared by the driver, the ISS backend and the RTL.

One :class:`GpuConfig` fixes every size the hardware is built with and the driver checks
launches against, so a kernel that launches on ``small`` under the ISS launches on the
``small`` RTL build too. It lives below both the driver and the RTL::

    from simtgpu.arch.config import CONFIGS, GpuConfig

Device-memory timing is a :class:`MemoryConfig`, chosen by name per configuration
(:func:`memory_settings`: ``ideal``, ``vortex``, ``realistic``; docs/memory-system.md). Only the
RTL harness's DRAM model uses it; the ISS is functional and ignores it. The per-core L1 data
cache is an :class:`L1Config` (:func:`l1_default` per configuration, :meth:`GpuConfig.with_l1`),
the shared L2 an :class:`L2Config` (:func:`l2_default`, :meth:`GpuConfig.with_l2`); they are
hardware build parameters, and the ISS ignores them too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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


def _refuse(what: str, problems: list[str]) -> None:
    """Raise one ConfigError listing every problem found in ``what`` (none: return)."""
    if problems:
        raise ConfigError(f"{what}: " + "; ".join(problems))


MAX_MSHRS = 64
"""Most MSHRs a cache (an L1, a bank of the L2) may have: as many as its reorder buffer can
hold at most, so that every request in flight could be a miss to a line of its own."""

MEMORY_SETTINGS = ("ideal", "vortex", "realistic")
"""The named device-memory settings every configuration has (:func:`memory_settings`)."""

MAX_MEM_WAIT = 1 << 14
"""Bound on ``latency + max_inflight * cycles_per_line``: the longest a request can wait in the
DRAM model, kept below half the model's 16-bit modular clock."""


@dataclass(frozen=True)
class MemoryConfig:
    """Timing of the device memory (DRAM) behind the GPU's one memory port.

    The RTL harness's DRAM model (rtlsim/memory_model.py, docs/memory-system.md) serves
    requests in arrival order over one data channel: a request starts its transfer when the
    channel is free, occupies it for ``line_bytes / bytes_per_cycle`` cycles, and its response
    is due ``latency`` cycles after its transfer started. At most ``max_inflight`` requests are
    accepted and not yet answered; at that limit the port stops accepting (back-pressure onto
    the interconnect and the cores).

    Parameters
    ----------
    name:
        The setting's name (``ideal``, ``vortex``, ``realistic`` or a user's own).
    latency:
        Cycles from the start of a request's transfer to its response (the unloaded latency;
        the model answers no sooner than 2 cycles after acceptance).
    bytes_per_cycle:
        Peak bandwidth, a power of two; 0 means one line per cycle, the port's own limit
        (a value of a line or more is the same).
    max_inflight:
        Requests accepted and not yet answered; 0 means ``latency + 3``, the response buffer
        of the fixed-latency memory that ``ideal`` keeps.
    """

    name: str
    latency: int
    bytes_per_cycle: int = 0
    max_inflight: int = 0

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= self.latency <= 4096:
            problems.append(f"latency must be from 1 to 4096 cycles, not {self.latency}")
        if self.bytes_per_cycle and not _is_pow2(self.bytes_per_cycle):
            problems.append("bytes_per_cycle must be a power of two (or 0: one line per cycle), "
                            f"not {self.bytes_per_cycle}")
        if not 0 <= self.max_inflight <= 1024:
            problems.append(f"max_inflight must be from 1 to 1024 (or 0: latency + 3), "
                            f"not {self.max_inflight}")
        _refuse(f"memory setting {self.name!r}", problems)

    @property
    def inflight_limit(self) -> int:
        """Requests in flight at most (``max_inflight``, or ``latency + 3`` for 0)."""
        return self.max_inflight or self.latency + 3

    def cycles_per_line(self, line_bytes: int) -> int:
        """Cycles one line's transfer occupies the channel (at least 1: one request per
        cycle is the port's own limit)."""
        if not self.bytes_per_cycle:
            return 1
        return max(1, line_bytes // self.bytes_per_cycle)

    def peak_bytes_per_cycle(self, line_bytes: int) -> float:
        """The bandwidth the model can deliver with lines of ``line_bytes``."""
        return line_bytes / self.cycles_per_line(line_bytes)

    def describe(self, line_bytes: int) -> str:
        """One line for reports: ``realistic: 100 cycles, 16 B/cycle, 64 in flight``."""
        return (f"{self.name}: {self.latency} cycles, "
                f"{self.peak_bytes_per_cycle(line_bytes):g} B/cycle, "
                f"{self.inflight_limit} in flight")


def _cache_problems(cache: L1Config | L2Config, level: str) -> list[str]:
    """What is wrong with the parameters a cache of either level shares."""
    problems = []
    if cache.size_bytes and not _is_pow2(cache.size_bytes):
        problems.append(f"size_bytes must be a power of two (or 0: no {level}), "
                        f"not {cache.size_bytes}")
    if not _is_pow2(cache.ways):
        problems.append(f"ways must be a power of two, not {cache.ways}")
    if not 1 <= cache.mshrs <= MAX_MSHRS:
        problems.append(f"mshrs must be from 1 to {MAX_MSHRS}, not {cache.mshrs}")
    if not (_is_pow2(cache.rob_depth) and 2 <= cache.rob_depth <= 64):
        problems.append(f"rob_depth must be a power of two from 2 to 64, not {cache.rob_depth}")
    return problems


def _describe(cache: L1Config | L2Config, level: str, line_bytes: int, banks: str = "",
              per: str = "") -> str:
    """One line for reports (``describe`` of either level)."""
    if not cache.size_bytes:
        return f"no {level}"
    size = cache.size_bytes
    size_text = f"{size // KIB} KiB" if size >= KIB else f"{size} B"
    return (f"{level} {size_text}, {banks}{cache.ways} ways, {cache.sets(line_bytes)} sets of "
            f"{line_bytes} B, {cache.mshrs} MSHRs{per}, {cache.rob_depth} in flight{per}")


@dataclass(frozen=True)
class L1Config:
    """The per-core L1 data cache (rtl/l1_cache.py; docs/memory-system.md).

    Write-through, no write-allocate, non-blocking; its line is the memory port's line
    (``4 x lanes`` bytes). ``size_bytes`` 0 means no cache: the core's port goes straight to
    the interconnect, as before the cache existed.

    Parameters
    ----------
    size_bytes:
        Capacity per core: a power-of-two number of sets of ``ways`` lines, or 0 (no L1).
    ways:
        Associativity, a power of two.
    mshrs:
        Lines with a read miss outstanding at once (1 to 64).
    rob_depth:
        Requests in flight through the cache (hits, misses, stores, atomics), a power of two
        from 2 to 64: the cache's reorder buffer keeps the port's in-order responses.
    """

    size_bytes: int
    ways: int = 4
    mshrs: int = 8
    rob_depth: int = 32

    def __post_init__(self) -> None:
        _refuse("L1 cache", _cache_problems(self, "L1"))

    def sets(self, line_bytes: int) -> int:
        """Sets of ``ways`` lines of ``line_bytes`` (0 with no cache)."""
        return self.size_bytes // (line_bytes * self.ways)

    def describe(self, line_bytes: int) -> str:
        """One line for reports: ``L1 4 KiB, 4 ways, 32 sets of 32 B, 8 MSHRs``."""
        return _describe(self, "L1", line_bytes)


@dataclass(frozen=True)
class L2Config:
    """The shared L2 cache between the interconnect and DRAM (rtl/l2_cache.py;
    docs/memory-system.md).

    Write-through, no write-allocate, non-blocking, banked by line address; atomics are
    executed in it. ``size_bytes`` 0 means no L2: the interconnect's port goes straight to
    memory, as before the cache existed.

    Parameters
    ----------
    size_bytes:
        Total capacity, split evenly over the banks: each bank a power-of-two number of sets
        of ``ways`` lines, or 0 (no L2).
    ways:
        Associativity of every bank, a power of two.
    banks:
        Banks, a power of two: line ``n`` lives in bank ``n mod banks``.
    mshrs:
        Lines with a read miss outstanding at once, per bank (1 to 64).
    rob_depth:
        Requests in flight through each bank, a power of two from 2 to 64.
    """

    size_bytes: int
    ways: int = 8
    banks: int = 2
    mshrs: int = 8
    rob_depth: int = 16

    def __post_init__(self) -> None:
        problems = _cache_problems(self, "L2")
        if not (_is_pow2(self.banks) and self.banks <= 16):
            problems.append(f"banks must be a power of two up to 16, not {self.banks}")
        _refuse("L2 cache", problems)

    def sets(self, line_bytes: int) -> int:
        """Sets of ``ways`` lines of ``line_bytes`` per bank (0 with no cache)."""
        return self.size_bytes // (line_bytes * self.ways * self.banks)

    def describe(self, line_bytes: int) -> str:
        """One line for reports: ``L2 32 KiB, 4 banks, 8 ways, 32 sets of 32 B, 8 MSHRs per
        bank, 16 in flight per bank``."""
        return _describe(self, "L2", line_bytes, f"{self.banks} banks, ", " per bank")


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
        Cycles from a global request to its response in the RTL memory model's ``ideal``
        setting (fixed latency, a line per cycle).
    stack_depth:
        Reconvergence-stack entries per warp.
    imem_bytes:
        Instruction memory size; the sum of the loaded modules' code must fit.
    memory:
        Device-memory timing of the RTL harness; None is the ``ideal`` setting (see
        :func:`memory_settings`, :meth:`with_memory`). The ISS ignores it.
    l1:
        The per-core L1 data cache of the RTL; None is no cache (see :func:`l1_default`,
        :meth:`with_l1`). The ISS ignores it: it has no timing, and the cache keeps the ISA's
        memory semantics.
    l2:
        The shared L2 of the RTL; None is no L2 (see :func:`l2_default`, :meth:`with_l2`).
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
    memory: MemoryConfig | None = None
    l1: L1Config | None = None
    l2: L2Config | None = None

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
        if self.memory is not None:
            cpl = self.memory.cycles_per_line(4 * self.lanes)
            wait = self.memory.latency + self.memory.inflight_limit * cpl
            if wait >= MAX_MEM_WAIT:
                problems.append(f"memory setting {self.memory.name!r}: latency + max_inflight x "
                                f"cycles per line must be below {MAX_MEM_WAIT}, not {wait}")
        if self.l1 is not None and self.l1.size_bytes:
            line = 4 * self.lanes
            if self.l1.size_bytes < line * self.l1.ways:
                problems.append(f"the L1's {self.l1.size_bytes} bytes must hold at least one "
                                f"set of {self.l1.ways} ways of {line}-byte lines")
        if self.l2 is not None and self.l2.size_bytes:
            line = 4 * self.lanes
            if self.l2.size_bytes < line * self.l2.ways * self.l2.banks:
                problems.append(f"the L2's {self.l2.size_bytes} bytes must hold at least one "
                                f"set of {self.l2.ways} ways of {line}-byte lines in each of "
                                f"its {self.l2.banks} banks")
        for name, cache in (("L1", self.l1), ("L2", self.l2)):
            # the caches take addresses modulo memory_bytes (rtl/l1_cache.py): a way as large
            # as the memory would leave its tags no bit
            if cache is not None and cache.size_bytes and \
                    cache.size_bytes // max(cache.ways, 1) >= self.memory_bytes:
                problems.append(f"each way of the {name} ({cache.size_bytes // cache.ways} "
                                f"bytes) must be smaller than memory_bytes "
                                f"({self.memory_bytes:#x})")
        _refuse(f"configuration {self.name!r}", problems)

    @property
    def l1_cache(self) -> L1Config | None:
        """The L1 in force, or None where there is none (``l1`` None or of size 0)."""
        return self.l1 if self.l1 is not None and self.l1.size_bytes else None

    @property
    def l2_cache(self) -> L2Config | None:
        """The L2 in force, or None where there is none (``l2`` None or of size 0)."""
        return self.l2 if self.l2 is not None and self.l2.size_bytes else None

    def with_l1(self, l1: bool | L1Config | None) -> GpuConfig:
        """This configuration with the L1 ``l1``: True for its default (:func:`l1_default`),
        False or None for none, or an :class:`L1Config`."""
        return replace(self, l1=self._cache_choice("l1", l1, L1Config, l1_default))

    def with_l2(self, l2: bool | L2Config | None) -> GpuConfig:
        """This configuration with the L2 ``l2``: True for its default (:func:`l2_default`),
        False or None for none, or an :class:`L2Config`."""
        return replace(self, l2=self._cache_choice("l2", l2, L2Config, l2_default))

    def _cache_choice(self, name: str, choice: object, cls: type, default) -> object:
        if choice is True:
            return default(self)
        if choice is False or choice is None:
            return None
        if not isinstance(choice, cls):
            raise ConfigError(f"{name} must be True, False, None or an {cls.__name__}, "
                              f"not {choice!r}")
        return choice

    @property
    def memory_timing(self) -> MemoryConfig:
        """The device-memory timing in force (``ideal`` when ``memory`` is None)."""
        return self.memory if self.memory is not None else memory_settings(self)["ideal"]

    def with_memory(self, memory: str | MemoryConfig | None) -> GpuConfig:
        """This configuration with device-memory timing ``memory`` (a setting's name from
        :func:`memory_settings`, a :class:`MemoryConfig`, or None for ``ideal``)."""
        if isinstance(memory, str):
            settings = memory_settings(self)
            if memory not in settings:
                raise ConfigError(f"unknown memory setting {memory!r}; known: "
                                  f"{', '.join(settings)}")
            memory = None if memory == "ideal" else settings[memory]
        return replace(self, memory=memory)

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
        GpuConfig("small", cores=2, warps_per_core=8, lanes=8, shared_bytes_per_core=16 * KIB,
                  memory_bytes=16 * MIB, mem_latency=8, imem_bytes=16 * KIB),
        GpuConfig("full", cores=4, warps_per_core=8, lanes=32, shared_bytes_per_core=48 * KIB,
                  memory_bytes=64 * MIB, mem_latency=20, imem_bytes=64 * KIB),
    )
}


_REALISTIC = {
    # name: (latency, bytes per cycle, requests in flight). The in-flight bound covers the
    # bandwidth-delay product (latency x bandwidth / line bytes: tiny 25 lines, small 50,
    # full 100), so a stream can reach the peak bandwidth.
    "tiny": (50, 8, 32),
    "small": (100, 16, 64),
    "full": (200, 64, 128),
}


def memory_settings(config: GpuConfig) -> dict[str, MemoryConfig]:
    """The named device-memory settings of ``config``.

    ``ideal``: fixed ``mem_latency``, a line per cycle, a response buffer of latency + 3
    (the memory every figure before docs/memory-system.md was measured with).
    ``vortex``: 24-cycle memory, a line per cycle, 32 in flight (Vortex's RTL-simulation
    memory latency). ``realistic``: DRAM-like latency and a bandwidth cap of half a line per
    cycle: ``small`` 100 cycles and 16 B/cycle, ``full`` 200 and 64, ``tiny`` 50 and 8;
    configurations of a user's own take ``small``'s latency and half a line per cycle."""
    line = 4 * config.lanes
    lat, bw, inflight = _REALISTIC.get(config.name, (100, max(1, line // 2), 64))
    return {
        "ideal": MemoryConfig("ideal", config.mem_latency),
        "vortex": MemoryConfig("vortex", 24, 0, 32),
        "realistic": MemoryConfig("realistic", lat, bw, inflight),
    }


_L1_DEFAULTS = {
    # name: (size, ways, MSHRs, requests in flight). Scaled-down GPU L1s: an SM's L1 data
    # cache holds 32 to 128 KiB for 32-lane warps and 48 to 64 resident warps; these keep
    # about 4 KiB per 8 lanes of 4 warps, so a core's working set of a few rows fits, and
    # enough MSHRs for each warp's loads in flight (docs/memory-system.md). small's MSHRs
    # and reorder buffer cover its share of the bandwidth-delay product at `realistic`
    # (Little's law: 16 B/cycle x ~110 cycles / 32-byte lines = 55 lines for 2 cores, and
    # stores and hits hold entries too); with 8 MSHRs its 2 cores could keep only 16 reads in
    # flight, 5 B/cycle at 100 cycles (real GPUs keep thousands of misses per SM in flight).
    "tiny": (1 * KIB, 2, 4, 16),
    "small": (4 * KIB, 4, 32, 64),
    "full": (16 * KIB, 4, 16, 32),
}

L1_DEFAULT_ON = True
"""The single switch: whether the named configurations are built with their L1 by default
(docs/memory-system.md, "Default.": on since the regression passes with it)."""


def l1_default(config: GpuConfig) -> L1Config:
    """The L1 of ``config``'s size class (:data:`_L1_DEFAULTS`); configurations of a user's own
    take ``small``'s, scaled to their line (128 lines, 4 ways)."""
    if config.name in _L1_DEFAULTS:
        size, ways, mshrs, rob = _L1_DEFAULTS[config.name]
        return L1Config(size, ways, mshrs, rob)
    return L1Config(128 * 4 * config.lanes, 4, 8, 32)


_L2_DEFAULTS = {
    # name: (size, ways, banks, MSHRs per bank, requests in flight per bank). Scaled-down GPU
    # L2s: a real one holds 2 to 50 MiB in 16 to 128 slices for 20 to 140 SMs, about 8 times
    # the SMs' L1s together; these keep that ratio to the cores' L1s, a bank per core or two.
    # small's MSHRs and reorder buffers per bank hold the cores' requests in flight (2 x 64)
    # over its 4 banks with room for an uneven spread: a bank that cannot take a request
    # stops the requests behind it too.
    "tiny": (8 * KIB, 4, 2, 4, 16),
    "small": (32 * KIB, 8, 4, 16, 32),
    "full": (256 * KIB, 8, 8, 16, 32),
}

L2_DEFAULT_ON = True
"""The single switch: whether the named configurations are built with their L2 by default
(docs/memory-system.md, "Default.": on since the regression passes with it)."""


def l2_default(config: GpuConfig) -> L2Config:
    """The L2 of ``config``'s size class (:data:`_L2_DEFAULTS`); configurations of a user's own
    take 256 lines per core in 2 banks of 8 ways."""
    if config.name in _L2_DEFAULTS:
        return L2Config(*_L2_DEFAULTS[config.name])
    lines = 1 << max(4, (256 * config.cores - 1).bit_length())
    return L2Config(lines * 4 * config.lanes, 8, 2, 8, 16)


if L1_DEFAULT_ON:
    CONFIGS = {name: cfg.with_l1(True) for name, cfg in CONFIGS.items()}
if L2_DEFAULT_ON:
    CONFIGS = {name: cfg.with_l2(True) for name, cfg in CONFIGS.items()}


def get_config(config: str | GpuConfig) -> GpuConfig:
    """Look up a configuration by name (or pass a :class:`GpuConfig` through)."""
    if isinstance(config, GpuConfig):
        return config
    try:
        return CONFIGS[config]
    except KeyError:
        raise ConfigError(
            f"unknown configuration {config!r}; known: {', '.join(CONFIGS)}") from None
