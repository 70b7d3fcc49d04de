"""Pipelined 32x32 integer multiplier of one lane (ex1 -> ex2).

Carries the isa's ``Sem.MUL`` instructions (``mul``, ``mulhi``, ``mulhu``, ``muli``); the op
enum :data:`MulOp` is generated from the isa table. The core replicates one unit per lane.

Structure (maps onto 16x16 / 18x18 DSP multipliers):

* stage 1: four 16x16 partial products of the unsigned operands, and for ``mulhi`` the
  signed correction ``a[31]*b + b[31]*a`` (two's complement high word =
  unsigned high word - correction, mod 2**32);
* stage 2: the partial products are summed into the 64-bit product and the low or high
  word is selected (high word minus the correction for ``mulhi``);
* further stages (``latency > 2``) only delay the result, for retiming.

Every register advances only while ``en`` is 1, so the core stalls the unit together with
the pipeline: a result appears on ``result`` exactly ``latency`` enabled cycles after its
operands were presented with ``en=1``, one result per enabled cycle.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem

from .isa_consts import isa_op_enum
from .params import MAX_LATENCY, check_latency
from .stages import delayed_result, gated_domain

__all__ = ["MAX_LATENCY", "MulOp", "Multiplier"]

MulOp = isa_op_enum("MulOp", (Sem.MUL,), __name__)
"""Operation of the :class:`Multiplier`: ``MUL``, ``MULHI``, ``MULHU``, ``MULI``."""


class Multiplier(wiring.Component):
    """Pipelined integer multiplier, one result per enabled cycle.

    Parameters
    ----------
    latency : int
        Enabled cycles from operands to ``result``; 1 (product and sum in one stage) up to
        ``MAX_LATENCY``. The default 2 splits partial products and their sum.
    gated : bool
        The simulation models' form (``RtlConfig.clock_gating``): the operands are registered
        on a gated clock that rises only in a cycle with ``en & valid``
        (:func:`~simtgpu.rtl.stages.gated_domain`), and both stages run after them. False
        (the FPGA form) registers stage 1 under the enable ``en & valid``. Same function,
        same timing; needs ``latency >= 2``.

    Attributes
    ----------
    en : In(1)
        Advance the pipeline this cycle; every stage holds while 0.
    valid : In(1)
        The operation entering this cycle is wanted (default 1): with 0 the pipeline advances
        a bubble whose result is undefined, and the operand stage holds.
    op : In(MulOp)
        ``MUL``/``MULI``: low word; ``MULHI``: high word, signed; ``MULHU``: high word,
        unsigned. ``MULI`` expects the sign-extended immediate on ``b``.
    a, b : In(32)
        Operands.
    result : Out(32)
        The product word of the operation presented ``latency`` enabled cycles earlier.
    """

    def __init__(self, latency: int = 2, gated: bool = False) -> None:
        self.latency = check_latency(self, latency)
        if gated and self.latency < 2:
            raise ValueError("Multiplier: gated needs latency >= 2 (the operands take a cycle)")
        self.gated = gated
        super().__init__({
            "en": In(1),
            "valid": In(1, init=1),
            "op": In(MulOp),
            "a": In(32),
            "b": In(32),
            "result": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        take = Signal()
        m.d.comb += take.eq(self.en & self.valid)
        a, b, op = self.a, self.b, self.op
        if self.gated:  # the operands on a gated clock; both stages after them
            a, b, op = Signal(32, name="a_q"), Signal(32, name="b_q"), Signal(MulOp, name="op_q")
            m.d[gated_domain(m, "mul", take)] += [a.eq(self.a), b.eq(self.b), op.eq(self.op)]

        # Stage 1: partial products and the signed-high correction.
        pp_ll = a[0:16] * b[0:16]
        pp_lh = a[0:16] * b[16:32]
        pp_hl = a[16:32] * b[0:16]
        pp_hh = a[16:32] * b[16:32]
        signed_hi = op == MulOp.MULHI
        corr = Mux(signed_hi & a[31], b, 0) + Mux(signed_hi & b[31], a, 0)
        high = (op == MulOp.MULHI) | (op == MulOp.MULHU)

        s1 = {
            "ll": Signal(32, name="s1_pp_ll"), "lh": Signal(32, name="s1_pp_lh"),
            "hl": Signal(32, name="s1_pp_hl"), "hh": Signal(32, name="s1_pp_hh"),
            "corr": Signal(32, name="s1_corr"), "high": Signal(name="s1_high"),
        }
        s1_in = {"ll": pp_ll, "lh": pp_lh, "hl": pp_hl, "hh": pp_hh, "corr": corr,
                 "high": high}
        if self.latency == 1 or self.gated:  # no stage-1 register: sum in the same cycle
            for k, sig in s1.items():
                m.d.comb += sig.eq(s1_in[k])
        else:
            with m.If(take):
                for k, sig in s1.items():
                    m.d.sync += sig.eq(s1_in[k])

        # Stage 2: sum the partial products, pick the word.
        # Summed as two 32-bit words with a carry: one 64-bit sum of the shifted partial
        # products would be a 65-bit (multi-word) value in the Verilog.
        mid = Signal(49, name="s2_mid")  # (lh + hl) << 16
        lo = Signal(33, name="s2_lo")  # low word and its carry
        hi = Signal(32, name="s2_hi")
        m.d.comb += [mid.eq((s1["lh"] + s1["hl"]) << 16),
                     lo.eq(s1["ll"] + mid[0:32]),
                     hi.eq(s1["hh"] + mid[32:49] + lo[32])]
        word = Mux(s1["high"], (hi - s1["corr"])[0:32], lo[0:32])

        # Output register, preceded by the extra retiming stages when latency > 2.
        m.d.comb += self.result.eq(delayed_result(m, self.en, word, self.latency))
        return m
