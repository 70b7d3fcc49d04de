"""Multi-cycle special-function unit of one lane (rcp rsqrt sqrt exp2 log2 sin cos).

It computes exactly what :func:`simtgpu.sim.numerics.sfu` computes: the integer algorithm of
``sim/sfu_algo.py`` (docs/numerics.md), step for step, with one shared signed multiplier, one
coefficient ROM (``sim/sfu_tables.py``) and one normaliser.  Every op takes the same
:data:`~simtgpu.sim.numerics.SFU_LATENCY` cycles, so the core can book the writeback slot at
issue time.

Schedule (``step`` counts the cycles after the edge that sampled ``start``)::

    step 1  classify the operand, pick the special result; sin/cos: mant * (1/2pi)   [mul]
    step 2  reduce to ROM segment + fraction, exponent offset and sign; ROM address
    step 3  t = (c2 * f) >> w                                                     [mul]
    step 4  y = c0 + ((c1 + t) * f) >> w                                          [mul]
    step 5  log2: R = ee * 2**54 + v * y, sign/magnitude; sin/cos: clamp to [0, 1] [mul]
    step 6  leading-one position and 24-bit significand
    step 7  round, exponent, overflow/underflow, special-case select -> ``result``
    step 8  ``done`` is high for this one cycle; ``result`` holds until the next result
"""

from amaranth import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem
from simtgpu.sim import sfu_algo as algo

from .fp_utils import lzc
from .isa_consts import fn_enum
from .stages import gated_domain

__all__ = ["SFU_LATENCY", "Sfu", "SfuOp"]

SFU_LATENCY = algo.SFU_LATENCY


SfuOp = fn_enum("SfuOp", Sem.SFU, __name__)
"""The SFU function: member ``RCP`` etc., value = the isa ``fn`` code of ``sfu.<name>``."""

# ROM word: c0 | c1 | c2, two's complement fields sized from the table contents.
_C_WIDTHS = tuple(
    max(int(abs(int(v))).bit_length() for v in algo.ROM[:, i]) + 1 for i in range(3))
_ROM_WIDTH = sum(_C_WIDTHS)


def _rom_words() -> list[int]:
    words = []
    for row in algo.ROM:
        word, pos = 0, 0
        for value, width in zip(row, _C_WIDTHS, strict=True):
            word |= (int(value) & ((1 << width) - 1)) << pos
            pos += width
        words.append(word)
    return words


def _count_steps(m: Module, domain: str, start, step: Signal) -> None:
    """``step``: 1 after the edge that samples ``start``, counting to ``SFU_LATENCY``, then 0
    (a start while counting begins again)."""
    with m.If(start):
        m.d[domain] += step.eq(1)
    with m.Elif((step != 0) & (step != SFU_LATENCY)):
        m.d[domain] += step.eq(step + 1)
    with m.Else():
        m.d[domain] += step.eq(0)


