"""A core's path to memory: its L1 data cache (or none) and the measurements of that path.

::

    core (LSU) --up--> skid buffer --> [ L1Cache (rtl/l1_cache.py) | wire ] --down--> interconnect
                                     ^                                         |
                load latency: accept +-> response                              +-- DRAM traffic

It sits in the GPU (rtl/gpu.py) between each core's memory port and the interconnect, with the
port's contract on both sides, so the core does not know whether it has a cache. Requests
enter a two-entry skid buffer (``up.req.ready`` is a register); with an L1 the buffer's entries
carry each request's lookup in the cache (``L1Cache``'s ``lookahead``), so the cache decides
on the request at its port from registers. With no L1 (``L1Config.size_bytes`` 0, or
``GpuConfig.l1`` None) the path is the buffer alone.

``invalidate`` (a launch starting, or a ``fence`` issued by the core) clears the cache: L1s
are not coherent, so this is what makes the host's writes before a launch, and another
core's stores before a fence, visible (docs/memory-system.md, "Memory ordering").

``perf`` (:func:`simtgpu.rtl.signatures.mem_perf_layout`) feeds the performance counters: the
cache's strobes, the requests sent down, and each load's latency, measured from the request
leaving the buffer (taken by the cache, or by the interconnect) to its response. Responses
come back in request order, so a FIFO of acceptance times (one per request in flight, the
latest a cycle in a register before it is written) is enough; it holds as many entries as
the LSU can have transactions in flight (``cfg.lsu_depth``), so it never fills before the
LSU stops sending, and is a measurement only: it never holds a request.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .configs import RtlConfig
from .l1_cache import L1Cache, connect_lookahead, lookahead_side_layout
from .signatures import LATENCY_BITS, MemKind, mem_perf_layout, mem_port_signature
from .skid_buffer import SkidBuffer

__all__ = ["CoreMemPath"]


class CoreMemPath(wiring.Component):
    """One core's L1 (per ``cfg.l1``) and the counters' events of its memory path.

    Members
    -------
    up: ``In(mem_port_signature(line_words, tag_bits))``
        From the core.
    down: ``Out(mem_port_signature(line_words, tag_bits))``
        To the interconnect.
    invalidate: ``In(1)``
        Clear the L1 (launch start, fence). Registered here, so the cache is cleared one
        cycle later (which keeps the core's issue logic out of the cache's ready path): a load
        that follows a fence in its warp reaches the cache five cycles after the fence issues
        at the earliest (rr, ex1, ex2, mem, this path's request buffer), by when the lines are
        gone.
    perf: ``Out(mem_perf_layout())``
        Per-cycle events for the performance counters.
    idle: ``Out(1)``
        Nothing in flight inside the path.
    """

    def __init__(self, cfg: RtlConfig):
        self.cfg = cfg
        l1 = cfg.l1
        # the L1's parameters (``L1Cache(**l1_args)``; a bench's model reads them too)
        self.l1_args = None if l1 is None else dict(
            line_words=cfg.line_words, size_bytes=l1.size_bytes, ways=l1.ways,
            mshrs=l1.mshrs, rob_depth=l1.rob_depth, tag_bits=cfg.tag_bits,
            addr_bits=cfg.memory_addr_bits, lookahead=True)
        super().__init__({
            "up": In(mem_port_signature(cfg.line_words, cfg.tag_bits)),
            "down": Out(mem_port_signature(cfg.line_words, cfg.tag_bits)),
            "invalidate": In(1),
            "perf": Out(mem_perf_layout()),
            "idle": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        l1 = cfg.l1
        p = self.perf
        # The core's requests enter a two-entry skid buffer, so the LSU's hold is a register
        # whatever is behind it. With an L1 its entries carry their lookups in the cache, made
        # as a request enters and kept up to date (``L1Cache``'s ``lookahead``, as the L2's
        # banks): the cache decides on the request at its port from registers.
        payload = self.up.req.payload.shape()
        if l1 is None:
            m.submodules.buffer = buf = SkidBuffer(payload)
            wiring.connect(m, wiring.flipped(self.up.req), buf.up)
            wiring.connect(m, buf.down, wiring.flipped(self.down.req))
            wiring.connect(m, wiring.flipped(self.down.resp), wiring.flipped(self.up.resp))
            m.d.comb += self.idle.eq(buf.idle)
        else:
            m.submodules.l1 = cache = L1Cache(**self.l1_args)
            m.submodules.buffer = buf = SkidBuffer(payload,
                                                   lookahead_side_layout(l1.ways, l1.mshrs))
            wiring.connect(m, wiring.flipped(self.up.req), buf.up)
            wiring.connect(m, buf.down, cache.up.req)
            wiring.connect(m, cache.up.resp, wiring.flipped(self.up.resp))
            connect_lookahead(m, buf, [cache.look])
            wiring.connect(m, cache.down, wiring.flipped(self.down))
            invalidate = Signal()
            m.d.sync += invalidate.eq(self.invalidate)
            m.d.comb += [cache.invalidate.eq(invalidate), self.idle.eq(cache.idle & buf.idle),
                         p.l1_hit.eq(cache.hit), p.l1_miss.eq(cache.miss),
                         p.l1_merge.eq(cache.merge), p.l1_mshr_full.eq(cache.mshr_full)]

        sent = self.down.req.valid & self.down.req.ready
        kind = self.down.req.payload.kind
        m.d.comb += [p.dram_read.eq(sent & (kind != MemKind.WRITE)),
                     p.dram_write.eq(sent & (kind == MemKind.WRITE))]

        # load latency: acceptance time of every request in flight, in request order. The
        # acceptance is written a cycle late, from a register (``acc``): as it happens it is
        # the cache's decision, and its net to the queue's level was a routed run's slowest
        # path (15318c0, seed 2). A response can come the cycle after its acceptance, with
        # the queue empty and the acceptance still in the register: it is read from there
        # (and not written). The register holds one of the requests in flight, so the queue,
        # of as many entries as the LSU has transactions, still never fills.
        now = Signal(LATENCY_BITS)
        m.d.sync += now.eq(now + 1)
        entry = data.StructLayout({"read": 1, "time": LATENCY_BITS})
        m.submodules.times = times = SyncFIFO(width=entry.size, depth=cfg.lsu_depth)
        acc = Signal(entry)
        acc_valid = Signal()
        m.d.sync += [acc.read.eq(buf.down.payload.kind == MemKind.READ), acc.time.eq(now),
                     acc_valid.eq(buf.down.valid & buf.down.ready)]
        up = self.up
        answered = Signal()
        from_acc = Signal()  # the answer's entry is the register's (the queue is empty)
        r = Signal(entry)
        m.d.comb += [
            answered.eq(up.resp.valid & up.resp.ready),
            from_acc.eq(~times.r_rdy),
            times.w_data.eq(acc), times.w_en.eq(acc_valid & ~(answered & from_acc)),
            r.eq(Mux(from_acc, acc, times.r_data)),
            times.r_en.eq(answered & ~from_acc),
            p.load.eq(answered & (times.r_rdy | acc_valid) & r.read),
            p.load_latency.eq(now - r.time),
        ]
        return m
