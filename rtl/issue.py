"""Issue selection: which warp's buffered head instruction leaves ``is`` this cycle.

A head may issue when none of the registers and predicates it reads or writes is pending in
the scoreboard (:func:`needs`, worked out in ``id`` and kept in the entry), it is not a
``fence`` of a warp with global stores outstanding, its warp is not held at a barrier, and,
for an SFU instruction, the SFU is free.
Among the warps whose head may issue, a :class:`RoundRobin` picks one.

The unit also keeps the per-warp state that only issue reads (``layouts.issue_state``): the
registers waiting for a late write-back, so that a head needing one of them counts as
waiting on memory (``parked``) rather than on the pipeline (``hazard``); the count of
outstanding global stores; and the barrier hold.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import INSTRUCTIONS, NUM_PREDS, PT, Sem
from simtgpu.isa.instructions import Space

from . import layouts
from .isa_consts import BARRIER_OPS, iid
from .isa_consts import Sem as RSem
from .layouts import fields_signature, per_warp, port_view
from .params import require_positive
from .scheduler import RoundRobin


def needs(m: Module, dec: data.View, regs: int, mma_b_regs: int = 4) -> Signal:
    """Scoreboard bits an instruction reads or writes (registers, then predicates); for an
    ``mma`` every register of its groups (A, C and D: 4, B: ``mma_b_regs``).

    Register and predicate masks are built apart from one-bit shifts: a shift of the
    full-width constant would be a 167-bit vector in the Verilog."""
    n = Signal(regs + NUM_PREDS)

    def reg(idx, cond):
        return Mux(cond, 1 << idx, 0)

    def prd(idx, cond):
        return Mux(cond & (idx != PT), 1 << idx, 0)

    mma = dec.sem == RSem.MMA
    b_mask = (1 << mma_b_regs) - 1
    regs_ = Mux(mma, (0xF << dec.rs1) | (b_mask << dec.rs2) | (0xF << dec.rs3)
                | (0xF << dec.rd),
                reg(dec.rs1, dec.rd_rs1) | reg(dec.rs2, dec.rd_rs2)
                | reg(dec.rs3, dec.rd_rs3) | reg(dec.rd, dec.rd_rd | dec.wr_reg))
    prds = (prd(dec.guard, 1) | prd(dec.rs1[:3], dec.rd_ps1)
            | prd(dec.rs2[:3], dec.rd_ps2) | prd(dec.rs3[:3], dec.rd_ps3)
            | prd(dec.rd[:3], dec.wr_pred))
    m.d.comb += n.eq(Cat(regs_[:regs], prds))
    return n


def dests(m: Module, dec: data.View, regs: int) -> Signal:
    """Scoreboard bits an issued instruction sets: its predicate destination, else its
    register destination (an ``mma``'s whole group of four), else none."""
    d = Signal(regs + NUM_PREDS)
    with m.If(dec.wr_pred):
        m.d.comb += d.eq(Cat(Const(0, regs), 1 << dec.rd[:3]))
    with m.Elif(dec.sem == RSem.MMA):
        m.d.comb += d.eq(0xF << dec.rd)
    with m.Elif(dec.wr_reg):
        m.d.comb += d.eq(1 << dec.rd)
    return d


def issue_fields(m: Module, dec: data.View, regs: int, mma_b_regs: int) -> Signal:
    """What issue needs of an instruction besides its control word
    (:data:`~simtgpu.rtl.layouts.ISSUE_FIELDS`): :func:`needs`, :func:`dests` and its kind,
    worked out once, as instruction memory is written."""
    out = Signal(layouts.ISSUE_FIELDS)
    m.d.comb += [out.needs.eq(needs(m, dec, regs, mma_b_regs)), out.dests.eq(dests(m, dec, regs)),
                 out.kind.fence.eq(dec.iid == iid("fence")), out.kind.sfu.eq(dec.sem == RSem.SFU),
                 out.kind.mma.eq(dec.sem == RSem.MMA)]
    return out


def is_long(dec: data.View):
    """The instruction's register result comes back through the late write-back: a global
    load or atomic, ``ldparam``, an SFU instruction or an ``mma``."""
    glob = Cat(dec.iid == iid(i.mnemonic) for i in INSTRUCTIONS
               if i.sem in (Sem.LOAD, Sem.ATOMIC, Sem.PARAM)
               and i.space is not Space.SHARED).any()
    return glob | (dec.sem == RSem.SFU) | (dec.sem == RSem.MMA)


def clear_port(warps: int) -> data.StructLayout:
    """A scoreboard clear port (:class:`Scoreboard`'s ``clear`` elements)."""
    return data.StructLayout({"en": 1, "warp": max(1, (warps - 1).bit_length()), "idx": 5,
                              "pred": 1})


class IssueSelect(wiring.Component):
    """Per-warp issue conditions and the round-robin pick of ``is``.

    Parameters
    ----------
    warps:
        Warp slots.
    regs:
        Registers per thread (the scoreboard holds ``regs`` register bits, then the
        predicates).

    Combinationally, in every cycle:

    - ``issue``: a warp is picked (``warp``, its head ``entry``) and ``enable`` is high;
      ``fault``: that head is illegal or its fetch faulted (it raises the fault instead of
      issuing); ``ok``: it issues (the caller pops it); ``sets[w]``: the scoreboard bits
      (:func:`dests`) warp ``w``'s issue sets, zero for the warps that do not issue;
      ``dests[w]``: those its head would set.
    - per warp with a buffered head (``valid``) that belongs to a running warp
      (``runnable``): ``hazard`` (it needs a pending bit of a short-latency producer),
      ``parked`` (it needs a register a late write-back will write, or is a ``fence``
      with stores outstanding), ``structural`` (it would issue but for the busy SFU or
      matrix unit);
      ``bar_hold``: the warps held at a barrier. ``hazard`` and ``parked`` do not look at
      ``runnable`` or ``bar_hold``. The choice itself reads a head's hazard from
      ``hazard_q`` (:class:`~simtgpu.rtl.hazard_ahead.HazardAhead`: the same bit, worked out
      a cycle ahead into a register), not from ``pending``, and a head's ``kind`` from
      ``head_kind`` (the instruction buffer's register of it), not from ``head``.

    At the clock edge:

    - an issued ``bar`` holds its warp until ``release`` with the warp's bit in
      ``release_warps`` (an issue of bar wins over a release in the same cycle);
    - an issued long-latency register write (:func:`is_long`) marks its register; a clear
      port (``clear``, the scoreboard's) unmarks it;
    - ``store_sent``/``store_acked`` count a warp's outstanding global stores up and down;
    - ``reset`` (a block starts, or flush) drops all of this and makes warp 0 the next
      pick; it wins over everything but a bar issued in the same cycle. ``reset_warps`` does
      the same for the warps whose bit is set (a block arrives beside others) and leaves the
      round-robin pointer alone.
    """

    def __init__(self, warps: int, regs: int = 32):
        require_positive(warps=warps)
        if regs != 32:
            raise ValueError(f"regs must be 32 (the instruction buffer's needs field), not {regs}")
        self.warps, self.regs = warps, regs
        wb = max(1, (warps - 1).bit_length())
        entry = fields_signature(layouts.id_is())
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "head": In(entry).array(warps),
            "head_kind": In(data.ArrayLayout(layouts.ISSUE_KIND, warps)),
            "valid": In(warps),
            "runnable": In(warps),
            "pending": In(data.ArrayLayout(regs + NUM_PREDS, warps)),
            "hazard_q": In(warps),
            "sfu_busy": In(1),
            "mma_busy": In(1),
            "enable": In(1),
            "clear": In(data.ArrayLayout(clear_port(warps), 2)),
            "store_sent": In(1),
            "store_sent_warp": In(wb),
            "store_acked": In(1),
            "store_acked_warp": In(wb),
            "release": In(1),
            "release_warps": In(warps),
            "issue": Out(1),
            "ok": Out(1),
            "fault": Out(1),
            "warp": Out(wb),
            "entry": Out(entry),
            "sets": Out(data.ArrayLayout(regs + NUM_PREDS, warps)),
            "dests": Out(data.ArrayLayout(regs + NUM_PREDS, warps)),
            "hazard": Out(warps),
            "parked": Out(warps),
            "structural": Out(warps),
            "bar_hold": Out(warps),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        W, regs = self.warps, self.regs
        state = per_warp(layouts.issue_state(regs), W)
        # a warp's barrier hold: the register, and a bar it issued in the last cycle
        bar_hold_q, bar_went = Signal(W), Signal(W)
        bar_hold = Signal(W)
        m.d.comb += [bar_hold.eq(bar_hold_q | bar_went), self.bar_hold.eq(bar_hold)]
        eligible = Signal(W)
        # a warp's stores outstanding (``stores != 0``), kept in a register beside the count:
        # the compare was in front of the issue stage's choice
        stores_out = Signal(W)
        heads = [port_view(self.head[w], layouts.id_is()) for w in range(W)]
        long_now = [Signal(regs, name=f"w{w}_long_now") for w in range(W)]
        for w in range(W):
            h = heads[w]
            has = self.valid[w]
            kind = self.head_kind[w]  # h.kind, from the buffer's register
            is_fence = kind.fence
            haz_bits = h.needs[:regs + NUM_PREDS] & self.pending[w]
            # the hazard is on a register a long-latency instruction will write
            on_long = (haz_bits[:regs] & long_now[w]) != 0
            fence_wait = is_fence & stores_out[w]
            park = on_long | fence_wait
            busy_unit = (kind.sfu & self.sfu_busy) | (kind.mma & self.mma_busy)
            go = ~bar_hold[w] & self.runnable[w]
            # the choice takes the hazard from the register (HazardAhead), equal to
            # ``haz_bits != 0`` (a head parked on a long-latency register has a hazard too);
            # so do the stall reasons: worked out here (the head's read, its bits against the
            # pending ones, the OR of 40) they were 10 levels from a register into the
            # classifier's (de2181d's estimate)
            haz_q = self.hazard_q[w]
            m.d.comb += [self.hazard[w].eq(has & haz_q & ~park), self.parked[w].eq(has & park),
                         self.structural[w].eq(has & busy_unit & ~haz_q & ~park & go),
                         eligible[w].eq(has & ~self.hazard_q[w] & ~fence_wait & ~busy_unit
                                        & go)]

        m.submodules.rr = rr = RoundRobin(W)
        m.d.comb += rr.request.eq(eligible)
        issue = rr.found & self.enable
        issued = port_view(self.entry, layouts.id_is())
        with m.Switch(rr.grant):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += issued.eq(heads[w])
        # each head's fault beside its hazards, so that the pick only selects it
        bad = [heads[w].dec.illegal | heads[w].pc_fault for w in range(W)]
        fault = issue & Cat((rr.grant == w) & bad[w] for w in range(W)).any()
        ok = issue & ~fault
        m.d.comb += [self.issue.eq(issue), self.fault.eq(fault), self.ok.eq(ok),
                     self.warp.eq(rr.grant),
                     rr.advance.eq(issue), rr.restart.eq(self.reset)]

        # What follows the pick is per warp: each head's scoreboard bits, long-latency mark
        # and barrier test are worked out beside the hazard checks, and the pick only gates
        # them, rather than being followed by the decoding of the picked head's register.
        # As the scoreboard's set: the long-latency mark of an issue is registered and ORed
        # into the warp's marks in the next cycle (``long_now``), which show what they did.
        # The pick, late in the cycle, reaches one flip-flop per warp (``w<w>_long_went``,
        # ``bar_went``): the head's marks are registered whether it issues or not.
        for w in range(W):
            h = heads[w].dec
            picked = issue & (rr.grant == w) & ~bad[w]  # warp w issues
            m.d.comb += [self.dests[w].eq(heads[w].dests),
                         self.sets[w].eq(Mux(picked, self.dests[w], 0))]
            long_bits = Signal(regs, name=f"w{w}_long_bits_q")
            long_went = Signal(name=f"w{w}_long_went")
            m.d.sync += [long_bits.eq(Mux(~is_long(h), 0, Mux(h.sem == RSem.MMA, 0xF << h.rd,
                                                             Mux(h.wr_reg, 1 << h.rd, 0)))),
                         long_went.eq(picked & ~self.reset & ~self.reset_warps[w])]
            m.d.comb += long_now[w].eq(state[w].long | Mux(long_went, long_bits, 0))
            # a bar issued holds its warp from the next cycle (``bar_went``) until a release
            # or reset after that; a bar issued in a cycle of release or reset still holds
            m.d.sync += bar_went[w].eq(picked & Cat(h.iid == iid(n) for n in BARRIER_OPS).any())
            with m.If((self.release & self.release_warps[w]) | self.reset | self.reset_warps[w]):
                m.d.sync += bar_hold_q[w].eq(0)
            with m.Else():
                m.d.sync += bar_hold_q[w].eq(bar_hold[w])

            clr = [Mux(c.en & ~c.pred & (c.warp == w), 1 << c.idx, 0) for c in self.clear]
            clr_bits = Signal(regs, name=f"w{w}_long_clr")
            m.d.comb += clr_bits.eq(clr[0] | clr[1])
            m.d.sync += state[w].long.eq(long_now[w] & ~clr_bits)

            inc = self.store_sent & (self.store_sent_warp == w)
            dec_ = self.store_acked & (self.store_acked_warp == w)
            stores = state[w].stores
            # stores + inc - dec != 0, with the compares on the register and the late sent
            # and acknowledged strobes choosing last (the count never wraps: the LSU's
            # transaction FIFO bounds a core's outstanding stores far below 256)
            m.d.sync += [stores.eq(stores + inc - dec_),
                         stores_out[w].eq(Mux(inc == dec_, stores != 0,
                                              Mux(inc, 1, stores != 1)))]
            with m.If(self.reset | self.reset_warps[w]):
                m.d.sync += [state[w].long.eq(0), state[w].stores.eq(0), stores_out[w].eq(0)]
        return m
