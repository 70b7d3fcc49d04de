"""Memory interconnect: N initiator ports onto the GPU's one external memory port.

Requests are arbitrated round-robin (the source granted last has the lowest priority next),
so no core can starve another. A request offered but not taken keeps its grant until it is
taken: a stream's payload must stay put while it is valid, and the L2 performs an atomic over
several cycles on the operands at its port (a grant that moved to another core's request
mid-way mixed the two). The source index is put above the initiator's tag
(``ext tag = source << tag_bits | tag``) and responses are routed back by it. The memory
answers in request order, so every source sees its responses in its own request order.

The request path is combinational (one request per cycle, no added latency); ``outstanding``
counts requests still waiting for their response so that the host interface can tell when
memory traffic has drained (before a fence write or a flush).
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive
from .signatures import mem_port_signature

__all__ = ["Interconnect"]


class Interconnect(wiring.Component):
    """Round-robin N:1 memory interconnect.

    Parameters
    ----------
    sources:
        Number of initiator ports (cores plus the command processor), at least 1.
    line_words:
        Words per memory line.
    tag_bits:
        Tag width of an initiator port.
    max_outstanding:
        Bound of the ``outstanding`` counter (sizes it; the memory model's queue depth is far
        smaller in practice).

    Members
    -------
    src: ``In(mem_port_signature(line_words, tag_bits)).array(sources)``
        Initiator ports.
    ext: ``Out(mem_port_signature(line_words, tag_bits + source_bits))``
        The shared port towards memory.
    outstanding: ``Out(...)``
        Requests sent on ``ext`` whose response has not been accepted yet.
    idle: ``Out(1)``
        No request waiting on any source and nothing outstanding.
    """

    def __init__(self, sources: int, line_words: int, tag_bits: int = 8,
                 max_outstanding: int = 1024):
        require_positive(sources=sources)
        self.sources = sources
        self.tag_bits = tag_bits
        self.source_bits = max(1, (sources - 1).bit_length())
        super().__init__({
            "src": In(mem_port_signature(line_words, tag_bits)).array(sources),
            "ext": Out(mem_port_signature(line_words, tag_bits + self.source_bits)),
            "outstanding": Out(range(max_outstanding + 1)),
            "idle": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.sources

        # Round-robin: grant the first valid source after the one granted last.
        last = Signal(range(max(n, 2)), init=n - 1)
        grant = Signal(range(max(n, 2)))  # round-robin's choice
        chosen = Signal.like(grant)  # the source on the port: grant, or the one waiting
        any_valid = Signal()
        valids = [self.src[i].req.valid for i in range(n)]
        m.d.comb += any_valid.eq(sum(v << i for i, v in enumerate(valids)) != 0)
        with m.Switch(last):
            for prev in range(n):
                with m.Case(prev):
                    # Highest priority to prev+1, lowest to prev: a priority chain written
                    # from lowest to highest so the last assignment wins.
                    order = [(prev + 1 + k) % n for k in range(n)]
                    for i in reversed(order):
                        with m.If(valids[i]):
                            m.d.comb += grant.eq(i)

        ext_req = self.ext.req
        m.d.comb += ext_req.valid.eq(any_valid)
        # the request that waited last cycle keeps the port (while its source still offers it)
        waiting = Signal()
        waiting_src = Signal.like(grant)
        m.d.sync += [waiting.eq(ext_req.valid & ~ext_req.ready), waiting_src.eq(chosen)]
        with m.If(waiting & Array(valids)[waiting_src]):
            m.d.comb += chosen.eq(waiting_src)
        with m.Else():
            m.d.comb += chosen.eq(grant)
        with m.Switch(chosen):
            for i in range(n):
                with m.Case(i):
                    p = self.src[i].req.payload
                    m.d.comb += [
                        ext_req.payload.kind.eq(p.kind),
                        ext_req.payload.addr.eq(p.addr),
                        ext_req.payload.wdata.eq(p.wdata),
                        ext_req.payload.be.eq(p.be),
                        ext_req.payload.atom_op.eq(p.atom_op),
                        ext_req.payload.atom_b.eq(p.atom_b),
                        ext_req.payload.atom_c.eq(p.atom_c),
                        ext_req.payload.tag.eq((i << self.tag_bits) | p.tag),
                        self.src[i].req.ready.eq(ext_req.ready),
                    ]
        req_fire = Signal()
        m.d.comb += req_fire.eq(ext_req.valid & ext_req.ready)
        with m.If(req_fire):
            m.d.sync += last.eq(chosen)

        # Responses: route by the source field of the tag.
        ext_resp = self.ext.resp
        resp_src = Signal(self.source_bits)
        m.d.comb += resp_src.eq(ext_resp.payload.tag >> self.tag_bits)
        for i in range(n):
            r = self.src[i].resp
            m.d.comb += [
                r.payload.rdata.eq(ext_resp.payload.rdata),
                r.payload.tag.eq(ext_resp.payload.tag[:self.tag_bits]),
                r.valid.eq(ext_resp.valid & (resp_src == i)),
            ]
            with m.If(resp_src == i):
                m.d.comb += ext_resp.ready.eq(r.ready)
        resp_fire = Signal()
        m.d.comb += resp_fire.eq(ext_resp.valid & ext_resp.ready)

        with m.If(req_fire & ~resp_fire):
            m.d.sync += self.outstanding.eq(self.outstanding + 1)
        with m.Elif(resp_fire & ~req_fire):
            m.d.sync += self.outstanding.eq(self.outstanding - 1)
        m.d.comb += self.idle.eq(~any_valid & (self.outstanding == 0))
        return m
