"""Half-precision unit of one lane (ex1 -> ex2): the ``hcvt.*`` conversions between FP32 and
fp16/bf16 and the packed half2 arithmetic (``hadd2`` ... ``hfma2``, fp16 or bf16).

Bit-exact with ``simtgpu.sim.numerics`` (``hcvt``, ``half2``, ``hfma2``): widening is exact
(an fp16 subnormal is normalised with a leading-zero count, a bf16 pattern moves up 16 bits),
narrowing rounds once to nearest even with subnormals kept and overflow to infinity, and
every NaN result is canonical (``0x7fffffff`` widened, ``0x7fff`` narrowed). The packed
arithmetic is one fused multiply-add per half (:func:`fma_align`, :func:`fma_round`), both
formats in one datapath. The op enum :data:`HalfOp` is generated from the isa table (``Sem.HALF``).

Same timing as the FPU: operands in rr, the result two enabled cycles later (ex2). The
operands of a half instruction are registered on a gated clock (``half``: the core clock
held high in every cycle that takes no half instruction), and the datapath between those
registers and the result register is only fed from them. Real hardware gates an idle unit's
clock to save power; a Verilator model evaluates logic only when its clock domain ticks, so
a kernel without half instructions costs nothing here (docs/performance.md). The FPGA flow
builds the clock-enable form instead (``HalfUnit(gated=False)``, from
``RtlConfig.clock_gating``): an FPGA's clocks run on dedicated networks, and a clock made by a
LUT is a timing hazard there.
"""

from typing import NamedTuple

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem
from simtgpu.isa.instructions import HALF2_OPS, HCVT_OPS

from .fp_utils import CANONICAL_NAN, lzc
from .isa_consts import isa_op_enum
from .stages import gated_domain

__all__ = ["HALF_UNIT_OPS", "HalfOp", "HalfUnit"]

HalfOp = isa_op_enum("HalfOp", (Sem.HALF,), __name__)
"""Operation of the :class:`HalfUnit`: ``HCVT_HL2F`` ... and the packed arithmetic."""

HALF_UNIT_OPS: frozenset[str] = frozenset(
    [f"hcvt.{op}" for op in HCVT_OPS]
    + [f"{op}.{fmt}" for op in (*HALF2_OPS, "hfma2") for fmt in ("f16", "bf16")])
"""The ``Sem.HALF`` mnemonics this unit carries out: all of them."""

_FIELDS = {"f16": (5, 10), "bf16": (8, 7)}
_F16_OPS = tuple(HalfOp[f"{op.upper()}_F16"] for op in (*HALF2_OPS, "hfma2"))
_BF16_OPS = tuple(HalfOp[f"{op.upper()}_BF16"] for op in (*HALF2_OPS, "hfma2"))
HALF_NAN = 0x7FFF
LATENCY = 2


def widen(m: Module, h, fmt: str, name: str) -> Signal:
    """FP32 pattern of the 16-bit ``h`` in ``fmt``, exact; NaN -> 0x7fffffff."""
    out = Signal(32, name=f"{name}_f32")
    if fmt == "bf16":
        nan = (h[7:15] == 0xFF) & (h[:7] != 0)
        m.d.comb += out.eq(Mux(nan, CANONICAL_NAN, Cat(Const(0, 16), h)))
        return out
    sign, exp, man = h[15], h[10:15], h[:10]
    zero, lz = lzc(man)  # leading zeros of the 10-bit mantissa
    p = Signal(4, name=f"{name}_msb")  # position of the subnormal's leading one
    m.d.comb += p.eq(9 - lz)
    sub_exp = Signal(8, name=f"{name}_sexp")
    m.d.comb += sub_exp.eq(p + 103)  # 2^(p - 24) biased by 127
    up_by = Signal(5, name=f"{name}_upby")
    m.d.comb += up_by.eq(23 - p)
    sub_man = Signal(23, name=f"{name}_sman")
    m.d.comb += sub_man.eq((man << up_by)[:23])
    with m.If(exp == 0x1F):
        m.d.comb += out.eq(Mux(man != 0, CANONICAL_NAN, Cat(Const(0, 23), Const(0xFF, 8), sign)))
    with m.Elif(exp == 0):
        m.d.comb += out.eq(Mux(zero, Cat(Const(0, 31), sign), Cat(sub_man, sub_exp, sign)))
    with m.Else():
        m.d.comb += out.eq(Cat(Const(0, 13), man, exp + 112, sign))
    return out


