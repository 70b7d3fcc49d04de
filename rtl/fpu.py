"""Pipelined FP32 unit of one lane (ex1 -> ex2): add, sub, mul, fma, min/max, abs/neg and the
int <-> float conversions.

Bit-exact with ``simtgpu.sim.numerics``: round to nearest even, subnormal inputs read as
zero of the same sign, subnormal results flushed to zero of the same sign, every NaN result
the canonical ``0x7fffffff``. The op enum :data:`FpuOp` is generated from the isa table
(``Sem.FP`` and ``Sem.CVT``); the compares (``fsetp``) are in ``fcompare.py`` because they
finish in ex1.

One fused datapath carries add, sub, mul and fma, so all four round exactly once through
the same adder, normaliser and rounder::

    fadd a, b    = a * 1.0 + b          fmul a, b    = a * b + (-0)
    fsub a, b    = a * 1.0 + (-b)       ffma a, b, c = a * b + c

(``-0`` is the additive identity that keeps the sign of a zero product.) ``cvt.i2f``/
``cvt.u2f`` reuse the normaliser and rounder: the integer's magnitude enters as the sum.

Stage 1 (align): unpack with FTZ, 24x24 significand product, exponent difference, shift
the addend right into a 75-bit window (bit 0 collects the sticky OR of everything shifted
below it), detect NaN/inf results; the ops that need no rounding (min, max, abs, neg,
f2i, f2u) finish here.
Stage 2 (add/round): add or subtract product and aligned addend, leading-zero count,
normalise, round to nearest even, flush a subnormal result, overflow to infinity, pack.

Window of stage 1/2 (bit ``k >= 1`` weighs ``2**(e0 + k - 1)``)::

    74 ........ 51 50 49 48 ........... 1  0
    [ addend C   ] 0  0  [ product P    ]  sticky    (addend before its right shift)

The addend is shifted right by ``50 - d`` where ``d`` is how far its LSB lies above the
product's. When ``d > 50`` (or the product is zero) the addend stays at the top and the
window's base follows it: the product, then at least three bits below the addend's LSB,
only contributes its guard/sticky information, which the two empty bits preserve.
"""

from typing import NamedTuple

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem

from .fp_utils import CANONICAL_NAN, FP_NEG_ZERO, FP_ONE, lzc, order_less, unpack
from .isa_consts import isa_op_enum
from .params import MAX_LATENCY, check_latency
from .stages import delayed_result, gated_domain

__all__ = ["MAX_LATENCY", "FpuOp", "Fpu"]

FpuOp = isa_op_enum("FpuOp", (Sem.FP, Sem.CVT), __name__)
"""Operation of the :class:`Fpu`: ``FADD`` ... ``FNEG``, ``CVT_I2F`` ... ``CVT_F2U``."""

WINDOW = 75  # sticky bit + 74-bit window (product 48 + 2 empty + addend 24)
ADDEND_LSB = 51  # position of the unshifted addend's LSB in the window
MAX_SHIFT = 80  # any larger shift moves the whole addend into the sticky bit

ALIGN_ADD_LAYOUT = data.StructLayout({
    "x": 49,  # product (or integer magnitude) at window bits [1, 49)
    "y": WINDOW,  # aligned addend, bit 0 = sticky
    "e0": signed(12),  # exponent of window bit 1
    "sign_x": 1,
    "sign_y": 1,
    "eff_sub": 1,  # signs differ: subtract magnitudes
    "nan": 1,  # result is the canonical NaN
    "inf": 1,  # result is an infinity of sign inf_sign
    "inf_sign": 1,
    "bypass": 1,  # result already final in stage 1 (bypass_value)
    "bypass_value": 32,
})
"""Registers between stage 1 (align) and stage 2 (add/round)."""


class _Operands(NamedTuple):
    """What stage 1 reads: the ports themselves, or their registered copies (``gated``)."""

    op: Value
    a: Value
    b: Value
    c: Value


