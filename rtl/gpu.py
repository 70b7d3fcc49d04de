"""The GPU top: cores, block dispatcher, memory interconnect, host interface, perf counters.

::

                 mmio                       +------------------+
    host ------------------------------->   |  host interface  |--imem writes--> every core
                                            |  (regs, command  |--launch-->  dispatcher
                                            |   processor)     |<--faults--  cores
                                            +--------+---------+
                                                     | mem (source N)
    core i --mem--> CoreMemPath i (L1) --> interconnect <+
                                                |
                                                +--> L2 (or a wire) --> external memory port

Each core is built by ``core_factory(cfg, core_id)`` (default :class:`simtgpu.rtl.core.Core`)
and must have :func:`simtgpu.rtl.signatures.core_signature`. The cores' retire ports are
exposed unchanged for verification.

Each core's memory port passes through its :class:`~simtgpu.rtl.mem_path.CoreMemPath`: the L1
data cache of the configuration (none: a wire) and the measurements of that path. The cache
lives here rather than in the core so that the core keeps one memory port whatever the memory
hierarchy below it, and a configuration without L1 is exactly the earlier machine. It is
invalidated when a launch starts and when a core issues a ``fence``; the command processor's
memory source does not go through an L1.

Below the interconnect sits the shared L2 of the configuration (:class:`~simtgpu.rtl.l2_cache.
L2Cache`; none: a wire, exactly the earlier machine), where every source's traffic meets and
atomics are performed. It is write-through, so memory holds every acknowledged store, and it
is invalidated when the command processor starts fetching a command and when a launch starts
(the host writes memory, records included, directly).
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import reuse
from .configs import RtlConfig
from .dispatcher import Dispatcher
from .host_interface import CpState, HostInterface
from .interconnect import Interconnect
from .l2_cache import L2Cache
from .mem_path import CoreMemPath
from .perf_counters import PerfCounters
from .signatures import (
    MemKind,
    core_signature,
    imem_write_signature,
    mem_port_signature,
    mmio_signature,
    retire_signature,
)
from .skid_buffer import SkidBuffer

__all__ = ["CoreFactory", "Gpu", "default_core_factory"]

CoreFactory = Callable[[RtlConfig, int], wiring.Component]


def default_core_factory(cfg: RtlConfig, core_id: int) -> wiring.Component:
    """The project's SIMT core (``rtl/core.py``)."""
    from .core import Core
    return Core(cfg, core_id)