def narrow(m: Module, a, fmt: str, name: str) -> Signal:
    """16-bit ``fmt`` pattern of the FP32 ``a``: RNE, subnormals kept, overflow to infinity,
    NaN -> 0x7fff (the integer rounding of ``numerics._round_half``)."""
    if fmt == "bf16":
        return _narrow_bf16(m, a, name)
    ebits, mbits = _FIELDS[fmt]
    emin = 2 - (1 << (ebits - 1))
    inf = ((1 << ebits) - 1) << mbits
    sign, exp, man = a[31], a[23:31], a[:23]
    out = Signal(16, name=f"{name}_h")
    sig = Signal(24, name=f"{name}_sig")
    m.d.comb += sig.eq(Cat(man, exp != 0))
    e = Signal(range(-127, 129), name=f"{name}_e")  # unbiased exponent (subnormal: -126)
    m.d.comb += e.eq(Mux(exp == 0, -126, exp - 127))
    below = Signal(range(0, 256), name=f"{name}_below")  # how far below emin
    m.d.comb += below.eq(Mux(e < emin, emin - e, 0))
    shift = Signal(6, name=f"{name}_shift")
    m.d.comb += shift.eq(Mux(below > 30 - (23 - mbits), 30, (23 - mbits) + below))
    shift_m1 = Signal(5, name=f"{name}_shm1")
    m.d.comb += shift_m1.eq(shift - 1)
    q = Signal(25, name=f"{name}_q")
    rem = Signal(24, name=f"{name}_rem")
    half = Signal(32, name=f"{name}_half")
    mask = Signal(32, name=f"{name}_mask")
    m.d.comb += [q.eq(sig >> shift), mask.eq((Const(1, 33) << shift) - 1),
                 rem.eq(sig & mask), half.eq(Const(1, 32) << shift_m1)]
    up = (rem > half) | ((rem == half) & q[0])
    biased = Signal(range(0, 1 << 20), name=f"{name}_enc")
    m.d.comb += biased.eq((Mux(e > emin, e - emin, 0) << mbits) + q + up)
    with m.If((exp == 0xFF) & (man != 0)):
        m.d.comb += out.eq(HALF_NAN)
    with m.Elif((exp == 0xFF) | (biased >= inf)):
        m.d.comb += out.eq(Cat(Const(inf, 15), sign))
    with m.Else():
        m.d.comb += out.eq(Cat(biased[:15], sign))
    return out


def _narrow_bf16(m: Module, a, name: str) -> Signal:
    """bf16 has FP32's exponent range, so narrowing rounds the pattern's top half at a fixed
    bit (subnormals included); a carry out of the significand moves the exponent up, into
    infinity past the largest finite value."""
    out = Signal(16, name=f"{name}_h")
    low = a[:16]
    up = low[15] & ((low[:15] != 0) | a[16])
    with m.If((a[23:31] == 0xFF) & (a[:23] != 0)):
        m.d.comb += out.eq(HALF_NAN)
    with m.Else():
        m.d.comb += out.eq(a[16:] + up)
    return out


