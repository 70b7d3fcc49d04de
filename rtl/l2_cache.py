"""The shared L2 cache between the interconnect and DRAM, banked by line address.

::

    interconnect --up--> bank select (line mod banks) --> bank 0 .. bank B-1
                               |                           (L1Cache, atomics="execute")
                   order FIFO (bank of every request) --> responses up in request order
    bank 0 .. bank B-1 --down--> round-robin (rtl/interconnect.py) --> DRAM port

Every core's traffic and the command processor's meet here, so this is the level where
atomics are performed: each bank is the non-blocking cache of rtl/l1_cache.py built with
``atomics="execute"`` (one piece of code serves both levels). An atomic reads its word from
the cached line (a missing line is fetched first), has the new word built by the L2's one
atomic unit (rtl/atomic_alu.py, what the DRAM model uses without an L2, so the ISA's semantics
are the same, and an FP adder; the banks share it, since only one performs an atomic at a
time), writes it into the line and through to DRAM, and answers with the old word once the
write is acknowledged.

Policy: **write-through, no write-allocate** (docs/memory-system.md says why): DRAM always
holds every acknowledged store, so the host's reads of device memory after a launch (the
harness reads DRAM directly) see the data without a flush, and a ``fence`` needs nothing from
the L2 (it is the one point of coherence below the non-coherent L1s). ``invalidate`` (the command
processor starting to fetch a command, a launch starting) drops every line, because the host
writes DRAM behind the L2's back (data, parameter blocks, command records).

Requests enter through two two-entry skid buffers (rtl/skid_buffer.py), so ``up.req.ready``
is a register and what the banks look up as a request enters the second comes from
registers, and responses leave through another, so ``up.resp`` comes from registers (a cycle
more on every request and every response). The second request buffer's entries keep each
request's tag and MSHR lookup at every bank (its own bank's is the one used), made as the
request enters and brought up to date every cycle after (``L1Cache``'s ``lookahead``): the
bank's decision on the request at its port starts from registers, not from a lookup through
its tags, and is the one a lookup in that cycle would make. Each bank reads the entering
request's tags a cycle ahead (``read_ahead``: at the address the first buffer will hold
next, transparent to that cycle's tag write; on an FPGA a register of that address by the
tag memories, the read after it), and compares them with a register copy of the address
of its own (the first buffer's ``down_copy``).

Banks: line ``n`` lives in bank ``n mod banks``, which sees the address with the bank bits
taken out (so its sets cover the whole of its share of memory); the address is put back
together on the way down. One request enters per cycle; a request waits while its bank cannot
take it (a fill in progress, its reorder buffer or MSHRs full), and so do the requests behind
it: a *bank conflict*. Fills of different banks proceed in parallel. Responses leave in
request order (the memory port's contract): a FIFO holds the bank of every request in flight,
and the response of the bank at its head goes up.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring

from . import reuse
from .atomic_alu import atomic_result
from .fpu import ATOMIC_LATENCY, Fpu, FpuOp
from .interconnect import Interconnect
from .l1_cache import (
    L1Cache,
    atomic_operands,
    cache_signature,
    connect_lookahead,
    lookahead_side_layout,
)
from .ram_fifo import RamFifo
from .skid_buffer import SkidBuffer

__all__ = ["L2Cache"]


class L2Cache(wiring.Component):
    """Shared, banked, non-blocking write-through L2 that executes atomics.

    Parameters
    ----------
    line_words:
        32-bit words per line (the memory port's line).
    size_bytes:
        Total capacity, split evenly over the banks.
    ways, mshrs, rob_depth:
        Of every bank (see :class:`~simtgpu.rtl.l1_cache.L1Cache`).
    banks:
        Banks, a power of two.
    tag_bits:
        Tag width of the memory port (both sides).
    addr_bits:
        The memory's address width (:class:`~simtgpu.rtl.l1_cache.L1Cache`'s; a bank's is
        that less the bank bits, which its addresses do not carry).
    gated:
        The form of the FP adder for ``atom.fadd`` (:class:`~simtgpu.rtl.fpu.Fpu`'s
        ``gated``, from ``RtlConfig.clock_gating``). The banks share one atomic unit (the
        new word's logic and that adder): a bank performs an atomic while the request is at
        its port, not yet accepted, and the L2 presents one request at a time, to one bank,
        so no two banks ever perform an atomic at once.

    Members
    -------
    up: ``In(mem_port_signature(line_words, tag_bits))``
        From the interconnect.
    down: ``Out(mem_port_signature(line_words, tag_bits))``
        To DRAM.
    invalidate: ``In(1)``
        Drop every line (a command fetch or a launch starting).
    hit, miss, merge, mshr_full: ``Out(1)``
        Strobes (of whichever bank): a read served from a line; a line read sent to DRAM (a
        read miss, or the fetch of an atomic's line); a read merged into a pending miss; a
        cycle in which the request at the port waits because its bank's MSHRs are all busy.
    idle: ``Out(1)``
        Nothing in flight.
    """

    FADD_LATENCY = ATOMIC_LATENCY  # of the FP adder the banks share for atom.fadd

    def __init__(self, *, line_words: int = 8, size_bytes: int = 16384, ways: int = 8,
                 banks: int = 2, mshrs: int = 8, rob_depth: int = 16, tag_bits: int = 9,
                 gated: bool = False, addr_bits: int = 32):
        if not (banks > 0 and banks & (banks - 1) == 0):
            raise ValueError(f"L2Cache: banks must be a power of two, not {banks}")
        if size_bytes % banks:
            raise ValueError(f"L2Cache: size_bytes must split over {banks} banks, "
                             f"not {size_bytes}")
        self.line_words = line_words
        self.size_bytes = size_bytes
        self.banks = banks
        self.bank_bits = (banks - 1).bit_length()
        self.tag_bits = tag_bits
        self.bank_args = dict(line_words=line_words, size_bytes=size_bytes // banks, ways=ways,
                              mshrs=mshrs, rob_depth=rob_depth, tag_bits=tag_bits,
                              atomics="execute", fadd_latency=self.FADD_LATENCY,
                              addr_bits=addr_bits - self.bank_bits, lookahead=True,
                              read_ahead=True)
        self.rob_depth = rob_depth
        self.mshrs = mshrs
        self._banks = [L1Cache(**self.bank_args) for _ in range(banks)]  # checks them now
        self._fpu = Fpu(latency=self.FADD_LATENCY, gated=gated, fadd_only=True)  # the banks' adder
        super().__init__(cache_signature(line_words, tag_bits))

    def elaborate(self, platform) -> Module:
        m = Module()
        nb, bb = self.banks, self.bank_bits
        ob = (4 * self.line_words - 1).bit_length()
        banks = self._banks
        key = tuple(sorted(self.bank_args.items()))
        for i, b in enumerate(banks):
            m.submodules[f"bank{i}"] = reuse.shared(b, key)  # one module in Verilog
        # Requests enter through a plain skid buffer, then the one whose entries carry their
        # lookups: what the banks look up as it enters comes from registers, not from the
        # interconnect's choice among its sources (a cycle more on every request); each bank
        # reads a copy of the address of its own (``down_copy``), placed by its tags.
        m.submodules.in_buffer = in_buf = SkidBuffer(self.up.req.payload.shape(), copies=nb,
                                                     copy_of=lambda p: p.addr)
        wiring.connect(m, wiring.flipped(self.up.req), in_buf.up)

        def bank_of(addr):
            return addr[ob:ob + bb] if bb else Const(0, 1)

        def in_bank(addr):
            """The address as its bank sees it: the bank bits taken out."""
            return Cat(addr[:ob], addr[ob + bb:])

        # the request at the banks' ports: the second buffer's first entry; which bank it
        # goes to (``down_to``) and its kind, per bank (``down_key``), come from flip-flops
        m.submodules.buffer = buf = SkidBuffer(
            self.up.req.payload.shape(), lookahead_side_layout(banks[0].ways, self.mshrs, nb),
            routes=nb, route_of=lambda p: bank_of(p.addr), key_of=lambda p: p.kind)
        wiring.connect(m, in_buf.down, buf.up)
        # responses leave through a skid buffer too: from registers, so that the response
        # chosen among the banks (their reorder buffers' heads, the order FIFO's) is not one
        # path with the receiver's handling of it (an L1's fill into its arrays)
        m.submodules.resp_buffer = resp_buf = SkidBuffer(self.up.resp.payload.shape())
        wiring.connect(m, resp_buf.down, wiring.flipped(self.up.resp))
        req, resp = buf.down, resp_buf.up
        bank = Signal(max(1, bb))
        m.d.comb += bank.eq(bank_of(req.payload.addr))
        # every bank looks up the address entering the buffer and keeps its findings of both
        # entries up to date (a bank decides only on requests for it)
        connect_lookahead(m, buf, [b.look for b in banks], in_bank,
                          in_addrs=list(in_buf.down_copy), in_addr_next=in_buf.down_copy_next)

        # the one atomic unit: the request at the port gives the operands, the bank it goes to
        # the old word (see ``gated`` above)
        m.submodules.atom_fpu = fpu = self._fpu
        old = Signal(32)
        pl = req.payload
        old_q, b_q = atomic_operands(m, old, pl.atom_b)  # registered: the banks wait a cycle
        m.d.comb += [old.eq(Array(b.atom.old for b in banks)[bank]),
                     fpu.op.eq(FpuOp.FADD), fpu.en.eq(Cat(*[b.atom.fadd for b in banks]).any()),
                     fpu.a.eq(old_q), fpu.b.eq(b_q)]
        # the new word leaves from one register here, not from the logic across the device
        # into a register in each bank: the banks' own registers held the same value
        new = Signal(32, name="atom_new")
        m.d.sync += new.eq(atomic_result(m, pl.atom_op, old_q, b_q, pl.atom_c, fpu.result))
        m.d.comb += [b.atom.new.eq(new) for b in banks]
        # The bank of every request in flight, in request order. It holds one entry per
        # reorder-buffer entry in use across the banks (both enter as a bank accepts a request
        # and leave as its response goes up), so it has room whenever a bank can accept one:
        # its ``w_rdy`` takes no part in a bank's acceptance (the model asserts the bound).
        # Its head and ``r_rdy`` come from flip-flops (RamFifo's registered read), so the loop
        # from the head through the answering bank's retirement to the pop starts at registers.
        m.submodules.order = order = RamFifo(width=max(1, bb), depth=nb * self.rob_depth,
                                             ram_style="distributed")
        head = Signal(max(1, bb))
        m.d.comb += head.eq(order.r_data)
        for i, b in enumerate(banks):
            p = b.up.req.payload
            m.d.comb += [
                p.eq(req.payload),
                p.addr.eq(in_bank(req.payload.addr)),
                # the kind from a register of the bank's own (zero, a read, where the request
                # goes elsewhere: the bank's valid is low then)
                p.kind.eq(buf.down_key[i]),
                b.up.req.valid.eq(buf.down_to[i]),
                b.up.resp.ready.eq(resp.ready & order.r_rdy & (head == i)),
                b.invalidate.eq(self.invalidate),
            ]
            with m.If(order.r_rdy & (head == i)):
                m.d.comb += [resp.valid.eq(b.up.resp.valid), resp.payload.eq(b.up.resp.payload)]
        m.d.comb += [req.ready.eq(Cat(buf.down_to[i] & b.up.req.ready
                                      for i, b in enumerate(banks)).any()),
                     order.w_data.eq(bank), order.w_en.eq(req.valid & req.ready),
                     order.r_en.eq(resp.valid & resp.ready)]

        # down: the banks' requests onto the one DRAM port, addresses made whole again; the
        # interconnect routes DRAM's answers back by the bank it puts above the tag (the banks
        # route their own answers and ignore the tag below it)
        src_bits = max(1, bb)
        m.submodules.arb = arb = Interconnect(nb, self.line_words, self.tag_bits - src_bits)
        for i, b in enumerate(banks):
            s, d = arb.src[i], b.down
            a = d.req.payload.addr
            m.d.comb += [
                s.req.valid.eq(d.req.valid), d.req.ready.eq(s.req.ready),
                s.req.payload.kind.eq(d.req.payload.kind),
                s.req.payload.addr.eq(Cat(a[:ob], Const(i, bb), a[ob:32 - bb]) if bb else a),
                s.req.payload.wdata.eq(d.req.payload.wdata),
                s.req.payload.be.eq(d.req.payload.be),
                s.req.payload.atom_op.eq(d.req.payload.atom_op),
                s.req.payload.atom_b.eq(d.req.payload.atom_b),
                s.req.payload.atom_c.eq(d.req.payload.atom_c),
                s.req.payload.tag.eq(d.req.payload.tag),
                d.resp.valid.eq(s.resp.valid), d.resp.payload.rdata.eq(s.resp.payload.rdata),
                d.resp.payload.tag.eq(s.resp.payload.tag), s.resp.ready.eq(d.resp.ready),
            ]
        wiring.connect(m, arb.ext, wiring.flipped(self.down))

        m.d.comb += [
            self.hit.eq(Cat(*[b.hit for b in banks]).any()),
            self.miss.eq(Cat(*[b.miss for b in banks]).any()),
            self.merge.eq(Cat(*[b.merge for b in banks]).any()),
            self.mshr_full.eq(Cat(*[b.mshr_full for b in banks]).any()),
            self.idle.eq(Cat(*[b.idle for b in banks]).all() & arb.idle & ~order.r_rdy
                         & in_buf.idle & buf.idle & resp_buf.idle),
        ]
        return m
