"""Predicate file: the predicates ``p0``..``p6`` of every lane of every warp slot.

``rr`` reads a warp's predicates (guards and predicate operands); ``wb`` writes one predicate
of the executing lanes. ``pt`` (index 7) reads as true and is not stored. The scoreboard
keeps a reader from issuing while a write to its predicate is in flight, so the read needs
no bypass.
"""

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import PT

from .layouts import per_warp
from .params import require_positive


class PredicateFile(wiring.Component):
    """``warps`` x ``lanes`` x 7 predicate bits, one register per warp and lane.

    Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp.

    - ``rdata[l]``: the 7 predicates of lane ``l`` of warp ``rwarp`` (bit ``i`` is ``p<i>``),
      combinationally; a write shows from the next cycle.
    - ``we``: predicate ``widx`` of the lanes of ``wwarp`` set in ``wmask`` becomes bit
      ``l`` of ``wdata`` at the clock edge; other predicates and lanes keep their values.
    - ``reset``: every predicate is 0 from the next cycle, but a lane written in the same
      cycle is written as if there were no reset (its other predicates keep their values);
      ``reset_warps``: the same for the warps whose bit is set.
    """

    def __init__(self, warps: int, lanes: int):
        require_positive(warps=warps, lanes=lanes)
        self.warps, self.lanes = warps, lanes
        wb = max(1, (warps - 1).bit_length())
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "rwarp": In(wb),
            "rdata": Out(PT).array(lanes),
            "we": In(1),
            "wwarp": In(wb),
            "widx": In(3),
            "wmask": In(lanes),
            "wdata": In(lanes),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        W, L = self.warps, self.lanes
        preds = per_warp(data.ArrayLayout(PT, L), W, "p")
        with m.Switch(self.rwarp):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += [self.rdata[l].eq(preds[w][l]) for l in range(L)]
        with m.If(self.reset):
            m.d.sync += preds.eq(0)
        for w in range(W):
            with m.If(self.reset_warps[w]):
                m.d.sync += preds[w].eq(0)
        for w in range(W):
            with m.If(self.we & (self.wwarp == w)):
                for l in range(L):
                    with m.If(self.wmask[l]):
                        p = preds[w][l]
                        m.d.sync += p.eq(p & ~(1 << self.widx) | (self.wdata[l] << self.widx))
        return m
