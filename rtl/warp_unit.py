"""Warp-wide operations of ex1: shuffles and votes.

``shfl.MODE rd, ra, rb``: every executing lane ``l`` computes a source lane from its own
``rb`` (idx: ``rb & (W-1)``, up: ``l - rb``, down: ``l + rb``, xor: ``l ^ rb``); it receives
the source lane's ``ra`` when the source is inside the warp and executing, else its own ``ra``.
``vote.any``/``vote.all`` reduce the predicate over the executing lanes and give the result to
every lane; ``vote.ballot`` gives the mask of executing lanes whose predicate holds.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem

from .isa_consts import fn_enum

ShflMode = fn_enum("ShflMode", Sem.SHUFFLE, __name__)
"""Shuffle mode; value = the ``fn`` code of ``shfl.<mode>``."""
VoteMode = fn_enum("VoteMode", Sem.VOTE, __name__)
"""Vote kind; value = the ``fn`` code of ``vote.<kind>``."""


class WarpUnit(wiring.Component):
    """Parameters
    ----------
    lanes:
        Lanes per warp.
    """

    def __init__(self, lanes: int):
        self.lanes = lanes
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "shfl_mode": In(ShflMode),
            "vote_mode": In(VoteMode),
            "exec": In(lanes),
            "a": In(vec),
            "b": In(vec),
            "p": In(lanes),
            "shfl": Out(vec),
            "vote_pred": Out(lanes),
            "ballot": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        L = self.lanes
        lb = (L - 1).bit_length()
        for l in range(L):
            b = self.b[l]
            # The source lane in lb + 1 bits, and whether it lies inside the warp: only
            # rb's low bits take part in the sums, its high bits (zero for any in-range
            # source but idx's) are one OR beside them, not 33-bit adders in series with
            # the lane choice
            low, high_zero = b[:lb], b[lb:] == 0
            src = Signal(lb + 1, name=f"shfl_src{l}")
            inside = Signal(name=f"shfl_inside{l}")
            # (a compare that always holds, as with a power-of-two warp, is left out: lint
            # flags a constant comparison)
            full = L == 1 << lb  # every lb-bit source lane exists
            top = l == (1 << lb) - 1  # every lb-bit rb is at most l
            with m.Switch(self.shfl_mode):
                with m.Case(ShflMode.IDX):
                    m.d.comb += [src.eq(low), inside.eq(1 if full else low < L)]
                with m.Case(ShflMode.UP):
                    m.d.comb += [src.eq(l - low),
                                 inside.eq(high_zero & (1 if top else low <= l))]
                with m.Case(ShflMode.DOWN):
                    m.d.comb += [src.eq(l + low), inside.eq(high_zero & (l + low < L))]
                with m.Case(ShflMode.XOR):
                    m.d.comb += [src.eq(l ^ low),
                                 inside.eq(high_zero & (1 if full else (l ^ low) < L))]
            val = Signal(32, name=f"shfl_val{l}")
            m.d.comb += val.eq(self.a[l])
            with m.If(inside):
                with m.Switch(src[:lb]):
                    for s in range(L):
                        with m.Case(s):
                            m.d.comb += val.eq(Mux(self.exec[s], self.a[s], self.a[l]))
            m.d.comb += self.shfl[l].eq(val)
        taken = self.exec & self.p
        anyv = taken != 0
        allv = taken == self.exec
        m.d.comb += self.ballot.eq(taken)
        with m.Switch(self.vote_mode):
            with m.Case(VoteMode.ANY):
                m.d.comb += self.vote_pred.eq(Mux(anyv, (1 << L) - 1, 0))
            with m.Case(VoteMode.ALL):
                m.d.comb += self.vote_pred.eq(Mux(allv, (1 << L) - 1, 0))
        return m
