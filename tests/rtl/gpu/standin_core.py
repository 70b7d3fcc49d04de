"""A stand-in core for GPU-level tests (tests only, never in rtl/).

It has the real :func:`core_signature` and does just enough to exercise the dispatcher, the
interconnect, the command processor, faults and counters. For each block it:

1. reads the parameter line at ``param_addr`` (line-aligned in these tests): ``dst``, ``v``;
2. if ``v == FAULT_MAGIC`` raises an OUT_OF_RANGE fault (warp 1, lanes 0b101, pc = entry
   pc, instr = ``FAULT_INSTR``); if ``v == HANG_MAGIC`` it never finishes the block;
   if ``v == STUCK_MAGIC`` it faults and claims never to drain;
3. writes ``v + linear block id + imem[entry_pc / 4] + (num_threads << 16)`` to
   ``dst[linear block id]``;
4. retires one instruction with every lane executing, and reports the block done.

The expected memory after a launch is therefore easy to compute in the test.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.memory import Memory
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.signatures import FaultCause, MemKind, block_layout, core_signature

FAULT_MAGIC = 0xDEAD
HANG_MAGIC = 0xBEEF
STUCK_MAGIC = 0xD1E  # fault, then never drain (a memory request that is never answered)
FAULT_INSTR = 0x1234_5678


class _S(enum.Enum, shape=4):
    IDLE = 0
    RD_REQ = 1
    RD_WAIT = 2
    WR_REQ = 3
    WR_WAIT = 4
    DONE = 5
    FAULTED = 6
    HANG = 7
    STUCK = 8


class StandinCore(wiring.Component):
    def __init__(self, cfg: RtlConfig, core_id: int):
        self.cfg = cfg
        self.core_id = core_id
        super().__init__(core_signature(cfg))

    def _request(self, m: Module, state: Signal, wait: _S, tag: int, *fields) -> None:
        """Offer a memory request (``fields`` of its payload, ``tag``); once taken, count it
        and go to ``wait``."""
        req = self.mem.req
        m.d.comb += [req.valid.eq(1), *fields, req.payload.tag.eq(tag)]
        with m.If(req.ready):
            m.d.comb += self.perf.mem_transactions.eq(1)
            m.d.sync += state.eq(wait)

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        lw = cfg.line_words
        line_shift = (cfg.line_bytes - 1).bit_length()
        m.submodules.imem = imem = Memory(shape=32, depth=cfg.imem_words, init=[])
        iw = imem.write_port()
        ir = imem.read_port()
        m.d.comb += [iw.addr.eq(self.imem.addr), iw.data.eq(self.imem.data),
                     iw.en.eq(self.imem.we)]

        state = Signal(_S)
        blk = Signal(block_layout())
        dst = Signal(32)
        v = Signal(32)
        linear = Signal(32)
        m.d.comb += ir.addr.eq(blk.entry_pc[2:])
        m.d.comb += linear.eq(blk.block_id.x + blk.grid.x * (blk.block_id.y
                              + blk.grid.y * blk.block_id.z))

        d = self.dispatch
        m.d.comb += [
            d.ready.eq((state == _S.IDLE) & ~self.halt & (d.payload.num_warps <= cfg.warps)),
            self.busy.eq(state != _S.IDLE),
            self.drained.eq((state != _S.RD_WAIT) & (state != _S.WR_WAIT)
                            & (state != _S.STUCK) & ~self.mem.req.valid),
            self.mem.resp.ready.eq(1),
        ]
        req = self.mem.req
        with m.Switch(state):
            with m.Case(_S.IDLE):
                with m.If(d.valid & d.ready):
                    m.d.sync += [blk.eq(d.payload), state.eq(_S.RD_REQ)]
            with m.Case(_S.RD_REQ):
                with m.If(~self.halt):
                    self._request(m, state, _S.RD_WAIT, 3, req.payload.kind.eq(MemKind.READ),
                                  req.payload.addr.eq(blk.param_addr))
            with m.Case(_S.RD_WAIT):
                with m.If(self.mem.resp.valid):
                    w0 = self.mem.resp.payload.rdata[0]
                    w1 = self.mem.resp.payload.rdata[1]
                    m.d.sync += [dst.eq(w0), v.eq(w1)]
                    with m.If(w1 == FAULT_MAGIC):
                        m.d.sync += state.eq(_S.FAULTED)
                    with m.Elif(w1 == HANG_MAGIC):
                        m.d.sync += state.eq(_S.HANG)
                    with m.Elif(w1 == STUCK_MAGIC):
                        m.d.sync += state.eq(_S.STUCK)
                    with m.Else():
                        m.d.sync += state.eq(_S.WR_REQ)
            with m.Case(_S.WR_REQ):
                with m.If(~self.halt):
                    addr = Signal(32)
                    value = Signal(32)
                    m.d.comb += [addr.eq(dst + (linear << 2)),
                                 value.eq(v + linear + ir.data + (blk.num_threads << 16))]
                    word = addr[2:line_shift] if lw > 1 else Const(0, 1)
                    self._request(m, state, _S.WR_WAIT, 5, req.payload.kind.eq(MemKind.WRITE),
                                  req.payload.addr.eq((addr >> line_shift) << line_shift),
                                  req.payload.wdata.as_value().eq(Cat(*([value] * lw))),
                                  req.payload.be.eq(Const(0xF, 4) << Cat(Const(0, 2), word)))
            with m.Case(_S.WR_WAIT):
                with m.If(self.mem.resp.valid):
                    m.d.sync += state.eq(_S.DONE)
            with m.Case(_S.DONE):
                m.d.comb += [
                    d.block_done.eq(1),
                    self.retire.valid.eq(1),
                    self.retire.exec.eq((1 << cfg.lanes) - 1),
                    self.retire.mask.eq((1 << cfg.lanes) - 1),
                    self.retire.pc.eq(blk.entry_pc),
                    self.retire.block.eq(blk.block_id),
                    self.perf.issued.eq(1),
                ]
                m.d.sync += state.eq(_S.IDLE)
            with m.Case(_S.FAULTED, _S.STUCK):
                r = self.fault.record
                m.d.comb += [
                    self.fault.valid.eq(1),
                    r.cause.eq(FaultCause.OUT_OF_RANGE),
                    r.warp.eq(1),
                    r.lane_mask.eq(0b101),
                    r.pc.eq(blk.entry_pc),
                    r.instr.eq(FAULT_INSTR),
                    r.block.eq(blk.block_id),
                ]
            with m.Case(_S.HANG):
                m.d.comb += self.perf.stall_idle.eq(1)
        with m.If(self.flush):
            m.d.sync += state.eq(_S.IDLE)
        return m