class Fpu(wiring.Component):
    """Pipelined FP32 unit, one operation per enabled cycle.

    Parameters
    ----------
    latency : int
        Enabled cycles from operands to ``result``: 2 (align | add/round, the default) up to
        ``MAX_LATENCY`` (extra cycles delay the result for retiming); 1 puts both halves in
        one cycle.
    gated : bool
        The simulation models' form (``RtlConfig.clock_gating``): the operands are registered
        on a gated clock that rises only in a cycle with ``en & valid``, and both halves run
        after those registers, so a Verilator model evaluates the datapath only in the cycles
        that start an operation (a kernel's FP instructions are a few in ten). False (the
        FPGA form) registers stage 1's output under the enable ``en & valid`` instead, which
        keeps align and add/round in separate cycles. Same function, same timing; needs
        ``latency >= 2``.

    Attributes
    ----------
    en : In(1)
        Advance the pipeline this cycle; every stage holds while 0.
    valid : In(1)
        The operation entering this cycle is wanted (default 1): with 0 the pipeline advances
        a bubble whose result is undefined, and the operand stage holds.
    op : In(FpuOp)
        Operation.
    a, b, c : In(32)
        Operands (``c`` only for ``FFMA``; the unary ops and conversions read ``a``).
    result : Out(32)
        Result bits of the operation presented ``latency`` enabled cycles earlier.
    """

    def __init__(self, latency: int = 2, gated: bool = False) -> None:
        self.latency = check_latency(self, latency)
        if gated and self.latency < 2:
            raise ValueError("Fpu: gated needs latency >= 2 (the operands take a cycle)")
        self.gated = gated
        super().__init__({
            "en": In(1),
            "valid": In(1, init=1),
            "op": In(FpuOp),
            "a": In(32),
            "b": In(32),
            "c": In(32),
            "result": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        take = Signal()
        m.d.comb += take.eq(self.en & self.valid)
        # Each half is its own submodule so that a simulator re-evaluates only the half
        # whose inputs changed.
        m.submodules.align = m_align = Module()
        m.submodules.add_round = m_round = Module()
        if self.gated:
            # The operands, registered on a gated clock; both halves run between them and
            # the result register.
            fpu = gated_domain(m, "fpu", take)
            ops = _Operands(Signal(FpuOp, name="op_q"), Signal(32, name="a_q"),
                            Signal(32, name="b_q"), Signal(32, name="c_q"))
            m.d[fpu] += [ops.op.eq(self.op), ops.a.eq(self.a), ops.b.eq(self.b),
                        ops.c.eq(self.c)]
            s1 = self._align(m_align, ops)
        else:  # stage 1's output registered, under the enable
            s1 = Signal(ALIGN_ADD_LAYOUT, name="s1")
            align = self._align(m_align, _Operands(self.op, self.a, self.b, self.c))
            if self.latency == 1:
                m.d.comb += s1.eq(align)
            else:
                with m.If(take):
                    m.d.sync += s1.eq(align)
        word = self._add_round(m_round, s1)

        m.d.comb += self.result.eq(delayed_result(m, self.en, word, self.latency))
        return m

    # -----------------------------------------------------------------------------------
    def _align(self, m: Module, ops: _Operands) -> Signal:
        """Stage 1: operand selection, product, alignment, specials, unrounded ops."""
        op = ops.op
        out = Signal(ALIGN_ADD_LAYOUT, name="s1_next")

        # Fused-datapath operands x * y + z.
        y_in = Signal(32, name="y_in")
        z_in = Signal(32, name="z_in")
        with m.Switch(op):
            with m.Case(FpuOp.FADD):
                m.d.comb += [y_in.eq(FP_ONE), z_in.eq(ops.b)]
            with m.Case(FpuOp.FSUB):
                m.d.comb += [y_in.eq(FP_ONE), z_in.eq(ops.b ^ FP_NEG_ZERO)]
            with m.Case(FpuOp.FMUL):
                m.d.comb += [y_in.eq(ops.b), z_in.eq(FP_NEG_ZERO)]
            with m.Default():
                m.d.comb += [y_in.eq(ops.b), z_in.eq(ops.c)]
        m.submodules.unpack = m_unpack = Module()
        x = unpack(m_unpack, ops.a, "x")
        y = unpack(m_unpack, y_in, "y")
        z = unpack(m_unpack, z_in, "z")

        sign_p = x.sign ^ y.sign
        prod_zero = x.zero | y.zero
        product = Signal(48, name="product")
        m.d.comb += product.eq(x.mant * y.mant)

        # d: exponent of the addend's LSB minus that of the product's LSB.
        d = Signal(signed(12), name="align_d")
        e_prod = Signal(signed(12), name="e_prod")
        m.d.comb += [
            d.eq(z.exp - x.exp - y.exp + 150),
            e_prod.eq(x.exp + y.exp - 300),
        ]
        addend_top = prod_zero | (~z.zero & (d > ADDEND_LSB - 1))
        shift = Signal(range(MAX_SHIFT + 1), name="align_shift")
        e0 = Signal(signed(12), name="align_e0")
        with m.If(addend_top):
            m.d.comb += [shift.eq(0), e0.eq(z.exp - 150 - (ADDEND_LSB - 1))]
        with m.Else():
            raw = (ADDEND_LSB - 1) - d  # negative only for a zero addend
            m.d.comb += [
                shift.eq(Mux(raw > MAX_SHIFT, MAX_SHIFT, Mux(raw < 0, 0, raw))),
                e0.eq(e_prod),
            ]
        # aligned = Cat(sticky, addend shifted into the 74 window bits above it): a right
        # shift written stage by stage (one shift expression would be a 155-bit vector in
        # the Verilog), each stage ORing what it drops into the sticky bit
        base = ADDEND_LSB - 1  # the unshifted significand's LSB, counted above the sticky bit
        v = Cat(Const(0, base), z.mant)
        sticky = Const(0, 1)
        for i in range(len(shift)):
            step = 1 << i
            nv = Signal(len(v), name=f"align_sh{i}")
            ns = Signal(name=f"align_st{i}")
            m.d.comb += [nv.eq(Mux(shift[i], v >> step, v)),
                         ns.eq(sticky | (shift[i] & (v[:min(step, len(v))] != 0)))]
            v, sticky = nv, ns
        aligned = Cat(sticky, v)

        any_inf_p = x.inf | y.inf
        fused_nan = (x.nan | y.nan | z.nan | (x.inf & y.zero) | (x.zero & y.inf)
                     | (any_inf_p & z.inf & (sign_p != z.sign)))

        # int -> float: the magnitude enters the window as the product would.
        int_neg = (op == FpuOp.CVT_I2F) & ops.a[31]
        int_mag = Mux(int_neg, -ops.a, ops.a)[0:32]
        m.submodules.unrounded = m_unrounded = Module()
        unrounded = self._unrounded(m_unrounded, x, ops)

        with m.Switch(op):
            with m.Case(FpuOp.CVT_I2F, FpuOp.CVT_U2F):
                m.d.comb += [
                    out.x.eq(int_mag << 1), out.y.eq(0), out.e0.eq(0),
                    out.sign_x.eq(int_neg), out.sign_y.eq(int_neg), out.eff_sub.eq(0),
                ]
            with m.Case(FpuOp.FADD, FpuOp.FSUB, FpuOp.FMUL, FpuOp.FFMA):
                m.d.comb += [
                    out.x.eq(product << 1), out.y.eq(aligned), out.e0.eq(e0),
                    out.sign_x.eq(sign_p), out.sign_y.eq(z.sign),
                    out.eff_sub.eq(sign_p != z.sign),
                    out.nan.eq(fused_nan),
                    out.inf.eq(any_inf_p | z.inf),
                    out.inf_sign.eq(Mux(any_inf_p, sign_p, z.sign)),
                ]
            with m.Default():
                m.d.comb += [out.bypass.eq(1), out.bypass_value.eq(unrounded)]
        return out

    def _unrounded(self, m: Module, x, ops: _Operands) -> Signal:
        """min, max, abs, neg and float -> int: exact, so they finish in stage 1."""
        op = ops.op
        b = unpack(m, ops.b, "mm_b")
        value = Signal(32, name="unrounded")

        a_less = order_less(x, b)
        as_int = self._float_to_int(m, x, ops.op)
        with m.Switch(op):
            with m.Case(FpuOp.FMIN, FpuOp.FMAX):
                pick_a = Mux(op == FpuOp.FMIN, a_less, ~a_less)
                with m.If(x.nan & b.nan):
                    m.d.comb += value.eq(CANONICAL_NAN)
                with m.Elif(x.nan | b.nan):
                    m.d.comb += value.eq(Mux(x.nan, b.bits, x.bits))
                with m.Else():
                    m.d.comb += value.eq(Mux(pick_a, x.bits, b.bits))
            with m.Case(FpuOp.FABS, FpuOp.FNEG):
                flipped = Mux(op == FpuOp.FABS, Cat(x.bits[0:31], Const(0, 1)),
                              x.bits ^ FP_NEG_ZERO)
                m.d.comb += value.eq(Mux(x.nan, CANONICAL_NAN, flipped))
            with m.Case(FpuOp.CVT_F2I, FpuOp.CVT_F2U):
                m.d.comb += value.eq(as_int)
            with m.Default():  # ops of the fused datapath: value unused
                m.d.comb += value.eq(0)
        return value

    def _float_to_int(self, m: Module, x, op: Value) -> Signal:
        """Truncate toward zero, saturate to the integer range, NaN -> 0."""
        to_signed = op == FpuOp.CVT_F2I
        value = Signal(32, name="f2i_value")
        # |x| = mant * 2**(exp - 150); for exp in [127, 158] shift mant << 8 right by 158-exp.
        mag = Signal(32, name="f2i_mag")
        m.d.comb += mag.eq(Cat(Const(0, 8), x.mant) >> (158 - x.exp)[0:5])
        below_one = x.exp < 127
        with m.If(x.nan | below_one):
            m.d.comb += value.eq(0)
        with m.Elif(to_signed):
            with m.If(x.exp >= 158):  # |x| >= 2**31 (inf included): saturate
                m.d.comb += value.eq(Mux(x.sign, 0x80000000, 0x7FFFFFFF))
            with m.Else():
                m.d.comb += value.eq(Mux(x.sign, -mag, mag))
        with m.Else():
            with m.If(x.sign):
                m.d.comb += value.eq(0)
            with m.Elif(x.exp >= 159):  # >= 2**32 (inf included): saturate
                m.d.comb += value.eq(0xFFFFFFFF)
            with m.Else():
                m.d.comb += value.eq(mag)
        return value

    # -----------------------------------------------------------------------------------
    def _add_round(self, m: Module, s1) -> Signal:
        """Stage 2: add, normalise, round to nearest even, flush, overflow, pack."""
        word = Signal(32, name="s2_word")
        x = s1.x
        raw = Signal(WINDOW + 3, name="s2_raw")
        diff = Signal(signed(WINDOW + 2), name="s2_diff")
        total = Signal(WINDOW + 1, name="s2_sum")
        sign = Signal(name="s2_sign")
        # One adder for both: x + y, or x - y as x + ~y + 1 (the carry-in rides in a bit
        # below both operands), then the magnitude of a difference
        sub = s1.eff_sub
        m.d.comb += [
            raw.eq(Cat(sub, x, Const(0, WINDOW + 1 - len(x)), Const(0, 1))
                   + Cat(sub, s1.y ^ sub.replicate(WINDOW), sub, sub)),
            diff.eq(raw[1:]),
        ]
        negative = diff[-1]  # the sign bit: a compare with 0 is a wide compare in Verilator
        m.d.comb += [
            total.eq(Mux(negative, -diff, diff)),
            sign.eq(Mux(negative, s1.sign_y, s1.sign_x)),
        ]

        m.submodules.normalise = m = Module()  # a simulator evaluates it once the sum is final
        zero, lz = lzc(total)
        lead = Signal(range(WINDOW + 1), name="s2_lzc")
        m.d.comb += lead.eq(lz)
        # The normalised sum is total << lead (its leading one at the top); rounding needs
        # its top 25 bits (significand and guard) and whether any bit below them is set.
        # The shift is written stage by stage, each a 76-bit mux, as one shift expression
        # would be a 200-bit vector in the Verilog.
        norm = total
        for i in range(len(lead)):
            nxt = Signal(WINDOW + 1, name=f"s2_norm{i}")
            m.d.comb += nxt.eq(Mux(lead[i], norm << (1 << i), norm))
            norm = nxt
        top = norm[WINDOW + 1 - 25:]  # significand and guard bit
        mant = top[1:]
        guard = top[0]
        sticky = norm[:WINDOW + 1 - 25] != 0
        e_pre = Signal(signed(13), name="s2_exp")
        # MSB at window bit (WINDOW - lead) weighs 2**(e0 + WINDOW - lead - 1).
        m.d.comb += e_pre.eq(s1.e0 + (WINDOW - 1 + 127) - lead)
        rounded = Signal(25, name="s2_rounded")
        m.d.comb += rounded.eq(mant + (guard & (sticky | mant[0])))
        carry = rounded[24]
        exp = Signal(signed(13), name="s2_exp_rounded")
        m.d.comb += exp.eq(e_pre + carry)
        frac = Mux(carry, 0, rounded[0:23])

        inf_bits = Cat(Const(0, 23), Const(0xFF, 8), s1.inf_sign)
        with m.If(s1.bypass):
            m.d.comb += word.eq(s1.bypass_value)
        with m.Elif(s1.nan):
            m.d.comb += word.eq(CANONICAL_NAN)
        with m.Elif(s1.inf):
            m.d.comb += word.eq(inf_bits)
        with m.Elif(zero):  # exact zero: x + (-x) is +0, the sum of two zeros keeps their sign
            m.d.comb += word.eq(Cat(Const(0, 31), s1.sign_x & ~s1.eff_sub))
        with m.Elif(exp >= 0xFF):  # overflow rounds to infinity
            m.d.comb += word.eq(Cat(Const(0, 23), Const(0xFF, 8), sign))
        with m.Elif(e_pre <= 0):
            # Below the normal range: IEEE rounding at subnormal precision reaches the
            # smallest normal only from 1.11..1(24 ones) x 2**-127; anything else is a
            # subnormal or zero and flushes to a zero of the result's sign.
            smallest = (e_pre == 0) & (mant == 0xFFFFFF)
            m.d.comb += word.eq(Cat(Const(0, 23), smallest, Const(0, 7), sign))
        with m.Else():
            m.d.comb += word.eq(Cat(frac, exp[0:8], sign))
        return word