class Sfu(wiring.Component):
    """Special-function unit of one lane: fixed latency, one operation at a time.

    Parameters
    ----------
    (none) -- the algorithm, ROM and latency are fixed by ``simtgpu.sim.numerics``.

    Attributes
    ----------
    start : In(1)
        Sample ``op`` and ``a`` at this clock edge and begin. A start while ``busy``
        abandons the operation in flight.
    op : In(SfuOp)
        The function.
    a : In(32)
        Operand, binary32 bit pattern (subnormals are read as zero).
    busy : Out(1)
        An operation is in flight (the cycles between ``start`` and ``done``).
    done : Out(1)
        One-cycle pulse exactly ``SFU_LATENCY`` cycles after the edge that sampled ``start``.
    result : Out(32)
        The binary32 result; valid while ``done`` is high and held until the next result.
    """

    start: In(1)
    op: In(SfuOp)
    a: In(32)
    busy: Out(1)
    done: Out(1)
    result: Out(32)

    def __init__(self, gated: bool = False) -> None:
        """``gated``: every register but a copy of the step counter on a clock that rises
        only while an operation is in flight (:func:`~simtgpu.rtl.stages.gated_domain`), so a
        Verilator model evaluates an idle SFU not at all (SFU instructions are rare); the
        simulation models' form (``RtlConfig.clock_gating``). False, the FPGA's form, keeps
        the core clock. Same function, same timing."""
        self.gated = gated
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        frac = algo.FRAC
        seg = algo.SEG_BITS

        # -- control -----------------------------------------------------------------------
        step = Signal(range(SFU_LATENCY + 1))
        sync = "sync"
        if self.gated:
            # A copy of ``step`` on the core clock says when the unit's clock must rise (a
            # clock gated by a register of its own domain would be a combinational loop).
            live = Signal(range(SFU_LATENCY + 1))
            _count_steps(m, "sync", self.start, live)
            sync = gated_domain(m, "sfu", self.start | (live != 0), reset=True)
        _count_steps(m, sync, self.start, step)
        op = Signal(SfuOp)
        a = Signal(32)
        with m.If(self.start):
            # FTZ on the way in: a subnormal operand is a zero of its sign.
            flushed = Mux(self.a[23:31] == 0, Cat(Const(0, 31), self.a[31]), self.a)
            m.d[sync] += [op.eq(self.op), a.eq(flushed)]
        m.d.comb += [
            self.busy.eq((step != 0) & (step != SFU_LATENCY)),
            self.done.eq(step == SFU_LATENCY),
        ]

        def is_op(*names: str):
            return Cat(*(op == SfuOp[n.upper()] for n in names)).any()

        s, e_b, mant = a[31], a[23:31], a[0:23]
        e_bs = Cat(e_b, Const(0, 2)).as_signed()  # biased exponent, signed for arithmetic
        e = Signal(signed(10))
        m.d.comb += e.eq(e_bs - 127)
        m1 = Cat(mant, Const(1, 1))  # 1.m as a 24-bit integer

        # -- the shared multiplier -----------------------------------------------------------
        mul_a = Signal(signed(40))
        mul_b = Signal(signed(26))
        prod = Signal(signed(66))
        m.d.comb += prod.eq(mul_a * mul_b)

        # -- step 1: classify, special result, sin/cos reduction product ---------------------
        zero = e_b == 0
        inf = (e_b == 255) & (mant == 0)
        nan = (e_b == 255) & (mant != 0)
        special = Signal()
        special_res = Signal(32)
        rev_prod = Signal(unsigned(62))
        with m.If(step == 1):
            m.d.comb += [mul_a.eq(algo.INV_2PI), mul_b.eq(m1)]
            m.d[sync] += rev_prod.eq(prod[0:62])
            nan_c = Const(algo.CANONICAL_NAN, 32)
            sign_inf = Cat(Const(0x7F800000, 31), s)
            sign_zero = Cat(Const(0, 31), s)
            with m.Switch(op):
                with m.Case(SfuOp.RCP):
                    m.d[sync] += [special.eq(zero | inf | nan),
                                 special_res.eq(Mux(zero, sign_inf, Mux(inf, sign_zero, nan_c)))]
                with m.Case(SfuOp.RSQRT):
                    m.d[sync] += [special.eq(zero | inf | nan | s),
                                 special_res.eq(Mux(zero, sign_inf, Mux(inf & ~s, 0, nan_c)))]
                with m.Case(SfuOp.SQRT):
                    m.d[sync] += [special.eq(zero | inf | nan | s),
                                 special_res.eq(Mux(zero, sign_zero,
                                                    Mux(inf & ~s, 0x7F800000, nan_c)))]
                with m.Case(SfuOp.EXP2):
                    big = e_b >= 127 + 7
                    m.d[sync] += [special.eq(zero | inf | nan | big),
                                 special_res.eq(Mux(zero, algo.ONE, Mux(
                                     nan, nan_c, Mux(s, 0, 0x7F800000))))]
                with m.Case(SfuOp.LOG2):
                    m.d[sync] += [special.eq(zero | inf | nan | s),
                                 special_res.eq(Mux(zero, 0xFF800000,
                                                    Mux(inf & ~s, 0x7F800000, nan_c)))]
                with m.Default():  # sin, cos
                    tiny = e_b < algo.TINY_TRIG_EXP
                    small = Mux(op == SfuOp.SIN, a, algo.ONE)
                    m.d[sync] += [special.eq(tiny | inf | nan),
                                 special_res.eq(Mux(tiny, small, nan_c))]

        # -- step 2: reduction to ROM segment + fraction --------------------------------------
        rom = Memory(shape=unsigned(_ROM_WIDTH), depth=len(algo.ROM), init=_rom_words())
        m.submodules.rom = rom
        rd = rom.read_port(domain=sync)
        addr = Signal(range(len(algo.ROM)))
        m.d.comb += [rd.addr.eq(addr), rd.en.eq(step == 2)]

        f = Signal(25)  # segment fraction (w bits)
        k = Signal(signed(10))  # exponent offset: value = y * 2**k
        sign = Signal()
        v = Signal(signed(25))  # log2: v * 2**24
        ee = Signal(signed(9))  # log2: exponent of the reduced argument
        trig_neg = Signal()

        idx_m = mant[23 - seg:23]
        f_m = mant[0:23 - seg]
        par = ~e_b[0]  # (e_b - 127) is odd

        # exp2: x * 2**32 as a signed fixed-point number.
        sm = Signal(signed(25))
        sh = Signal(signed(10))
        x32 = Signal(signed(41))
        m.d.comb += [
            sm.eq(Mux(s, -m1, m1)),
            sh.eq(e_bs - 118),  # e + 9
        ]
        with m.If(sh >= 0):
            m.d.comb += x32.eq(sm << sh[0:4])  # sh <= 15 for every non-special operand
        with m.Else():
            m.d.comb += x32.eq(sm >> Mux(-sh > 63, 63, (-sh)[0:6]))
        # sin/cos: revolutions * 2**32 modulo 2**32.
        rsh = Signal(signed(10))
        rev = Signal(32)
        m.d.comb += rsh.eq(158 - e_bs)  # 31 - e
        with m.If(rsh >= 0):
            m.d.comb += rev.eq(rev_prod >> Mux(rsh > 63, 63, rsh[0:6]))
        with m.Else():
            m.d.comb += rev.eq(rev_prod << Mux(-rsh > 32, 32, (-rsh)[0:6]))
        quad = Signal(2)
        m.d.comb += quad.eq(rev[30:32] + is_op("cos"))
        u = rev[0:30]

        half = Signal(signed(10))
        m.d.comb += half.eq((e - par.as_unsigned()) >> 1)

        with m.If(step == 2):
            with m.Switch(op):
                with m.Case(SfuOp.RCP):
                    m.d.comb += addr.eq(algo.ROM_BASE["rcp"] + idx_m)
                    m.d[sync] += [f.eq(f_m), sign.eq(s), k.eq(96 - e_bs)]
                with m.Case(SfuOp.RSQRT, SfuOp.SQRT):
                    base = Mux(op == SfuOp.RSQRT, algo.ROM_BASE["rsqrt"], algo.ROM_BASE["sqrt"])
                    m.d.comb += addr.eq(base + Cat(idx_m, par))
                    m.d[sync] += [f.eq(f_m), sign.eq(0),
                                 k.eq(Mux(op == SfuOp.RSQRT, -half - 1 - frac, half - frac))]
                with m.Case(SfuOp.EXP2):
                    fr = x32[0:32]
                    m.d.comb += addr.eq(algo.ROM_BASE["exp2"] + fr[32 - seg:32])
                    m.d[sync] += [f.eq(fr[0:32 - seg]), sign.eq(0),
                                 k.eq(x32[32:41].as_signed() - frac)]
                with m.Case(SfuOp.LOG2):
                    hi = mant[22]
                    m.d.comb += addr.eq(algo.ROM_BASE["log2"] + idx_m)
                    m.d[sync] += [f.eq(f_m), k.eq(-algo.LOG_FRAC),
                                 v.eq(Mux(hi, Cat(mant, Const(0, 1)).as_signed() - (1 << 23),
                                           Cat(Const(0, 1), mant))),
                                 ee.eq(e + hi)]
                with m.Default():  # sin, cos
                    base = Mux(quad[0], algo.ROM_BASE["cos"], algo.ROM_BASE["sin"])
                    m.d.comb += addr.eq(base + u[30 - seg:30])
                    m.d[sync] += [f.eq(u[0:30 - seg]), k.eq(-frac), trig_neg.eq(quad[1]),
                                 sign.eq(Mux(op == SfuOp.SIN, quad[1] ^ s, quad[1]))]

        # -- steps 3, 4: Horner ------------------------------------------------------------------
        w0, w1, _ = _C_WIDTHS
        c0 = rd.data[0:w0].as_signed()
        c1 = rd.data[w0:w0 + w1].as_signed()
        c2 = rd.data[w0 + w1:].as_signed()
        w_sel = Signal(range(26))
        m.d.comb += w_sel.eq(Mux(is_op("exp2"), algo.W_EXP2,
                                 Mux(is_op("sin", "cos"), algo.W_TRIG, algo.W_MANT)))
        prod_w = Signal(signed(66))
        with m.Switch(w_sel):
            for w in sorted({algo.W_EXP2, algo.W_TRIG, algo.W_MANT}):
                with m.Case(w):
                    m.d.comb += prod_w.eq(prod >> w)
        t = Signal(signed(40))
        y = Signal(signed(40))
        with m.If(step == 3):
            m.d.comb += [mul_a.eq(c2), mul_b.eq(f)]
            m.d[sync] += t.eq(prod_w)
        with m.If(step == 4):
            m.d.comb += [mul_a.eq(c1 + t), mul_b.eq(f)]
            m.d[sync] += y.eq(c0 + prod_w)

        # -- step 5: log2 accumulation, clamps -------------------------------------------------
        mag = Signal(unsigned(63))
        with m.If(step == 5):
            with m.If(is_op("log2")):
                r = Signal(signed(66))
                m.d.comb += [mul_a.eq(y), mul_b.eq(v),
                             r.eq((ee << algo.LOG_FRAC) + prod)]
                m.d[sync] += [sign.eq(r[-1]), mag.eq(Mux(r[-1], -r, r))]  # r[-1]: r < 0
            with m.Elif(is_op("sin", "cos")):
                m.d[sync] += mag.eq(Mux(y < 0, 0, Mux(y > (1 << frac), 1 << frac, y)))
            with m.Else():
                m.d[sync] += mag.eq(Mux(y < 0, 0, y))

        # -- step 6: leading one and the 24-bit significand -----------------------------------
        lead = Signal(range(64))  # bit length of mag
        mag_zero, mag_lz = lzc(mag)
        m.d.comb += lead.eq(Mux(mag_zero, 0, 63 - mag_lz))
        q = Signal(25)
        length = Signal(range(64))
        with m.If(step == 6):
            m.d[sync] += length.eq(lead)
            with m.If(lead > 24):
                dn = (lead - 24)[0:6]
                m.d[sync] += q.eq((mag >> dn) + (mag >> (dn - 1)[0:6])[0])
            with m.Else():
                m.d[sync] += q.eq(mag << (24 - lead)[0:5])

        # -- step 7: exponent, range, special select -------------------------------------------
        carry = q[24]
        qn = Mux(carry, q[1:25], q[0:24])
        biased = Signal(signed(12))
        m.d.comb += biased.eq(k + length - 1 + carry + 127)
        packed = Signal(32)
        with m.If((length == 0) | (biased <= 0)):
            m.d.comb += packed.eq(Cat(Const(0, 31), sign))
        with m.Elif(biased >= 255):
            m.d.comb += packed.eq(Cat(Const(0x7F800000, 31), sign))
        with m.Else():
            m.d.comb += packed.eq(Cat(qn[0:23], biased[0:8], sign))
        with m.If(step == 7):
            m.d[sync] += self.result.eq(Mux(special, special_res, packed))
        return m
