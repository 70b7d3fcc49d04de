"""The RTL backend: the driver's command queue and MMIO host interface on the Verilator model.

``Device(backend="rtl", config="small")`` builds (once, cached under build/verilator/) the
simulation harness of the configuration (``rtlsim/harness.py``: the GPU plus a memory model with
backdoor ports) and drives it through :class:`simtgpu.rtlsim.verilator_runner.RtlSim`, a C++ main
that takes commands over a pipe, so no Python runs per clock cycle. Every register access of
the driver is a real bus transaction of the RTL host interface; device memory is loaded and
read through the memory backdoor (what a DMA engine would do); ``run_until_idle`` clocks the
model until STATUS.BUSY falls (queue drained or faulted). Performance counters and fault
records are the hardware's own registers.

Options (``Device(backend="rtl", config=..., waves="build/run.fst")``):

``waves``
    Write a waveform of everything the model does from start-up on: FST, or VCD for a file
    named ``*.vcd`` (the model is then built with tracing, a separate cached build per
    format; docs/waveforms.md).
``memory``
    Device-memory timing of the DRAM model: a setting's name (``ideal``, the default;
    ``vortex``; ``realistic``) or a :class:`~simtgpu.arch.config.MemoryConfig`
    (docs/memory-system.md). Every setting runs on the same model build.
``l1``
    Each core's L1 data cache: True for the configuration's default
    (:func:`~simtgpu.arch.config.l1_default`), False for none, an
    :class:`~simtgpu.arch.config.L1Config`, or None (the default) for what the configuration
    says. A different cache is a different model build.
``l2``
    The shared L2: True for the configuration's default
    (:func:`~simtgpu.arch.config.l2_default`), False for none, an
    :class:`~simtgpu.arch.config.L2Config`, or None (the default) for what the configuration
    says. A different L2 is a different model build.
``max_cycles``
    Cycles ``run_until_idle`` allows before it gives up (the hardware's own watchdog fault
    normally comes first).
An ISS-only option (``instruction_budget``) is refused with a message: the RTL bounds a launch
by its cycle watchdog.

A retire trace (``launch(trace=...)``, ``simtgpu run --trace``) is read from the hardware's
retire ports: the model logs every sample while the launch runs, and each becomes a line of
docs/trace-format.md, in retire order (``mem`` is null: memory writes are not on the port).

The model of a named configuration is built profile-guided, trained by :func:`train` (see
:mod:`simtgpu.rtlsim.verilator_runner`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simtgpu.arch.command_queue import Mmio
from simtgpu.arch.config import ConfigError, GpuConfig, L1Config, L2Config, MemoryConfig
from simtgpu.errors import SimtgpuError

from .backend import Backend
from .errors import DriverError

if TYPE_CHECKING:
    from simtgpu.rtlsim.verilator_runner import RtlSim

    from .statistics import CounterTimeline

__all__ = ["RtlBackend", "train"]


class RtlBackend(Backend):
    """Device model on the Verilator build of the RTL."""

    name = "rtl"
    per_core_counters = True

    def __init__(self, config: GpuConfig, waves: str | Path | None = None,
                 max_cycles: int = 200_000_000, instruction_budget: int | None = None,
                 sim: RtlSim | None = None, memory: str | MemoryConfig | None = None,
                 l1: bool | L1Config | None = None, l2: bool | L2Config | None = None):
        """``sim``: drive this started model of ``config`` instead of starting one;
        ``memory``: the device-memory setting, ``l1``, ``l2``: the caches (see the module
        docstring)."""
        if instruction_budget is not None:
            raise DriverError("the rtl backend has no instruction budget (--budget): a launch "
                              "is bounded by the hardware's cycle watchdog and max_cycles")
        from simtgpu.rtl.configs import get_rtl_config
        from simtgpu.rtlsim.verilator import VerilatorError
        from simtgpu.rtlsim.verilator_runner import RtlSim

        try:
            if memory is not None:
                config = config.with_memory(memory)
            if l1 is not None:
                config = config.with_l1(l1)
            if l2 is not None:
                config = config.with_l2(l2)
        except ConfigError as e:
            raise DriverError(str(e)) from None
        if sim is not None and sim.cfg.l1 != config.l1_cache:
            raise DriverError(f"the model was built with {sim.cfg.l1}, not {config.l1_cache}")
        if sim is not None and sim.cfg.l2 != config.l2_cache:
            raise DriverError(f"the model was built with {sim.cfg.l2}, not {config.l2_cache}")
        self.config = config
        self.max_cycles = max_cycles
        self.cycles = 0
        self.timeline: CounterTimeline | None = None
        """When set, ``run_until_idle`` stops the clock every ``timeline.interval`` cycles to
        snapshot the performance counters (reads that leave the launch's cycle count as it
        is): the issue rate over time of ``simtgpu run --plot``."""
        self._error = VerilatorError
        from simtgpu.rtlsim.trace_config import wave_format

        wave_path = Path(waves) if waves else None
        fmt = None
        if wave_path is not None:
            try:
                fmt = wave_format(wave_path)
            except SimtgpuError as e:
                raise DriverError(f"--waves: {e}") from None
            # the model's tracer cannot say that it failed to open the file: try it first
            try:
                wave_path.parent.mkdir(parents=True, exist_ok=True)
                with open(wave_path, "ab"):
                    pass
            except OSError as e:
                raise DriverError(f"--waves {wave_path}: cannot write it "
                                  f"({e.strerror or e})") from None
        self._trace: Any = None
        self._retire_file: Path | None = None
        self._imem: dict[int, int] = {}  # word address -> instruction word (for `op`)
        try:
            self.sim = sim or RtlSim(get_rtl_config(config), trace=fmt, trainer=train)
            if sim is not None and memory is not None:
                sim.set_memory_timing(config.memory_timing)
            if wave_path is not None:
                self.sim.trace(wave_path)
        except VerilatorError as e:
            raise DriverError(f"the rtl backend could not start: {e}") from None
        self.waves = wave_path

    def set_trace(self, sink: Any) -> None:
        """Start logging the retire ports for ``sink``; None writes what was logged to the
        previous sink as trace lines and stops."""
        if getattr(self, "_trace", None) is not None:
            self._finish_trace()
        if sink is None:
            return
        from simtgpu.rtlsim.verilator_runner import build_dir

        build_dir().mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="retire-", suffix=".log", dir=build_dir())
        os.close(fd)
        self._retire_file = Path(name)
        self._call(self.sim.retire_log, self._retire_file)
        self._trace = sink

    def _finish_trace(self) -> None:
        from simtgpu.isa.encoding import EncodingError, decode
        from simtgpu.sim.trace import format_line, from_retire_port

        sink, path = self._trace, self._retire_file
        self._trace = self._retire_file = None
        try:
            self._call(self.sim.retire_log, None)
            lanes = self.config.lanes
            seq = 0
            with open(path) as log:
                for text in log:
                    f = [int(x, 16) for x in text.split()]
                    core, rec = f[0], f[2:]
                    port = (*rec[:9], *rec[12:12 + lanes], *rec[9:12])
                    line = from_retire_port(port, lanes)
                    try:
                        op = decode(self._imem.get(line["pc"] // 4, 0)).mnemonic
                    except EncodingError:
                        op = None
                    sink.write(format_line({"seq": seq, "core": core, **line, "op": op}))
                    seq += 1
        finally:
            path.unlink(missing_ok=True)

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except self._error as e:
            raise DriverError(f"rtl backend: {e}") from None

    def mmio_read(self, offset: int) -> int:
        return self._call(self.sim.mmio_read, int(offset))

    def mmio_write(self, offset: int, value: int) -> None:
        self._call(self.sim.mmio_write, int(offset), int(value))

    def read(self, addr: int, n: int) -> bytes:
        return self._call(self.sim.read, addr, n)

    def write(self, addr: int, data: bytes) -> None:
        self._call(self.sim.write, addr, bytes(data))

    def load_code(self, base: int, code: bytes) -> None:
        """Through the IMEM_ADDR/IMEM_DATA registers, as a driver on real hardware does."""
        if base % 4 or len(code) % 4:
            raise ValueError("instruction memory is loaded in whole, aligned words")
        super().load_code(base, code)
        for i in range(0, len(code), 4):
            self._imem[(base + i) // 4] = int.from_bytes(code[i:i + 4], "little")

    def fault_detail(self) -> str:
        # the launch watchdog of the host interface stops a launch, not an instruction: its
        # record names none (FAULT_LANES 0), which the driver's report says
        from simtgpu.isa import FaultCause

        if self.mmio_read(Mmio.FAULT_CAUSE) == FaultCause.WATCHDOG \
                and self.mmio_read(Mmio.FAULT_LANES) == 0:
            return (f"the launch ran longer than the device's watchdog of "
                    f"{self.sim.cfg.watchdog_cycles:,} cycles (RtlConfig.watchdog_cycles); "
                    "no instruction is named")
        return ""

    def run_until_idle(self) -> None:
        left = self.max_cycles
        timeline = self.timeline
        if timeline is not None:
            timeline.snapshot(self)
        while left > 0:
            step = min(left, timeline.interval if timeline is not None else 1_000_000)
            done, n = self._call(self.sim.run, step)
            self.cycles += n
            left -= n
            if timeline is not None:
                timeline.snapshot(self)
            if done:
                return
            if n == 0:
                break
        status = self.mmio_read(Mmio.STATUS)
        raise DriverError(f"rtl backend: the GPU is still busy after {self.max_cycles} cycles "
                          f"(STATUS {status:#x}); the hardware watchdog did not stop it")

    def close(self) -> None:
        if getattr(self, "_trace", None) is not None:
            self._finish_trace()
        sim = getattr(self, "sim", None)
        if sim is not None:
            sim.close()
            self.sim = None


def train(sim: RtlSim) -> None:
    """The trainer of the driver's profile-guided model builds
    (:data:`simtgpu.rtlsim.verilator_runner.Trainer`): the issue-rate kernels of
    :mod:`simtgpu.rtlsim.workload`, results checked, through the driver on ``sim``."""
    from simtgpu.rtlsim.workload import issue_rate

    from .device import Device

    with Device(backend=RtlBackend(sim.cfg.gpu, sim=sim)) as dev:
        issue_rate(dev, sgemm_size=32)