class Gpu(wiring.Component):
    """Multi-core GPU.

    Parameters
    ----------
    cfg:
        Build configuration.
    core_factory:
        Builds core ``i``; defaults to :func:`default_core_factory`.

    Members
    -------
    mmio: ``In(mmio_signature())``
        Host register bus (map: ``arch.command_queue.Mmio``).
    mem: ``Out(mem_port_signature(line_words, ext_tag_bits))``
        External memory port.
    imem_bd: ``In(imem_write_signature(imem_addr_bits))``
        Backdoor instruction-memory writes (simulation only; leave ``we`` low otherwise).
    retire: ``Out(retire_signature(lanes)).array(cores)``
        Retire port of every core.
    busy, fault, idle: ``Out(1)``
        STATUS.BUSY, STATUS.FAULT, and "nothing queued or running, no fault".
    drained: ``Out(1)``
        Every core was drained and the memory path had nothing outstanding in the cycle
        before (registered), and, while the host halts the cores, they were halted then:
        after a fault, what was in flight has retired (a test bench samples the retire ports
        until then).
    """

    def __init__(self, cfg: RtlConfig, core_factory: CoreFactory | None = None):
        self.cfg = cfg
        self.core_factory = core_factory or default_core_factory
        super().__init__({
            "mmio": In(mmio_signature()),
            "mem": Out(mem_port_signature(cfg.line_words, cfg.ext_tag_bits)),
            "imem_bd": In(imem_write_signature(cfg.imem_addr_bits)),
            "retire": Out(retire_signature(cfg.lanes)).array(cfg.cores),
            "busy": Out(1),
            "fault": Out(1),
            "idle": Out(1),
            "drained": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        n = cfg.cores
        cores = []
        for i in range(n):
            core = self.core_factory(cfg, i)
            members = core.signature.members
            for name, member in core_signature(cfg).members.items():
                if name not in members or members[name] != member:
                    raise TypeError(f"core {i} member {name!r} differs from core_signature(cfg)")
            if self.core_factory is default_core_factory:  # one module in exported Verilog
                m.submodules[f"core{i}"] = reuse.shared(
                    core, cfg, {"core_id": (i, max(1, (n - 1).bit_length()))})
            else:
                m.submodules[f"core{i}"] = core
            cores.append(core)

        m.submodules.host = host = HostInterface(cfg)
        m.submodules.dispatcher = disp = Dispatcher(n, n * cfg.warps)
        m.submodules.interconnect = ic = Interconnect(
            cfg.sources, cfg.line_words, cfg.tag_bits)
        m.submodules.perf = perf = PerfCounters(cfg)

        wiring.connect(m, wiring.flipped(self.mmio), host.mmio)
        wiring.connect(m, wiring.flipped(self.imem_bd), host.imem_bd)
        l2 = None
        if cfg.l2 is None:
            wiring.connect(m, ic.ext, wiring.flipped(self.mem))
        else:
            m.submodules.l2 = l2 = L2Cache(
                line_words=cfg.line_words, size_bytes=cfg.l2.size_bytes, ways=cfg.l2.ways,
                banks=cfg.l2.banks, mshrs=cfg.l2.mshrs, rob_depth=cfg.l2.rob_depth,
                tag_bits=cfg.ext_tag_bits, gated=cfg.clock_gating,
                addr_bits=cfg.memory_addr_bits)
            # (requests enter the L2 through its skid buffer: its ``ready`` is a register)
            wiring.connect(m, ic.ext, l2.up)
            wiring.connect(m, l2.down, wiring.flipped(self.mem))
            # The host writes memory directly (data, command records) while the GPU is not
            # looking: drop every line when the command processor starts fetching a command
            # (one cycle) and when a launch starts. The L2 sees it a cycle late, from a
            # flip-flop (the host's state machine is far from the banks' lookups, and the
            # path from one to the other was the slowest of a routed run): a fetch's request
            # offered in that first cycle enters the L2's buffers a cycle later, where its
            # lookup sees the invalidation, and a launch's first access comes many cycles
            # after the launch starts.
            last_state = Signal(CpState)
            m.d.sync += last_state.eq(host.state)
            fetch_starts = Signal()
            m.d.comb += fetch_starts.eq((host.state == CpState.FETCH_REQ)
                                        & (last_state != CpState.FETCH_REQ)
                                        & (last_state != CpState.FETCH_RESP))
            l2_invalidate = Signal()
            m.d.sync += l2_invalidate.eq(host.core_start | fetch_starts)
            m.d.comb += [l2.invalidate.eq(l2_invalidate),
                         perf.l2_perf.l2_hit.eq(l2.hit), perf.l2_perf.l2_miss.eq(l2.miss),
                         perf.l2_perf.l2_merge.eq(l2.merge),
                         perf.l2_perf.l2_mshr_full.eq(l2.mshr_full)]
        sent = self.mem.req.valid & self.mem.req.ready
        m.d.comb += [perf.l2_perf.ext_read.eq(sent & (self.mem.req.payload.kind != MemKind.WRITE)),
                     perf.l2_perf.ext_write.eq(sent & (self.mem.req.payload.kind == MemKind.WRITE))]
        # The host's requests (command fetches, fence writes) reach the interconnect through a
        # skid buffer of their own: its ``valid`` is a register by the arbiter, where the
        # host's state machine is far from it, and its choice went back to the L1's request
        # queue (af4b953's slowest routed path on seed 2). A cycle more per host request.
        m.submodules.host_buffer = host_buf = SkidBuffer(host.mem.req.payload.shape())
        wiring.connect(m, host.mem.req, host_buf.up)
        wiring.connect(m, host_buf.down, ic.src[n].req)
        wiring.connect(m, ic.src[n].resp, host.mem.resp)
        m.d.comb += [
            disp.launch.eq(host.launch),
            disp.start.eq(host.disp_start),
            disp.abort.eq(host.disp_abort),
            host.disp_done.eq(disp.done),
        ]

        paths = []
        for i, core in enumerate(cores):
            path = CoreMemPath(cfg)
            m.submodules[f"mem_path{i}"] = reuse.shared(path, cfg)  # one module in Verilog
            paths.append(path)
            wiring.connect(m, core.mem, path.up)
            wiring.connect(m, path.down, ic.src[i])
            m.d.comb += [path.invalidate.eq(host.core_start | core.fence),
                         perf.mem_perf[i].eq(path.perf)]
        m.d.comb += perf.launch_start.eq(host.core_start)

        # ``drained`` from a flip-flop, a cycle late, and the host's halt and flush to the
        # cores through flip-flops, a cycle late: the host's state machine and its fault
        # registers are far from the cores' pipelines and the caches, and the paths between
        # them were the whole GPU's slowest. The host waits for ``drained`` only once nothing
        # can start: every block finished (DRAIN), or the cores halted (HALT). While the host
        # halts them, ``drained`` counts only from a cycle in which the cores saw the halt
        # (``halted_q``): before, one could still have started an instruction (the host
        # takes ``drained_q`` and ``halted_q`` apart and applies that rule by its own state;
        # ``drained``, the rule applied here, is the GPU's port). The cores
        # see the flush with the halt still on (the host asserts both in FLUSH). A cycle more
        # at the end of each launch, two more at a fault.
        drained_now = Signal()
        drained_q = Signal()
        m.d.comb += drained_now.eq(Cat(*[c.drained for c in cores]).all()
                                   & Cat(*[p.idle for p in paths]).all() & ic.idle
                                   & host_buf.idle
                                   & (l2.idle if l2 is not None else 1))
        halt_q, flush_q, halted_q = Signal(), Signal(), Signal()
        m.d.sync += [drained_q.eq(drained_now), halt_q.eq(host.core_halt),
                     flush_q.eq(host.core_flush), halted_q.eq(halt_q)]
        drained = Signal()
        m.d.comb += [drained.eq(drained_q & (halted_q | ~host.core_halt)),
                     host.drained.eq(drained_q), host.halted.eq(halted_q),
                     self.drained.eq(drained)]

        for i, core in enumerate(cores):
            wiring.connect(m, disp.cores[i], core.dispatch)
            wiring.connect(m, core.fault, host.core_fault[i])
            m.d.comb += [
                core.imem.we.eq(host.imem.we),
                core.imem.addr.eq(host.imem.addr),
                core.imem.data.eq(host.imem.data),
                core.code_base.eq(host.code_base), core.code_end.eq(host.code_end),
                core.start.eq(host.core_start),
                core.halt.eq(halt_q),
                core.flush.eq(flush_q),
                perf.core_perf[i].eq(core.perf),
                perf.retire_valid[i].eq(core.retire.valid),
                perf.retire_exec[i].eq(core.retire.exec),
            ]
            wiring.connect(m, core.retire, wiring.flipped(self.retire[i]))

        # The cycle counter counts a cycle late (as many cycles: a launch's whole busy span,
        # shifted by one, and it still stops before the next MMIO access can read it), from a
        # register of the host's ``busy``: its count enable spans the performance counters,
        # and its net, placed by them, was on the way from the host's state to the STATUS
        # read data (7ad5489, seed 3's slowest path).
        busy_q = Signal()
        m.d.sync += busy_q.eq(host.busy)
        m.d.comb += [
            perf.busy.eq(busy_q),
            perf.active.eq((host.state == CpState.RUN) | (host.state == CpState.DRAIN)),
            perf.command_done.eq(host.command_done),
            perf.reset.eq(host.counters_reset),
            perf.addr.eq(self.mmio.addr),
            perf.re.eq(host.perf_re),
            host.perf_rdata.eq(perf.rdata),
            self.busy.eq(host.busy),
            self.fault.eq(host.fault),
            self.idle.eq(host.idle),
        ]
        return m
