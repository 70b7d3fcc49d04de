"""Pipelined FP32 unit of one lane (rr to mem in the core): add, sub, mul, fma, min/max,
abs/neg and the int <-> float conversions.

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

Four segments, each a pipeline stage when the unit has the cycles for it (``latency``):

A (unpack): operand selection, unpack with FTZ, exponent difference and the addend's shift
  amount, NaN/inf results; the ops that need no rounding (min, max, abs, neg, f2i, f2u)
  finish here.
B (align): 24x24 significand product, the addend shifted right into a 75-bit window (bit 0
  collects the sticky OR of everything shifted below it).
C (add): add or subtract product and aligned addend, magnitude, leading-zero count (of
  both orders of a subtraction side by side, the sign choosing last).
D (round): normalise, round to nearest even, flush a subnormal result, overflow to infinity,
  pack.

``latency`` 2 cuts between B and C (the unit's first form), 3 also between C and D, 4 between
every two, 5 also registers the operands before A (and each cycle past 5 delays the
result). The core's form is 5 with the last register the user's (``output_register``): the
operands registered at the end of rr (they come out of the register file's block RAMs
late in rr), A to D in ex1, ex2, mem and wb, and the result, D's logic, written by wb into
the register file's write register, in the cycle an ALU's is; the register before D loads
as mem's instruction moves to wb (``last_enable``), which it does while ex1 holds.

Window of B/C (bit ``k >= 1`` weighs ``2**(e0 + k - 1)``)::

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

from .fp_utils import (
    CANONICAL_NAN,
    EXP_BIAS,
    FP_NEG_ZERO,
    FP_ONE,
    lzc,
    order_less,
    sum_of,
    unpack,
)
from .isa_consts import isa_op_enum
from .params import MAX_LATENCY, check_latency
from .stages import Cuts, delayed, gated_domain, last_cut_enable

__all__ = ["ATOMIC_LATENCY", "CORE_LATENCY", "MAX_LATENCY", "FpuOp", "Fpu"]

CORE_LATENCY = 5
"""The core's FPU: operands presented in rr and registered, segments A to D in ex1, ex2, mem
and wb, the last register the register file's write register (``Fpu(CORE_LATENCY,
output_register=False, last_enable=True)``)."""

ATOMIC_LATENCY = 4
"""The latency of the atomic adders (``fadd_only``: the LSU's for shared atomics, the
caches' for global ones): the core's four segments, after a register of the user's for the
operands (the old word comes out of a block RAM), so that no segment is longer than the
core's FPU's."""

FpuOp = isa_op_enum("FpuOp", (Sem.FP, Sem.CVT), __name__)
"""Operation of the :class:`Fpu`: ``FADD`` ... ``FNEG``, ``CVT_I2F`` ... ``CVT_F2U``."""

WINDOW = 75  # sticky bit + 74-bit window (product 48 + 2 empty + addend 24)
ADDEND_LSB = 51  # position of the unshifted addend's LSB in the window
MAX_SHIFT = 80  # any larger shift moves the whole addend into the sticky bit

_RESULT_FIELDS = {
    "e0": signed(12),  # exponent of window bit 1
    "sign_x": 1,
    "eff_sub": 1,  # signs differ: subtract magnitudes
    "nan": 1,  # result is the canonical NaN
    "inf": 1,  # result is an infinity of sign inf_sign
    "inf_sign": 1,
    "bypass": 1,  # result already final in A (bypass_value)
    "bypass_value": 32,
}
"""What every segment after A passes on unchanged (besides its own work)."""

UNPACKED_LAYOUT = data.StructLayout({
    "xm": 24, "ym": 24,  # the product's significands
    "zm": 24,  # the addend's significand, unshifted
    "shift": range(MAX_SHIFT + 1),  # right shift of the addend into the window
    "cvt": 1,  # int -> float: the magnitude enters the window as the product would
    "int_mag": 32,
    "sign_y": 1,
    **_RESULT_FIELDS,
})
"""Registers between A (unpack) and B (align)."""

ALIGN_ADD_LAYOUT = data.StructLayout({
    "x": 49,  # product (or integer magnitude) at window bits [1, 49)
    "y": WINDOW,  # aligned addend, bit 0 = sticky
    "sign_y": 1,
    **_RESULT_FIELDS,
})
"""Registers between B (align) and C (add)."""

SUM_LAYOUT = data.StructLayout({
    "total": WINDOW + 1,  # magnitude of the sum
    "nonzero": 1,  # the sum is not exactly zero (a register reset to 0 reads as +0)
    "lead": range(WINDOW + 1),  # leading zeros of total
    "sign": 1,  # the sum's sign
    **_RESULT_FIELDS,
})
"""Registers between C (add) and D (round)."""

_CUTS = {1: (), 2: ("bc",), 3: ("bc", "cd"), 4: ("ab", "bc", "cd"), 5: ("in", "ab", "bc", "cd")}
"""Segment boundaries that are registers, by the pipeline registers the datapath has."""


class _Operands(NamedTuple):
    """What A reads: the ports themselves, or their registered copies (``gated``)."""

    op: Value
    a: Value
    b: Value
    c: Value


class Fpu(wiring.Component):
    """Pipelined FP32 unit, one operation per enabled cycle.

    Parameters
    ----------
    latency : int
        Enabled cycles from operands to ``result``, from 1 (every segment in one cycle) to
        ``MAX_LATENCY``: 2 (A B | C D, the default), 3 (A B | C | D), 4 (A | B | C | D), 5
        (operands | A | B | C | D); the cycles past 5 delay the result.
    fadd_only : bool
        Build only ``FADD`` (``op`` is not read): the atomic adders of the LSU and the
        caches, which do nothing else. The datapath is the same; without the other ops'
        logic and with the product's factor the constant 1.0, they take about half the
        cells (synthesis keeps a unit's ports, so an unused op is not optimised away).
    output_register : bool
        True (default): ``result`` is a register. False: the last of the ``latency``
        registers is the user's; ``result`` shows in the cycle before the one it would
        otherwise, from logic (D's, unless the latency adds delay registers), for a user that
        registers it at once, as the core's ``mem_wb`` stage register does.
    gated : bool
        The simulation models' form (``RtlConfig.clock_gating``): the operands are registered
        on a gated clock that rises only in a cycle with ``en & valid``, every segment runs
        after those registers, and the result is delayed by registers under ``en``, so a
        Verilator model evaluates the datapath only in the cycles that start an operation (a
        kernel's FP instructions are a few in ten). False (the FPGA form) registers the
        segments' outputs under the enable instead (the first register under ``en & valid``).
        Same function, same timing; needs ``latency >= 2``.
    last_enable : bool
        The unit's last register loads under ``en_last``, not ``en``: for a user whose
        stage after that register moves on while the earlier stages hold (the core's mem,
        whose instruction goes to wb while ex1 holds the rest). Needs two registers of the
        unit's own.

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
    en_last : In(1)
        With ``last_enable`` only: advance the last register.
    result : Out(32)
        Result bits of the operation presented ``latency`` enabled cycles earlier (one fewer
        without the output register, see ``output_register``).
    """

    def __init__(self, latency: int = 2, gated: bool = False,
                 output_register: bool = True, fadd_only: bool = False,
                 last_enable: bool = False) -> None:
        self.latency = check_latency(self, latency)
        if gated and self.latency < 2:
            raise ValueError("Fpu: gated needs latency >= 2 (the operands take a cycle)")
        if not output_register and self.latency < 2:
            raise ValueError("Fpu: output_register=False needs latency >= 2 (the user's "
                             "register is one of the cycles)")
        if last_enable and self.latency - (not output_register) < 2:
            raise ValueError("Fpu: last_enable needs two registers of the unit's own "
                             "(latency >= 3 without the output register, else >= 2)")
        self.gated = gated
        self.output_register = output_register
        self.fadd_only = fadd_only
        self.last_enable = last_enable
        super().__init__({
            "en": In(1),
            "valid": In(1, init=1),
            "op": In(FpuOp),
            "a": In(32),
            "b": In(32),
            "c": In(32),
            "result": Out(32),
            **({"en_last": In(1)} if last_enable else {}),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        take = Signal()
        m.d.comb += take.eq(self.en & self.valid)
        registers = self.latency - (0 if self.output_register else 1)  # the unit's own
        # Each segment is its own submodule so that a simulator re-evaluates only the
        # segment whose inputs changed.
        # fadd_only: a constant op, so everything else folds away inside the unit
        op = Value.cast(FpuOp.FADD) if self.fadd_only else self.op
        if self.gated:
            # The operands, registered on a gated clock; every segment runs between them
            # and the delay registers.
            fpu = gated_domain(m, "fpu", take)
            ops = _Operands(op if self.fadd_only else Signal(FpuOp, name="op_q"),
                            Signal(32, name="a_q"), Signal(32, name="b_q"),
                            Signal(32, name="c_q"))
            m.d[fpu] += [ops.a.eq(self.a), ops.b.eq(self.b), ops.c.eq(self.c)]
            if not self.fadd_only:
                m.d[fpu] += ops.op.eq(op)
            cuts, delays = (), registers - 1
        else:  # segment outputs registered under the enable
            ops = _Operands(op, self.a, self.b, self.c)
            cuts = _CUTS[min(self.latency, 5)]
            delays = registers - len(cuts)
        last_en = self.en_last if self.last_enable else None
        # the last register: a delay register where there is one, else the last cut
        boundary = Cuts(m, cuts, take, self.en, last_cut_enable(_CUTS[5], cuts, last_en, delays))
        m.submodules.unpack = m_a = Module()
        m.submodules.align = m_b = Module()
        m.submodules.add = m_c = Module()
        m.submodules.round = m_d = Module()
        if "in" in cuts and self.fadd_only:  # the operands; the constant op stays one
            ops = _Operands(ops.op, *boundary("in", (ops.a, ops.b, ops.c)))
        elif "in" in cuts:
            ops = boundary("in", ops)
        a_out = boundary("ab", self._unpack(m_a, ops))
        b_out = boundary("bc", self._align(m_b, a_out))
        c_out = boundary("cd", self._add(m_c, b_out))
        word = self._round(m_d, c_out)
        m.d.comb += self.result.eq(delayed(m, self.en, word, delays, last_en if delays else None))
        return m

    # -----------------------------------------------------------------------------------
    def _unpack(self, m: Module, ops: _Operands) -> Signal:
        """A: operand selection, unpack, exponents and shift amount, specials, unrounded
        ops."""
        op = ops.op
        out = Signal(UNPACKED_LAYOUT, name="a_out")

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
        x = unpack(m, ops.a, "x")
        y = unpack(m, y_in, "y")
        z = unpack(m, z_in, "z")
        # y's and z's exponents chosen from their candidates' own (b's, c's and the
        # constants'; a sign flip leaves one unchanged) beside the choice of y and z, so
        # that the exponents' sums start at the operand registers, not after that choice
        y_exp, z_exp = Signal(8, name="y_exp"), Signal(8, name="z_exp")
        with m.Switch(op):
            with m.Case(FpuOp.FADD, FpuOp.FSUB):
                m.d.comb += [y_exp.eq(EXP_BIAS), z_exp.eq(ops.b[23:31])]
            with m.Case(FpuOp.FMUL):
                m.d.comb += [y_exp.eq(ops.b[23:31]), z_exp.eq(0)]
            with m.Default():
                m.d.comb += [y_exp.eq(ops.b[23:31]), z_exp.eq(ops.c[23:31])]

        sign_p = x.sign ^ y.sign
        prod_zero = x.zero | y.zero

        # d = z - x - y + 150: the exponent of the addend's LSB less that of the product's
        # LSB. What the shift amount needs of it (two compares and a difference) is each
        # the sum of the three exponents and a constant, in one carry chain after two
        # carry-save levels (sum_of), side by side, not chains in series (d's two, then
        # each compare's and the difference's on d: the unit's slowest segment); d itself
        # is not needed.
        def exps_plus(k: int, name: str, negated: bool = False) -> Signal:
            """d + k, or with ``negated`` -(d + k)."""
            if negated:
                return sum_of(m, [x.exp, y_exp], [z_exp], -150 - k, 12, name)
            return sum_of(m, [z_exp], [x.exp, y_exp], 150 + k, 12, name)

        e_prod = Signal(signed(12), name="e_prod")
        m.d.comb += e_prod.eq(x.exp + y.exp - 300)
        # d > ADDEND_LSB - 1 and d < ADDEND_LSB - 1 - MAX_SHIFT as signs of their own sums
        d_high = ~exps_plus(-ADDEND_LSB, "align_high")[-1]
        d_low = exps_plus(MAX_SHIFT - (ADDEND_LSB - 1), "align_low")[-1]
        addend_top = prod_zero | (~z.zero & d_high)
        e0 = Signal(signed(12), name="align_e0")
        m.d.comb += e0.eq(Mux(addend_top, z.exp - 150 - (ADDEND_LSB - 1), e_prod))

        any_inf_p = x.inf | y.inf
        fused_nan = (x.nan | y.nan | z.nan | (x.inf & y.zero) | (x.zero & y.inf)
                     | (any_inf_p & z.inf & (sign_p != z.sign)))

        int_neg = (op == FpuOp.CVT_I2F) & ops.a[31]
        m.submodules.unrounded = m_unrounded = Module()
        unrounded = self._unrounded(m_unrounded, x, ops)

        # the shift amount (ADDEND_LSB - 1) - d clamped to [0, MAX_SHIFT], the clamp decided
        # by comparing d itself (negative amounts only for a zero addend)
        raw = Signal(range(MAX_SHIFT + 1), name="align_raw")
        m.d.comb += raw.eq(exps_plus(-(ADDEND_LSB - 1), "align_raw", negated=True))
        m.d.comb += [out.xm.eq(x.mant), out.ym.eq(y.mant), out.zm.eq(z.mant),
                     out.shift.eq(Mux(addend_top | d_high, 0,
                                      Mux(d_low, MAX_SHIFT, raw)))]
        with m.Switch(op):
            with m.Case(FpuOp.CVT_I2F, FpuOp.CVT_U2F):
                m.d.comb += [
                    out.cvt.eq(1), out.int_mag.eq(Mux(int_neg, -ops.a, ops.a)[0:32]),
                    out.e0.eq(0), out.sign_x.eq(int_neg), out.sign_y.eq(int_neg),
                    out.eff_sub.eq(0),
                ]
            with m.Case(FpuOp.FADD, FpuOp.FSUB, FpuOp.FMUL, FpuOp.FFMA):
                m.d.comb += [
                    out.e0.eq(e0), out.sign_x.eq(sign_p), out.sign_y.eq(z.sign),
                    out.eff_sub.eq(sign_p != z.sign),
                    out.nan.eq(fused_nan),
                    out.inf.eq(any_inf_p | z.inf),
                    out.inf_sign.eq(Mux(any_inf_p, sign_p, z.sign)),
                ]
            with m.Default():
                m.d.comb += [out.bypass.eq(1), out.bypass_value.eq(unrounded)]
        return out

    def _unrounded(self, m: Module, x, ops: _Operands) -> Signal:
        """min, max, abs, neg and float -> int: exact, so they finish in A."""
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
    def _align(self, m: Module, a) -> Signal:
        """B: the significand product and the addend aligned below or above it."""
        out = Signal(ALIGN_ADD_LAYOUT, name="b_out")
        product = Signal(48, name="product")
        # fadd_only: the factor is 1.0 (significand 2**23), written as the shift it is, since
        # synthesis does not see the constant across the segments' module boundary
        m.d.comb += product.eq(a.xm << 23 if self.fadd_only else a.xm * a.ym)
        shift = a.shift
        # aligned = Cat(sticky, addend shifted into the 74 window bits above it): a right
        # shift written stage by stage (one shift expression would be a 155-bit vector in
        # the Verilog), each stage ORing what it drops into the sticky bit
        base = ADDEND_LSB - 1  # the unshifted significand's LSB, counted above the sticky bit
        v = Cat(Const(0, base), a.zm)
        sticky = Const(0, 1)
        for i in range(len(shift)):
            step = 1 << i
            nv = Signal(len(v), name=f"align_sh{i}")
            ns = Signal(name=f"align_st{i}")
            m.d.comb += [nv.eq(Mux(shift[i], v >> step, v)),
                         ns.eq(sticky | (shift[i] & (v[:min(step, len(v))] != 0)))]
            v, sticky = nv, ns
        m.d.comb += [out.x.eq(Mux(a.cvt, a.int_mag, product) << 1),
                     out.y.eq(Mux(a.cvt, 0, Cat(sticky, v))), out.sign_y.eq(a.sign_y)]
        m.d.comb += [getattr(out, f).eq(getattr(a, f)) for f in _RESULT_FIELDS]
        return out

    def _add(self, m: Module, s) -> Signal:
        """C: add or subtract, the magnitude and its sign, the leading-zero count."""
        out = Signal(SUM_LAYOUT, name="c_out")
        x = s.x
        raw = Signal(WINDOW + 3, name="c_raw")
        diff = Signal(signed(WINDOW + 2), name="c_diff")
        back = Signal(WINDOW + 1, name="c_back")  # y - x, the magnitude when x - y < 0
        # One adder for x + y, or x - y as x + ~y + 1 (the carry-in rides in a bit below both
        # operands), and beside it a second for y - x: the magnitude of a difference is one
        # of the two, chosen by the first's sign, rather than the first negated after it (a
        # second carry chain in series with the first)
        sub = s.eff_sub
        m.d.comb += [
            raw.eq(Cat(sub, x, Const(0, WINDOW + 1 - len(x)), Const(0, 1))
                   + Cat(sub, s.y ^ sub.replicate(WINDOW), sub, sub)),
            diff.eq(raw[1:]),
            back.eq(s.y - x),
        ]
        negative = diff[-1]  # the sign bit: a compare with 0 is a wide compare in Verilator
        # the leading zeros of both candidates, each behind its own adder, and the sign of
        # the first choosing last: the count does not wait for the choice of the magnitude
        zero_d, lz_d = lzc(diff[:WINDOW + 1])
        zero_b, lz_b = lzc(back)
        m.d.comb += [
            out.total.eq(Mux(negative, back, diff)),
            out.sign.eq(Mux(negative, s.sign_y, s.sign_x)),
            out.nonzero.eq(~Mux(negative, zero_b, zero_d)),
            out.lead.eq(Mux(negative, lz_b, lz_d)),
        ]
        m.d.comb += [getattr(out, f).eq(getattr(s, f)) for f in _RESULT_FIELDS]
        return out

    def _round(self, m: Module, s) -> Signal:
        """D: normalise, round to nearest even, flush, overflow, pack. Everything but the
        shift, the rounding increment and its carry is worked out beside the shift (the
        exponent with and without the carry, its range checks, the sticky bit, the special
        results), so the carry only chooses among them."""
        word = Signal(32, name="d_word")
        # The normalised sum is total << lead (its leading one at the top); rounding needs
        # its top 25 bits (significand and guard) and whether any bit below them is set.
        # The shift is written stage by stage, each a 76-bit mux, as one shift expression
        # would be a 200-bit vector in the Verilog.
        norm = s.total
        for i in range(len(s.lead)):
            nxt = Signal(WINDOW + 1, name=f"d_norm{i}")
            m.d.comb += nxt.eq(Mux(s.lead[i], norm << (1 << i), norm))
            norm = nxt
        low = WINDOW + 1 - 25  # bits of the normalised sum below the guard bit
        top = norm[low:]  # significand and guard bit
        mant = top[1:]
        guard = top[0]
        # sticky: the bits of total that the shift moves below the guard bit, k + lead < low,
        # chosen by a mask made from lead alone rather than ORed after the shift
        below = Signal(low, name="d_below")  # bit k: k + lead < low (a constant shifted)
        m.d.comb += below.eq(Const((1 << low) - 1, low) >> s.lead)
        sticky = (s.total[:low] & below) != 0
        e_pre = Signal(signed(13), name="d_exp")
        e_inc = Signal(signed(13), name="d_exp_inc")
        # MSB at window bit (WINDOW - lead) weighs 2**(e0 + WINDOW - lead - 1).
        m.d.comb += [e_pre.eq(s.e0 + (WINDOW - 1 + 127) - s.lead), e_inc.eq(e_pre + 1)]
        rounded = Signal(25, name="d_rounded")
        round_up = Signal(name="d_round_up")
        m.d.comb += [round_up.eq(guard & (sticky | mant[0])), rounded.eq(mant + round_up)]
        # the significand rounded up to 2.0 (its fraction bits are then 0): known from the
        # significand being all ones, beside the increment's carry chain rather than at its
        # end, so only the fraction bits wait for the chain
        carry = Signal(name="d_carry")
        m.d.comb += carry.eq(round_up & (mant == (1 << 24) - 1))
        huge = Mux(carry, e_pre >= 0xFF - 1, e_pre >= 0xFF)  # overflow rounds to infinity
        sign = s.sign

        special = Signal(32, name="d_special")
        use_special = Signal(name="d_use_special")
        m.d.comb += use_special.eq(s.bypass | s.nan | s.inf | ~s.nonzero)
        with m.If(s.bypass):
            m.d.comb += special.eq(s.bypass_value)
        with m.Elif(s.nan):
            m.d.comb += special.eq(CANONICAL_NAN)
        with m.Elif(s.inf):
            m.d.comb += special.eq(Cat(Const(0, 23), Const(0xFF, 8), s.inf_sign))
        with m.Else():  # exact zero: x + (-x) is +0, two zeros' sum keeps their sign
            m.d.comb += special.eq(Cat(Const(0, 31), s.sign_x & ~s.eff_sub))
        with m.If(use_special):
            m.d.comb += word.eq(special)
        with m.Elif(huge):
            m.d.comb += word.eq(Cat(Const(0, 23), Const(0xFF, 8), sign))
        with m.Elif(e_pre <= 0):
            # Below the normal range: IEEE rounding at subnormal precision reaches the
            # smallest normal only from 1.11..1(24 ones) x 2**-127; anything else is a
            # subnormal or zero and flushes to a zero of the result's sign.
            smallest = (e_pre == 0) & (mant == 0xFFFFFF)
            m.d.comb += word.eq(Cat(Const(0, 23), smallest, Const(0, 7), sign))
        with m.Else():
            m.d.comb += word.eq(Cat(rounded[0:23], Mux(carry, e_inc, e_pre)[0:8], sign))
        return word