class HalfUnit(wiring.Component):
    """Pipelined half-precision conversions of one lane, one operation per enabled cycle.

    Attributes
    ----------
    en : In(1)
        Advance the pipeline this cycle; every stage holds while 0.
    valid : In(1)
        A half instruction is presented this cycle: its operands are taken only where
        ``en & valid``. Both must come from rising-edge logic (change only while the clock
        is high), as the core's do: they gate the operand registers' clock.
    op : In(HalfOp)
        Operation (one of :data:`HALF_UNIT_OPS`; the others give 0).
    a, b, c : In(32)
        Operands (``b`` for the packing conversions and the packed arithmetic, ``c`` for
        ``hfma2``).
    result : Out(32)
        Result bits of the operation presented two enabled cycles earlier (with ``valid``).
    """

    en: In(1)
    valid: In(1)
    op: In(HalfOp)
    a: In(32)
    b: In(32)
    c: In(32)
    result: Out(32)

    def __init__(self, gated: bool = True) -> None:
        """``gated``: take the operands on a gated clock (the simulation model's form, see
        above); False takes them on the core clock under a clock enable, the form an FPGA
        wants (:attr:`simtgpu.rtl.configs.RtlConfig.clock_gating`). Same function, same
        timing."""
        self.gated = gated
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        take = Signal()
        m.d.comb += take.eq(self.en & self.valid)
        if self.gated:
            # ex1: the operands, registered on the gated clock; the whole datapath after them
            op = Signal(HalfOp)
            a, b, c = Signal(32), Signal(32), Signal(32)
            m.d[gated_domain(m, "half", take)] += [op.eq(self.op), a.eq(self.a),
                                                   b.eq(self.b), c.eq(self.c)]
            conv, arith, halves = self._front(m, op, a, b, c)
        else:
            # the FPGA form: the front half (conversions, products, alignment, the sum's
            # magnitude) in the cycle the operands arrive, its output registered under the
            # enable, normalisation and rounding in the next: two register-to-register paths
            # of about half the datapath each, where the operands' register would leave the
            # whole datapath in one (as the FPU)
            conv, arith, halves = self._front(m, self.op, self.a, self.b, self.c)
            kept = [conv, arith, *[v for h in halves for v in h]]
            regs = [Signal.like(v, name=f"{v.name}_q") for v in kept]
            with m.If(take):
                m.d.sync += [r.eq(v) for r, v in zip(regs, kept, strict=True)]
            conv, arith = regs[0], regs[1]
            n = len(halves[0])
            halves = [_Aligned(*regs[2:2 + n]), _Aligned(*regs[2 + n:])]
        fma = [fma_round(m.submodules[f"fma_{half}"], al, f"fma_{half}")
               for half, al in zip(("lo", "hi"), halves, strict=True)]
        word = Signal(32)
        m.d.comb += word.eq(Mux(arith, Cat(*fma), conv))
        # ex2: the result
        s2 = Signal(32)
        with m.If(self.en):
            m.d.sync += s2.eq(word)
        m.d.comb += self.result.eq(s2)
        return m

    @staticmethod
    def _front(m: Module, op, a, b, c) -> tuple[Signal, Signal, list["_Aligned"]]:
        """The conversions' result word (0 for the arithmetic), whether ``op`` is packed
        arithmetic, and each half's fused multiply-add up to its aligned terms."""
        conv = Signal(32, name="conv")
        # the conversions read one half of ``a`` at a time: it is chosen first
        a_half = Signal(16)
        m.d.comb += a_half.eq(Mux(op.as_value().matches(HalfOp.HCVT_HH2F, HalfOp.HCVT_BH2F),
                                  a[16:], a[:16]))
        f16_w, bf_w = widen(m, a_half, "f16", "hw"), widen(m, a_half, "bf16", "bw")
        h_a, h_b = narrow(m, a, "f16", "ha"), narrow(m, b, "f16", "hb")
        b_a, b_b = narrow(m, a, "bf16", "ba"), narrow(m, b, "bf16", "bb")
        with m.Switch(op):
            for hop, value in ((HalfOp.HCVT_HL2F, f16_w), (HalfOp.HCVT_HH2F, f16_w),
                               (HalfOp.HCVT_BL2F, bf_w), (HalfOp.HCVT_BH2F, bf_w),
                               (HalfOp.HCVT_F2H, h_a), (HalfOp.HCVT_F2B, b_a),
                               (HalfOp.HCVT_F2H2, Cat(h_a, h_b)),
                               (HalfOp.HCVT_F2B2, Cat(b_a, b_b))):
                with m.Case(hop):
                    m.d.comb += conv.eq(value)
        arith = Signal(name="arith")
        m.d.comb += arith.eq(op.as_value().matches(*_F16_OPS, *_BF16_OPS))
        # the packed arithmetic: one fused x * y + z per half and format
        bf = Signal(name="bf")  # the arithmetic's format: bf16, else fp16
        m.d.comb += bf.eq(op.as_value().matches(*_BF16_OPS))
        one = Signal(16)
        m.d.comb += one.eq(Mux(bf, 0x3F80, 0x3C00))
        x, y, z = Signal(32), Signal(32), Signal(32)
        with m.Switch(op):
            with m.Case(HalfOp.HADD2_F16, HalfOp.HADD2_BF16):
                m.d.comb += [x.eq(a), y.eq(Cat(one, one)), z.eq(b)]
            with m.Case(HalfOp.HSUB2_F16, HalfOp.HSUB2_BF16):
                m.d.comb += [x.eq(a), y.eq(Cat(one, one)), z.eq(b ^ 0x80008000)]
            with m.Case(HalfOp.HMUL2_F16, HalfOp.HMUL2_BF16):
                m.d.comb += [x.eq(a), y.eq(b), z.eq(0x80008000)]
            with m.Default():
                m.d.comb += [x.eq(a), y.eq(b), z.eq(c)]
        halves = []
        for half, sl in (("lo", slice(0, 16)), ("hi", slice(16, 32))):
            m.submodules[f"fma_{half}"] = sub = Module()
            halves.append(fma_align(sub, x[sl], y[sl], z[sl], bf, f"fma_{half}"))
        return conv, arith, halves


