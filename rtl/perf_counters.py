"""Performance counters, GPU-wide and per core, read through MMIO.

The counter set and addresses are ``simtgpu.arch.command_queue.PERF_COUNTERS``
(CYCLES_LO/HI at 0x80, then one 32-bit GPU-wide counter per event) and, per core, the
:class:`~simtgpu.arch.command_queue.CoreCounter` window of that core
(:func:`~simtgpu.arch.command_queue.core_counter_offset`). Counters run free modulo 2**32 (the
cycle count is 64-bit) and are zeroed by ``reset`` (CONTROL.RESET_COUNTERS); the driver
subtracts a before-launch reading from an after-launch one. A GPU-wide counter is kept in its
own register (it counts exactly what the per-core ones of its name count, summed), so reading
it costs no adder over the cores.

The read is registered: ``rdata`` holds the counter at ``addr`` in the cycle after ``re`` and
0 in every other cycle, so the host interface ORs it into its own read data. The decode is
one ``Switch`` over the address (no array index over the cores), cheap to evaluate.

Retired instructions and thread instructions (popcount of the executing lanes) come from the
cores' retire ports; stall reasons, memory transactions, divergences, barriers and the
resident warps and blocks (summed every cycle: occupancy) from the cores' perf strobes
(:func:`simtgpu.rtl.signatures.perf_layout`), counted only while a
kernel is active so that idle time between launches is not charged to ``STALL_IDLE``. The
memory-path counters (L1, DRAM bytes, loads and their latency) come from each core's
:class:`~simtgpu.rtl.mem_path.CoreMemPath` (:func:`~simtgpu.rtl.signatures.mem_perf_layout`).
``LOAD_LATENCY_MAX`` is a maximum (``MAX_COUNTERS``): zeroed at ``launch_start`` as well as by
``reset``, and the GPU-wide one is the largest of the cores'.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.arch.command_queue import (
    MAX_COUNTER_CORES,
    MAX_COUNTERS,
    MMIO_ADDR_BITS,
    PERF_COUNTERS,
    CoreCounter,
    Mmio,
    core_counter_offset,
)

from .configs import RtlConfig
from .signatures import l2_perf_layout, mem_perf_layout, perf_layout

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
    Mmio.RESIDENT_WARPS: "resident_warps",
    Mmio.RESIDENT_BLOCKS: "resident_blocks",
}
# Counter -> the memory-path strobe it sums.
_MEM_STROBE = {
    Mmio.L1_HITS: "l1_hit",
    Mmio.L1_MISSES: "l1_miss",
    Mmio.L1_MERGES: "l1_merge",
    Mmio.L1_MSHR_FULL: "l1_mshr_full",
    Mmio.LOADS: "load",
}
# Counter -> the strobe of the shared level (L2, external port) it counts.
_L2_STROBE = {
    Mmio.L2_HITS: "l2_hit",
    Mmio.L2_MISSES: "l2_miss",
    Mmio.L2_MERGES: "l2_merge",
    Mmio.L2_MSHR_FULL: "l2_mshr_full",
}


class PerfCounters(wiring.Component):
    """GPU-wide performance counters.

    Members
    -------
    core_perf: ``In(perf_layout()).array(cores)``
        Per-cycle event strobes of each core.
    mem_perf: ``In(mem_perf_layout()).array(cores)``
        Per-cycle events of each core's memory path.
    l2_perf: ``In(l2_perf_layout())``
        Per-cycle events of the shared L2 and the external memory port.
    launch_start: ``In(1)``
        A launch starts: zero the maximum counters.
    retire_valid: ``In(cores)``; retire_exec: ``In(ArrayLayout(lanes, cores))``
        Retire-port valid and exec mask of each core (counted a cycle later).
    busy: ``In(1)``
        STATUS.BUSY (the GPU registers it: a cycle late): counts CYCLES.
    active: ``In(1)``
        A kernel is running: events are counted (each with the ``active`` of its cycle: the
        strobes are registered, in the core's perf port or here, and counted a cycle later).
    command_done: ``In(1)``
        A command completed: counts COMMANDS.
    reset: ``In(1)``
        Zero every counter.
    addr: ``In(MMIO_ADDR_BITS)``; re: ``In(1)``; rdata: ``Out(32)``
        A read of MMIO offset ``addr`` when ``re`` is high: ``rdata`` holds the counter the
        cycle after (0 for an offset that names no counter, and 0 in cycles after no read).
    """

    def __init__(self, cfg: RtlConfig):
        if cfg.cores > MAX_COUNTER_CORES:
            raise ValueError(f"{cfg.cores} cores: the MMIO map has counter windows for at most "
                             f"{MAX_COUNTER_CORES}")
        self.cfg = cfg
        super().__init__({
            "core_perf": In(perf_layout()).array(cfg.cores),
            "mem_perf": In(mem_perf_layout()).array(cfg.cores),
            "l2_perf": In(l2_perf_layout()),
            "launch_start": In(1),
            "retire_valid": In(cfg.cores),
            "retire_exec": In(data.ArrayLayout(cfg.lanes, cfg.cores)),
            "busy": In(1),
            "active": In(1),
            "command_done": In(1),
            "reset": In(1),
            "addr": In(MMIO_ADDR_BITS),
            "re": In(1),
            "rdata": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        cycles = Signal(64)
        # With one core, a GPU-wide counter counts exactly what the core's counter of its name
        # counts (the same increments, zeroed together): it has no register of its own and
        # reads the core's.
        per_core = [{c: Signal(32, name=f"core{i}_{c.name.lower()}") for c in CoreCounter}
                    for i in range(cfg.cores)]
        aliased = {c.total: per_core[0][c] for c in CoreCounter} if cfg.cores == 1 else {}
        counters = {reg: Signal(32, name=reg.name.lower()) for reg in PERF_COUNTERS
                    if reg not in (Mmio.CYCLES_LO, Mmio.CYCLES_HI) and reg not in aliased}

        # each core's increments per counter, then the GPU-wide ones as their sums
        core_incr: list[dict[CoreCounter, object]] = []
        # a core's perf port is registered (each strobe tells of the cycle before), so it is
        # counted with the cycle before's ``active``; the memory path's and the L2's strobes
        # are registered here, for the same reason: the caches work out a hit or a miss late
        # in the cycle (tags, MSHRs), and the counters' adders would follow in that cycle
        active_q = Signal()
        m.d.sync += active_q.eq(self.active)
        mem_q = [Signal(mem_perf_layout(), name=f"mem_perf{i}_q") for i in range(cfg.cores)]
        l2_q = Signal(l2_perf_layout(), name="l2_perf_q")
        m.d.sync += [q.eq(p) for q, p in zip(mem_q, self.mem_perf, strict=True)]
        m.d.sync += l2_q.eq(self.l2_perf)
        for i in range(cfg.cores):
            inc: dict[CoreCounter, object] = {
                CoreCounter[reg.name]: Mux(active_q, getattr(self.core_perf[i], field), 0)
                for reg, field in _STROBE.items()}
            mp = mem_q[i]
            inc.update({CoreCounter[reg.name]: getattr(mp, field) & active_q
                        for reg, field in _MEM_STROBE.items()})
            line = cfg.line_bytes
            inc[CoreCounter.DRAM_READ_BYTES] = Mux(mp.dram_read & active_q, line, 0)
            inc[CoreCounter.DRAM_WRITE_BYTES] = Mux(mp.dram_write & active_q, line, 0)
            inc[CoreCounter.LOAD_LATENCY_SUM] = Mux(mp.load & active_q, mp.load_latency, 0)
            # a maximum: the core's latency when it is a new one (see below), never summed
            inc[CoreCounter.LOAD_LATENCY_MAX] = Mux(mp.load & active_q, mp.load_latency, 0)
            # the retire port, registered too: its valid and exec mask come late from the
            # write-back (a deferred write's), and the lane count's adder and the counter's
            # carry chain followed them in one cycle (7ad5489's netlist, the estimate's
            # second worst)
            valid_q = Signal(name=f"retire_valid{i}_q")
            ex = Signal(cfg.lanes, name=f"retire_exec{i}_q")
            m.d.sync += [valid_q.eq(self.retire_valid[i]), ex.eq(self.retire_exec[i])]
            inc[CoreCounter.INSTRUCTIONS] = valid_q
            inc[CoreCounter.THREAD_INSTRUCTIONS] = \
                sum(ex[lane] for lane in range(cfg.lanes)) * valid_q
            assert set(inc) == set(CoreCounter), set(inc) ^ set(CoreCounter)
            core_incr.append(inc)
        incr: dict[Mmio, object] = {
            c.total: sum(inc[c] for inc in core_incr) for c in CoreCounter
            if c.total not in MAX_COUNTERS}
        for c in CoreCounter:  # the largest of the cores' candidates
            if c.total in MAX_COUNTERS:
                best = core_incr[0][c]
                for inc in core_incr[1:]:
                    best = Mux(inc[c] > best, inc[c], best)
                incr[c.total] = best
        incr[Mmio.COMMANDS] = self.command_done
        lp = l2_q
        incr.update({reg: getattr(lp, field) & active_q for reg, field in _L2_STROBE.items()})
        incr[Mmio.EXT_READ_BYTES] = Mux(lp.ext_read & active_q, cfg.line_bytes, 0)
        incr[Mmio.EXT_WRITE_BYTES] = Mux(lp.ext_write & active_q, cfg.line_bytes, 0)
        assert set(incr) == set(counters) | set(aliased), set(counters) ^ set(incr)

        with m.If(self.reset):
            m.d.sync += cycles.eq(0)
            m.d.sync += [c.eq(0) for c in counters.values()]
            m.d.sync += [c.eq(0) for regs in per_core for c in regs.values()]
        with m.Else():
            with m.If(self.busy):
                m.d.sync += cycles.eq(cycles + 1)
            m.d.sync += [c.eq(c + incr[reg]) for reg, c in counters.items()
                         if reg not in MAX_COUNTERS]
            for regs, inc in zip(per_core, core_incr, strict=True):
                m.d.sync += [c.eq(c + inc[name]) for name, c in regs.items()
                             if name.total not in MAX_COUNTERS]
            maxima = [(counters[reg], incr[reg]) for reg in MAX_COUNTERS if reg in counters]
            maxima += [(regs[name], inc[name])
                       for regs, inc in zip(per_core, core_incr, strict=True)
                       for name in regs if name.total in MAX_COUNTERS]
            for c, candidate in maxima:
                with m.If(self.launch_start):
                    m.d.sync += c.eq(0)
                with m.Elif(candidate > c):
                    m.d.sync += c.eq(candidate)

        m.d.sync += self.rdata.eq(0)
        with m.If(self.re):
            with m.Switch(self.addr):
                with m.Case(Mmio.CYCLES_LO):
                    m.d.sync += self.rdata.eq(cycles[:32])
                with m.Case(Mmio.CYCLES_HI):
                    m.d.sync += self.rdata.eq(cycles[32:])
                for reg, c in {**counters, **aliased}.items():
                    with m.Case(reg):
                        m.d.sync += self.rdata.eq(c)
                for i, regs in enumerate(per_core):
                    for name, c in regs.items():
                        with m.Case(core_counter_offset(i, name)):
                            m.d.sync += self.rdata.eq(c)
        return m
