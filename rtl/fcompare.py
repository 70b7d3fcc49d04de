"""FP32 compare of one lane (``fsetp``): combinational, finishes in ex1 like the integer
compares.

Rules of ``simtgpu.sim.numerics.fcmp``: operands are flushed first (a subnormal compares as
a zero), ``-0 == +0``, the ordered conditions ``eq ne lt le gt ge`` are false when either
operand is NaN, ``nan`` is true when either is NaN and ``num`` when neither is. The condition
enum :data:`FCmpCond` takes its members and values from the isa's ``fsetp.*`` function codes,
so the decoder can pass the ``fn`` field straight through.
"""

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem

from .fp_utils import unpack
from .isa_consts import fn_enum

__all__ = ["FCmpCond", "FCompare"]


FCmpCond = fn_enum("FCmpCond", Sem.FCMP, __name__)
"""``fsetp`` condition; member value = the instruction's ``fn`` code."""


class FCompare(wiring.Component):
    """One lane's FP32 compare into a predicate (combinational).

    The unit has no parameters.

    Attributes
    ----------
    cond : In(FCmpCond)
        Condition (the ``fn`` field of ``fsetp``).
    a, b : In(32)
        FP32 operands.
    pred : Out(1)
        Result of ``a cond b``.
    """

    cond: In(FCmpCond)
    a: In(32)
    b: In(32)
    pred: Out(1)

    def elaborate(self, platform) -> Module:
        m = Module()
        a = unpack(m, self.a, "a")
        b = unpack(m, self.b, "b")
        unordered = a.nan | b.nan
        both_zero = a.zero & b.zero
        # the unflushed bits order and match as the flushed ones do whenever at most one
        # operand has a zero exponent (a flushed one is below every other magnitude either
        # way), and both_zero decides the rest: no flush multiplexer in front of the carry
        # chains, which end in ex1's predicate
        mag_a, mag_b = self.a[:31], self.b[:31]
        eq = (self.a == self.b) | both_zero
        lt = Mux(a.sign != b.sign, a.sign, Mux(a.sign, mag_a > mag_b, mag_a < mag_b)) \
            & ~both_zero
        gt = ~lt & ~eq
        ordered = {"EQ": eq, "NE": ~eq, "LT": lt, "LE": lt | eq, "GT": gt, "GE": gt | eq}
        with m.Switch(self.cond):
            for cond in FCmpCond:
                with m.Case(cond):
                    if cond.name == "NAN":
                        m.d.comb += self.pred.eq(unordered)
                    elif cond.name == "NUM":
                        m.d.comb += self.pred.eq(~unordered)
                    else:
                        m.d.comb += self.pred.eq(ordered[cond.name] & ~unordered)
        return m