_WIDE_SIG = 11  # significand bits of the wider format (fp16), which holds bf16's 8


_GAP = 2 * _WIDE_SIG + 4  # where the big term's LSB sits in the sum's window
_MBITS = {fmt: mb for fmt, (_, mb) in _FIELDS.items()}
_BIAS = {fmt: (1 << (eb - 1)) - 1 for fmt, (eb, _) in _FIELDS.items()}


class _Aligned(NamedTuple):
    """One half's fused multiply-add after :func:`fma_align`: what :func:`fma_round` reads
    (the register between them in the FPGA form)."""

    mag: Signal  # the magnitude of the sum of the aligned terms (the big one at bit _GAP)
    sign: Signal  # the sum's sign
    lbig: Signal  # the weight of the big term's LSB
    bf: Signal  # the format
    nan: Signal  # the result is NaN
    prod_inf: Signal  # the product is infinite
    iz: Signal  # the addend is infinite
    sp: Signal  # the product's sign
    sz: Signal  # the addend's sign


def fma_align(m: Module, x, y, z, bf, name: str) -> _Aligned:
    """``x * y + z`` on 16-bit patterns, fp16 (``bf`` 0) or bf16 (``bf`` 1) chosen per
    operation, rounded once (RNE), subnormals kept, NaN -> 0x7fff: its first part, up to the
    aligned terms' sum and the specials; :func:`fma_round` ends it.

    One datapath for both formats: every operand becomes an 11-bit significand and the
    weight (log2) of its LSB, which holds an fp16 and a bf16 value alike. bf16's exponent
    range makes an exact fixed-point sum hundreds of bits wide, so the two terms are aligned
    instead: the one whose LSB weighs more (the *big* term; a zero term is never big) sits
    ``gap`` bits up a window, the other is shifted into place, and what it loses below the
    window's bit 0 is jammed into that bit (sticky). A term shifted that far lies wholly
    below the big term's LSB by at least ``gap - 22`` bits (22: the widest product), so the
    sum cannot cancel into it and the sticky bit decides the rounding exactly as the lost
    bits would.
    """
    gap = _GAP

    def pick(f16, bf16):
        return Mux(bf, bf16, f16)

    def unpack(v, tag):
        e = Signal(8, name=f"{name}_{tag}_ef")
        man = Signal(10, name=f"{name}_{tag}_man")
        m.d.comb += [e.eq(pick(v[10:15], v[7:15])), man.eq(pick(v[:10], v[:7]))]
        top = e == pick(0x1F, 0xFF)
        sig = Signal(_WIDE_SIG, name=f"{name}_{tag}_sig")
        m.d.comb += sig.eq(man | ((e != 0).as_unsigned() << pick(10, 7)))
        w = Signal(signed(10), name=f"{name}_{tag}_w")  # weight of the significand's LSB
        m.d.comb += w.eq(Mux(e == 0, 1, e) - pick(_BIAS["f16"] + _MBITS["f16"],
                                                   _BIAS["bf16"] + _MBITS["bf16"]))
        return v[15], sig, w, top & (man != 0), top & (man == 0), sig == 0

    sx, gx, wx, nx_, ix, zx = unpack(x, "x")
    sy, gy, wy, ny, iy, zy = unpack(y, "y")
    sz, gz, lz, nz, iz, zz = unpack(z, "z")
    sp = sx ^ sy
    prod = Signal(2 * _WIDE_SIG, name=f"{name}_prod")
    lp = Signal(signed(11), name=f"{name}_lp")  # weight of the product's LSB
    m.d.comb += [prod.eq(gx * gy), lp.eq(wx + wy)]
    d = Signal(signed(12), name=f"{name}_d")  # how far z's LSB lies above the product's
    m.d.comb += d.eq(lz - lp)
    z_big = Signal(name=f"{name}_zbig")
    m.d.comb += z_big.eq(~zz & (~d[-1] | (prod == 0)))
    big = Signal(len(prod), name=f"{name}_big")
    small = Signal(len(prod), name=f"{name}_small")
    lbig = Signal(signed(11), name=f"{name}_lbig")
    diff = Signal(11, name=f"{name}_diff")
    m.d.comb += [big.eq(Mux(z_big, gz, prod)), small.eq(Mux(z_big, prod, gz)),
                 lbig.eq(Mux(z_big, lz, lp)), diff.eq(Mux(z_big, d, -d))]
    width = len(prod) + gap + 2
    wbig = Signal(width, name=f"{name}_wbig")
    wsmall = Signal(width, name=f"{name}_wsmall")
    m.d.comb += wbig.eq(big << gap)
    # small placed gap bits up, then one right shift by diff; what falls below bit 0 (only
    # when diff > gap) is jammed into it
    dclamp = Signal(range(gap + len(prod) + 2), name=f"{name}_dclamp")
    m.d.comb += dclamp.eq(Mux(diff > gap + len(prod), gap + len(prod) + 1, diff))
    v, lost = Cat(Const(0, gap), small), Const(0, 1)
    for i in range(len(dclamp)):  # a stage per bit of the amount, ORing what it drops
        step = 1 << i
        nv, nl = Signal(len(v), name=f"{name}_al{i}"), Signal(name=f"{name}_lost{i}")
        m.d.comb += [nv.eq(Mux(dclamp[i], v >> step, v)),
                     nl.eq(lost | (dclamp[i] & (v[:min(step, len(v))] != 0)))]
        v, lost = nv, nl
    m.d.comb += wsmall.eq(v | lost)
    sub, s_big = Signal(name=f"{name}_sub"), Signal(name=f"{name}_sbig")
    m.d.comb += [s_big.eq(Mux(z_big, sz, sp)), sub.eq(sz ^ sp)]
    # one adder: big + small, or big - small as big + ~small + 1 (the carry-in rides in a
    # bit below both), then the magnitude
    raw = Signal(width + 3, name=f"{name}_raw")
    m.d.comb += raw.eq(Cat(sub, wbig, Const(0, 2))
                       + Cat(sub, wsmall ^ sub.replicate(width), sub, sub))
    total = Signal(signed(width + 2), name=f"{name}_sum")
    m.d.comb += total.eq(raw[1:])
    neg = Signal(name=f"{name}_neg")
    m.d.comb += neg.eq(total[-1])
    sign = Signal(name=f"{name}_sign")
    mag = Signal(width + 1, name=f"{name}_mag")
    m.d.comb += [sign.eq(s_big ^ neg), mag.eq(Mux(neg, -total, total))]
    nan, prod_inf = Signal(name=f"{name}_nan"), Signal(name=f"{name}_pinf")
    m.d.comb += [prod_inf.eq(ix | iy),
                 nan.eq(nx_ | ny | nz | (ix & zy) | (iy & zx) | ((ix | iy) & iz & (sp != sz)))]
    named = []
    for v, tag in ((iz, "iz"), (sp, "sp"), (sz, "sz")):
        sig = Signal(name=f"{name}_{tag}")
        m.d.comb += sig.eq(v)
        named.append(sig)
    return _Aligned(mag, sign, lbig, bf, nan, prod_inf, *named)


