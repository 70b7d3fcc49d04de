"""Performance counters, summed over the cores and read through MMIO.

The counter set and addresses are ``simtgpu.arch.command_queue.PERF_COUNTERS``
(CYCLES_LO/HI at 0x80, then one 32-bit counter per event). Counters run free modulo 2**32 (the
cycle count is 64-bit) and are zeroed by ``reset`` (CONTROL.RESET_COUNTERS); the driver
subtracts a before-launch reading from an after-launch one.

Retired instructions and thread instructions (popcount of the executing lanes) come from the
cores' retire ports; stall reasons, memory transactions, divergences and barriers from the
cores' perf strobes (:func:`simtgpu.rtl.signatures.perf_layout`), counted only while a
kernel is active so that idle time between launches is not charged to ``STALL_IDLE``.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.arch.command_queue import PERF_COUNTERS, Mmio

from .configs import RtlConfig
from .signatures import perf_layout

__all__ = ["PerfCounters"]

# Counter -> the perf strobe it sums (the others are special-cased below).
_STROBE = {
    Mmio.STALL_SCOREBOARD: "stall_scoreboard",
    Mmio.STALL_MEMORY: "stall_memory",
    Mmio.STALL_BARRIER: "stall_barrier",
    Mmio.STALL_STRUCTURAL: "stall_structural",
    Mmio.STALL_IDLE: "stall_idle",
    Mmio.MEM_TRANSACTIONS: "mem_transactions",
    Mmio.DIVERGENCE_EVENTS: "divergence",
    Mmio.BARRIERS: "barriers",
}


class PerfCounters(wiring.Component):
    """GPU-wide performance counters.

    Members
    -------
    core_perf: ``In(perf_layout()).array(cores)``
        Per-cycle event strobes of each core.
    retire_valid: ``In(cores)``; retire_exec: ``In(ArrayLayout(lanes, cores))``
        Retire-port valid and exec mask of each core.
    busy: ``In(1)``
        STATUS.BUSY: counts CYCLES.
    active: ``In(1)``
        A kernel is running: core events are counted.
    command_done: ``In(1)``
        A command completed: counts COMMANDS.
    reset: ``In(1)``
        Zero every counter.
    addr: ``In(8)``; rdata: ``Out(32)``
        Combinational read of the counter at MMIO offset ``addr`` (0 elsewhere).
    """

    def __init__(self, cfg: RtlConfig):
        self.cfg = cfg
        super().__init__({
            "core_perf": In(perf_layout()).array(cfg.cores),
            "retire_valid": In(cfg.cores),
            "retire_exec": In(data.ArrayLayout(cfg.lanes, cfg.cores)),
            "busy": In(1),
            "active": In(1),
            "command_done": In(1),
            "reset": In(1),
            "addr": In(8),
            "rdata": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        cycles = Signal(64)
        counters = {reg: Signal(32, name=reg.name.lower())
                    for reg in PERF_COUNTERS if reg not in (Mmio.CYCLES_LO, Mmio.CYCLES_HI)}

        incr: dict[Mmio, object] = {}
        for reg, field in _STROBE.items():
            incr[reg] = sum(getattr(self.core_perf[i], field) for i in range(cfg.cores)) \
                * self.active
        incr[Mmio.INSTRUCTIONS] = sum(self.retire_valid[i] for i in range(cfg.cores))
        lanes_retired = []
        for i in range(cfg.cores):
            ex = self.retire_exec[i]
            lanes_retired.append(
                sum(ex[lane] for lane in range(cfg.lanes)) * self.retire_valid[i])
        incr[Mmio.THREAD_INSTRUCTIONS] = sum(lanes_retired)
        incr[Mmio.COMMANDS] = self.command_done
        assert set(incr) == set(counters), set(counters) ^ set(incr)

        with m.If(self.reset):
            m.d.sync += cycles.eq(0)
            m.d.sync += [c.eq(0) for c in counters.values()]
        with m.Else():
            with m.If(self.busy):
                m.d.sync += cycles.eq(cycles + 1)
            m.d.sync += [c.eq(c + incr[reg]) for reg, c in counters.items()]

        with m.Switch(self.addr):
            with m.Case(Mmio.CYCLES_LO):
                m.d.comb += self.rdata.eq(cycles[:32])
            with m.Case(Mmio.CYCLES_HI):
                m.d.comb += self.rdata.eq(cycles[32:])
            for reg, c in counters.items():
                with m.Case(reg):
                    m.d.comb += self.rdata.eq(c)
        return m
