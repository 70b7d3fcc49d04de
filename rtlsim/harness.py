"""Simulation harness: the GPU and the memory model in one design.

Everything a kernel run needs lives inside the simulated design (device memory, command queue,
instruction memories, counters), so a testbench only loads memory and instruction memory
through backdoor ports, programs the MMIO registers, rings the doorbell and then waits on
``done``; no Python runs per cycle. The same top is used by the Amaranth simulator (tests),
by the C++ Verilator runner (:mod:`simtgpu.rtlsim.verilator_runner`) and by cocotb benches.

Ports (Verilog names in brackets; the top module is ``harness``):

* ``mmio`` [``mmio__addr``, ``mmio__wdata``, ``mmio__we``, ``mmio__re``, ``mmio__rdata``,
  ``mmio__ready``]: host register bus, see :func:`simtgpu.rtl.signatures.mmio_signature`.
* ``mem_bd`` [``mem_bd__addr`` (line index), ``mem_bd__wdata``, ``mem_bd__we``,
  ``mem_bd__rdata``]: one device-memory line per cycle, read data one cycle after the address.
* ``imem_bd`` [``imem_bd__addr`` (word index), ``imem_bd__data``, ``imem_bd__we``]: one
  instruction word per cycle into every core (and the host's shadow copy).
* ``mem_timing`` [``mem_timing__we``, ``mem_timing__latency``,
  ``mem_timing__cycles_per_line``, ``mem_timing__max_inflight``]: reprograms the DRAM model's
  timing (:func:`simtgpu.rtlsim.memory_model.timing_signature`); leave ``we`` low to keep the
  configuration's own setting.
* ``done``: the command queue is empty and idle, or a fault stopped it. ``fault``, ``busy``,
  ``drained`` (nothing in flight in the cores and the memory path).
* ``retire__<i>__*``: retire port of core ``i``.
* ``clk``, ``rst``: the clock, and the synchronous reset (hold it for at least two cycles).

Verilog builds register the reset (``registered_reset``): a top-level input that feeds
combinational logic makes Verilator evaluate that logic again on every ``eval()`` call, and
Amaranth's synchronous reset feeds the next-state logic of every register. Through a
flip-flop the reset is internal state, so each clock cycle evaluates the design once; the
design sees the reset one cycle late, for as long as it is held.
"""

from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.gpu import CoreFactory, Gpu

from .memory_model import MemoryModel, backdoor_signature, timing_signature

__all__ = ["SimHarness"]


class SimHarness(wiring.Component):
    """GPU plus simulation memory with backdoors.

    Parameters
    ----------
    cfg:
        Build configuration; the memory model holds ``cfg.sim_memory_bytes``.
    core_factory:
        Passed to :class:`~simtgpu.rtl.gpu.Gpu`.
    storage:
        Memory-model storage: ``"amaranth"`` for the Amaranth simulator (the array is then
        ``harness.memory.mem.data``), ``"verilog"`` for Verilog builds (see rtlsim/sim_ram.py).
    registered_reset:
        Give the design ``clk`` and ``rst`` ports and its own ``sync`` domain, whose reset is
        ``rst`` delayed by a flip-flop (for Verilog builds, see above). Without it the design
        uses the ``sync`` domain of whoever instantiates it (the Amaranth simulator's).
    """

    def __init__(self, cfg: RtlConfig, core_factory: CoreFactory | None = None,
                 storage: str = "amaranth", registered_reset: bool = False):
        self.cfg = cfg
        self.registered_reset = registered_reset
        clock = {"clk": In(1), "rst": In(1)} if registered_reset else {}
        self.gpu = Gpu(cfg, core_factory)
        self.memory = MemoryModel(cfg, storage=storage)
        gpu = self.gpu.signature.members
        super().__init__({
            "mmio": gpu["mmio"],
            "mem_bd": In(backdoor_signature(cfg.line_words, cfg.sim_memory_lines)),
            "mem_timing": In(timing_signature(self.memory.queue_depth)),
            **{name: gpu[name] for name in ("imem_bd", "retire")},
            "done": Out(1),
            **{name: gpu[name] for name in ("busy", "fault", "drained")},
            **clock,
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        if self.registered_reset:
            m.domains.sync = ClockDomain("sync")
            m.domains.reset_q = ClockDomain("reset_q", reset_less=True)
            rst_q = Signal(init=1)
            m.d.comb += [ClockSignal("sync").eq(self.clk), ClockSignal("reset_q").eq(self.clk),
                         ResetSignal("sync").eq(rst_q)]
            m.d.reset_q += rst_q.eq(self.rst)
        m.submodules.gpu = gpu = self.gpu
        m.submodules.memory = mem = self.memory
        wiring.connect(m, gpu.mem, mem.bus)
        wiring.connect(m, wiring.flipped(self.mmio), gpu.mmio)
        wiring.connect(m, wiring.flipped(self.mem_bd), mem.bd)
        wiring.connect(m, wiring.flipped(self.mem_timing), mem.timing)
        wiring.connect(m, wiring.flipped(self.imem_bd), gpu.imem_bd)
        for i in range(self.cfg.cores):
            wiring.connect(m, gpu.retire[i], wiring.flipped(self.retire[i]))
        m.d.comb += [
            self.done.eq(~gpu.busy),
            self.busy.eq(gpu.busy),
            self.fault.eq(gpu.fault),
            self.drained.eq(gpu.drained),
        ]
        return m
