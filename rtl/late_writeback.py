"""Late write-back: who uses the register file's one write port and the retire port.

Four sources write registers: the ``wb`` stage, the LSU's late write-back stream (global
loads and atomics, ``ldparam``), the SFU's result after its last pass and the matrix unit's
destination registers, one per cycle. ``wb`` always wins; a late write-back takes a cycle in
which ``wb`` is empty, the LSU's before the SFU's before the matrix unit's.
The same choice drives the retire port and the scoreboard's clear (``clear``; the scoreboard's
first port belongs to ``wb``). ``clears`` gives that clear per source, at most one enabled, so
that the scoreboard can decode each source's register from its flip-flops beside the choice
rather than after it.

Issue stops for a waiting late write-back only when no bubble is already on its way to
``wb``: bubbles are never squeezed out of the pipeline, so one between ``is`` and ``mem``
reaches ``wb`` in a few cycles (and ``mem`` holding makes one at ``wb``).
"""

import operator
from functools import reduce

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .issue import clear_port
from .lsu import lwb_layout
from .matrix_unit import matrix_result_signature
from .params import require_positive
from .sfu_sequencer import sfu_result_signature
from .signatures import dim3_layout, retire_signature


def wb_signature(warps: int, lanes: int) -> wiring.Signature:
    """What ``wb`` offers (from the writer's side): its instruction and the values it
    writes. ``deferred``: a global load or SFU instruction whose values come later."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({
        "valid": Out(1), "warp": Out(wb), "pc": Out(32), "active": Out(lanes),
        "exec": Out(lanes), "deferred": Out(1), "wr_reg": Out(1), "wr_pred": Out(1),
        "rd": Out(5), "values": Out(32).array(lanes), "presult": Out(lanes),
    })


def reg_write_signature(warps: int, lanes: int) -> wiring.Signature:
    """A register-file write (from the writer's side): lanes ``we`` of register ``rd`` of
    ``warp`` take ``data``."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({"we": Out(lanes), "warp": Out(wb), "rd": Out(5),
                             "data": Out(data.ArrayLayout(32, lanes))})


def _or_enabled(ports, field: str):
    """``field`` of the one enabled port of ``ports`` (zero when none is)."""
    return reduce(operator.or_, [Mux(p.en, getattr(p, field), 0) for p in ports])