def fma_round(m: Module, al: _Aligned, name: str) -> Signal:
    """The end of :func:`fma_align`'s ``x * y + z``: the sum's magnitude normalised and
    rounded once, and the 16-bit pattern (specials first)."""
    gap, width = _GAP, len(al.mag) - 1
    mag, sign, lbig = al.mag, al.sign, al.lbig
    mbits, bias = _MBITS, _BIAS

    def pick(f16, bf16):
        return Mux(al.bf, bf16, f16)

    is_zero, lz_cnt = lzc(mag)
    k = Signal(signed(8), name=f"{name}_k")  # leading one's bit in the window
    m.d.comb += k.eq(len(mag) - 1 - lz_cnt)
    base = Signal(signed(11), name=f"{name}_base")  # weight of window bit 0
    m.d.comb += base.eq(lbig - gap)
    e = Signal(signed(12), name=f"{name}_e")  # weight of the leading one
    m.d.comb += e.eq(k + base)
    emin = pick(1 - bias["f16"], 1 - bias["bf16"])  # exponent of the smallest normal
    mb = pick(mbits["f16"], mbits["bf16"])
    lsb = Signal(signed(12), name=f"{name}_lsb")  # window bit of the kept LSB
    m.d.comb += lsb.eq(Mux(e > emin, k - mb, emin - mb - base))
    sh = Signal(7, name=f"{name}_sh")
    m.d.comb += sh.eq(Mux(lsb > width + 2, width + 2, Mux(lsb < 0, 0, lsb)))
    # The kept significand has at most _WIDE_SIG bits (its leading one at mb, or below it
    # for a subnormal), so only those, the guard bit below them and a sticky OR of the rest
    # are formed: one right shift of the magnitude with a bit below it (the guard of sh 0).
    v, sticky = Cat(Const(0, 1), mag), Const(0, 1)
    for i in range(len(sh)):  # a stage per bit of the amount; what falls below the guard
        step = 1 << i  # bit is sticky
        nv, ns = Signal(len(v), name=f"{name}_rs{i}"), Signal(name=f"{name}_st{i}")
        m.d.comb += [nv.eq(Mux(sh[i], v >> step, v)),
                     ns.eq(sticky | (sh[i] & (v[:min(step, len(v))] != 0)))]
        v, sticky = nv, ns
    q, guard = v[1:_WIDE_SIG + 1], v[0]
    up = guard & (sticky | q[0])
    # a kept LSB below the window (lsb < 0) happens only for results far above the
    # subnormal range, where the window holds the exact sum (under 2**mb) and no rounding
    # is needed
    shifted = Signal(_WIDE_SIG + 1, name=f"{name}_shifted")
    m.d.comb += shifted.eq(Mux(lsb < 0, mag[:_WIDE_SIG] << (-lsb)[:4], q + up))
    ebias = Signal(range(0, 1 << 10), name=f"{name}_ebias")  # biased exponent - 1
    m.d.comb += ebias.eq(Mux(e > emin, e - emin, 0))
    enc = Signal(range(0, 1 << 24), name=f"{name}_enc")
    m.d.comb += enc.eq(pick(ebias << mbits["f16"], ebias << mbits["bf16"]) + shifted)
    inf = Signal(15, name=f"{name}_inf")
    m.d.comb += inf.eq(pick(0x7C00, 0x7F80))
    out = Signal(16, name=f"{name}_out")
    with m.If(al.nan):
        m.d.comb += out.eq(HALF_NAN)
    with m.Elif(al.prod_inf):
        m.d.comb += out.eq(Cat(inf, al.sp))
    with m.Elif(al.iz):
        m.d.comb += out.eq(Cat(inf, al.sz))
    with m.Elif(is_zero):
        m.d.comb += out.eq(Cat(Const(0, 15), al.sp & al.sz))
    with m.Elif(enc >= inf):
        m.d.comb += out.eq(Cat(inf, sign))
    with m.Else():
        m.d.comb += out.eq(Cat(enc[:15], sign))
    return out
