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
                                                +--> external memory port (req/resp streams)

Each core is built by ``core_factory(cfg, core_id)`` (default :class:`simtgpu.rtl.core.Core`)
and must have :func:`simtgpu.rtl.signatures.core_signature`. The cores' retire ports are
exposed unchanged for verification.

Each core's memory port passes through its :class:`~simtgpu.rtl.mem_path.CoreMemPath`: the L1
data cache of the configuration (none: a wire) and the measurements of that path. The cache
lives here rather than in the core so that the core keeps one memory port whatever the memory
hierarchy below it, and a configuration without L1 is exactly the earlier machine. It is
invalidated when a launch starts and when a core issues a ``fence``; the command processor's
memory source does not go through an L1.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .configs import RtlConfig
from .dispatcher import Dispatcher
from .host_interface import CpState, HostInterface
from .interconnect import Interconnect
from .mem_path import CoreMemPath
from .perf_counters import PerfCounters
from .signatures import (
    core_signature,
    imem_write_signature,
    mem_port_signature,
    mmio_signature,
    retire_signature,
)

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
            m.submodules[f"core{i}"] = core
            cores.append(core)

        m.submodules.host = host = HostInterface(cfg)
        m.submodules.dispatcher = disp = Dispatcher(n, n * cfg.warps)
        m.submodules.interconnect = ic = Interconnect(
            cfg.sources, cfg.line_words, cfg.tag_bits)
        m.submodules.perf = perf = PerfCounters(cfg)

        wiring.connect(m, wiring.flipped(self.mmio), host.mmio)
        wiring.connect(m, wiring.flipped(self.imem_bd), host.imem_bd)
        wiring.connect(m, ic.ext, wiring.flipped(self.mem))
        wiring.connect(m, host.mem, ic.src[n])
        m.d.comb += [
            disp.launch.eq(host.launch),
            disp.start.eq(host.disp_start),
            disp.abort.eq(host.disp_abort),
            host.disp_done.eq(disp.done),
        ]

        paths = []
        for i, core in enumerate(cores):
            m.submodules[f"mem_path{i}"] = path = CoreMemPath(cfg)
            paths.append(path)
            wiring.connect(m, core.mem, path.up)
            wiring.connect(m, path.down, ic.src[i])
            m.d.comb += [path.invalidate.eq(host.core_start | core.fence),
                         perf.mem_perf[i].eq(path.perf)]
        m.d.comb += perf.launch_start.eq(host.core_start)

        drained = Signal()
        m.d.comb += drained.eq(Cat(*[c.drained for c in cores]).all()
                               & Cat(*[p.idle for p in paths]).all() & ic.idle)
        m.d.comb += host.drained.eq(drained)

        for i, core in enumerate(cores):
            wiring.connect(m, disp.cores[i], core.dispatch)
            wiring.connect(m, core.fault, host.core_fault[i])
            m.d.comb += [
                core.imem.we.eq(host.imem.we),
                core.imem.addr.eq(host.imem.addr),
                core.imem.data.eq(host.imem.data),
                core.code_base.eq(host.code_base), core.code_end.eq(host.code_end),
                core.start.eq(host.core_start),
                core.halt.eq(host.core_halt),
                core.flush.eq(host.core_flush),
                perf.core_perf[i].eq(core.perf),
                perf.retire_valid[i].eq(core.retire.valid),
                perf.retire_exec[i].eq(core.retire.exec),
            ]
            wiring.connect(m, core.retire, wiring.flipped(self.retire[i]))

        m.d.comb += [
            perf.busy.eq(host.busy),
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