class LateWriteback(wiring.Component):
    """Write-port, retire-port and scoreboard-clear arbitration of ``wb``.

    Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp.

    All combinational, each cycle, first match:

    1. ``wb.valid`` and not ``wb.deferred``: ``wb`` retires, and writes ``wb.exec`` lanes of
       ``wb.rd`` if ``wb.wr_reg``.
    2. ``lwb.valid`` with ``wb`` empty (``lwb.ready = ~wb.valid``): the LSU's late
       write-back is taken: it writes (if ``lwb.p.wr``), clears its scoreboard bit through
       ``clear`` and retires.
    3. ``sfu.valid`` with ``wb`` empty and no late write-back: ``sfu_take``; the SFU result
       writes, clears and retires (unless ``sfu.stale``).
    4. ``mma.valid`` with none of the above: ``mma_take``; the register writes (not ``r0``)
       and clears its bit; the last of the ``mma`` (``mma.retire``) retires it.

    A write-back of ``wb`` with ``deferred`` set retires nothing but still takes the port
    (its values come later). ``wait``: a late write-back waits and ``bubble_coming`` is low,
    so ``is`` must issue nothing this cycle. ``retire.block`` is ``block``. ``clears``: the
    LSU's, the SFU's and the matrix unit's clear, each enabled only when its source is taken
    (``clear`` is the one enabled, or none: its ``warp`` and ``idx`` are zero then).
    """

    def __init__(self, warps: int, lanes: int):
        require_positive(warps=warps)
        self.warps, self.lanes = warps, lanes
        super().__init__({
            "wb": In(wb_signature(warps, lanes)),
            "lwb": In(stream.Signature(lwb_layout(warps, lanes))),
            "sfu": In(sfu_result_signature(warps, lanes)),
            "sfu_take": Out(1),
            "mma": In(matrix_result_signature(warps, lanes)),
            "mma_take": Out(1),
            "bubble_coming": In(1),
            "wait": Out(1),
            "block": In(dim3_layout()),
            "rf": Out(reg_write_signature(warps, lanes)),
            "clear": Out(clear_port(warps)),
            "clears": Out(data.ArrayLayout(clear_port(warps), 3)),
            "retire": Out(retire_signature(lanes)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        z, lwb, sfu, rf, rt = self.wb, self.lwb, self.sfu, self.rf, self.retire
        z_values, sfu_values = Cat(*z.values), Cat(*sfu.values)
        lwb_take = lwb.valid & lwb.ready
        sfu_take = sfu.valid & ~z.valid & ~lwb.valid
        mx = self.mma
        mma_take = mx.valid & ~z.valid & ~lwb.valid & ~sfu.valid
        m.d.comb += [lwb.ready.eq(~z.valid), self.sfu_take.eq(sfu_take),
                     self.mma_take.eq(mma_take),
                     self.wait.eq((lwb.valid | sfu.valid | mx.valid) & ~self.bubble_coming)]

        with m.If(z.valid & z.wr_reg & ~z.deferred):
            m.d.comb += [rf.we.eq(z.exec), rf.warp.eq(z.warp), rf.rd.eq(z.rd),
                         rf.data.eq(z_values)]
        with m.Elif(lwb_take):
            m.d.comb += [rf.we.eq(Mux(lwb.p.wr, lwb.p.exec, 0)), rf.warp.eq(lwb.p.warp),
                         rf.rd.eq(lwb.p.rd), rf.data.eq(lwb.p.values)]
        with m.Elif(sfu_take):
            m.d.comb += [rf.we.eq(Mux(sfu.wr, sfu.exec, 0)), rf.warp.eq(sfu.warp),
                         rf.rd.eq(sfu.rd), rf.data.eq(sfu_values)]
        with m.Elif(mma_take):
            m.d.comb += [rf.we.eq(Mux(mx.rd != 0, mx.exec, 0)), rf.warp.eq(mx.warp),
                         rf.rd.eq(mx.rd), rf.data.eq(Cat(*mx.values))]

        # the clears' enables (a gate or two from the sources' registers) kept as nets, so
        # that the scoreboard's path from them (into HazardAhead's register) is not folded
        # into the write port's choice, which fans out to every lane's write data and the
        # retire port
        clear_en = Signal(3, name="clear_en", attrs={"keep": 1})
        m.d.comb += clear_en.eq(Cat(lwb_take & lwb.p.wr, sfu_take & sfu.wr, mma_take))
        for port, (en, warp, rd) in zip(self.clears, (
                (clear_en[0], lwb.p.warp, lwb.p.rd), (clear_en[1], sfu.warp, sfu.rd),
                (clear_en[2], mx.warp, mx.rd)), strict=True):
            m.d.comb += [port.en.eq(en), port.warp.eq(warp), port.idx.eq(rd), port.pred.eq(0)]
        # ``clear``: the one of ``clears`` enabled (at most one is), ORed rather than chosen
        # again by the take order above
        m.d.comb += [self.clear.en.eq(Cat(p.en for p in self.clears).any()),
                     self.clear.warp.eq(_or_enabled(self.clears, "warp")),
                     self.clear.idx.eq(_or_enabled(self.clears, "idx")),
                     self.clear.pred.eq(0)]

        with m.If(z.valid & ~z.deferred):
            m.d.comb += [rt.valid.eq(1), rt.warp.eq(z.warp), rt.pc.eq(z.pc),
                         rt.mask.eq(z.active), rt.exec.eq(z.exec),
                         rt.rd_valid.eq(z.wr_reg), rt.rd.eq(z.rd), rt.values.eq(z_values),
                         rt.pd_valid.eq(z.wr_pred), rt.pd.eq(z.rd[:3]),
                         rt.pvalues.eq(z.presult)]
        with m.Elif(lwb_take):
            # every late write-back is older than any fault of its warp (younger accesses
            # never reach the LSU once the fault is raised), so it retires, as on the ISS
            m.d.comb += [rt.valid.eq(1), rt.warp.eq(lwb.p.warp), rt.pc.eq(lwb.p.pc),
                         rt.mask.eq(lwb.p.active), rt.exec.eq(lwb.p.exec),
                         rt.rd_valid.eq(lwb.p.wr), rt.rd.eq(lwb.p.rd),
                         rt.values.eq(lwb.p.values)]
        with m.Elif(sfu_take):
            m.d.comb += [rt.valid.eq(~sfu.stale), rt.warp.eq(sfu.warp), rt.pc.eq(sfu.pc),
                         rt.mask.eq(sfu.active), rt.exec.eq(sfu.exec),
                         rt.rd_valid.eq(sfu.wr), rt.rd.eq(sfu.rd), rt.values.eq(sfu_values)]
        with m.Elif(mma_take):
            m.d.comb += [rt.valid.eq(mx.retire), rt.warp.eq(mx.warp), rt.pc.eq(mx.pc),
                         rt.mask.eq(mx.active), rt.exec.eq(mx.exec),
                         rt.rd_valid.eq(mx.retire_rd != 0), rt.rd.eq(mx.retire_rd),
                         rt.values.eq(Cat(*mx.values))]
        m.d.comb += rt.block.eq(self.block)
        return m
