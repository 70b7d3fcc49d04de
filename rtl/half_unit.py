"""Half-precision unit of one lane (rr to mem in the core): the ``hcvt.*`` conversions between
FP32 and fp16/bf16 and the packed half2 arithmetic (``hadd2`` ... ``hfma2``, fp16 or bf16).

Bit-exact with ``simtgpu.sim.numerics`` (``hcvt``, ``half2``, ``hfma2``): widening is exact
(an fp16 subnormal is normalised with a leading-zero count, a bf16 pattern moves up 16 bits),
narrowing rounds once to nearest even with subnormals kept and overflow to infinity, and
every NaN result is canonical (``0x7fffffff`` widened, ``0x7fff`` narrowed). The packed
arithmetic is one fused multiply-add per half (:func:`fma_terms` ... :func:`fma_pack`), both
formats in one datapath. The op enum :data:`HalfOp` is generated from the isa table (``Sem.HALF``).

Same timing as the FPU: operands presented in rr and registered, four segments in ex1, ex2,
mem and wb, the result registered by the core's register-file write register
(:class:`HalfUnit`). In the simulation models the
operands of a half instruction are registered on a gated clock (``half``: the core clock
held high in every cycle that takes no half instruction), and the datapath between those
registers and the result is only fed from them. Real hardware gates an idle unit's
clock to save power; a Verilator model evaluates logic only when its clock domain ticks, so
a kernel without half instructions costs nothing here (docs/performance.md). The FPGA flow
builds the clock-enable form instead (``HalfUnit(gated=False)``, from
``RtlConfig.clock_gating``): an FPGA's clocks run on dedicated networks, and a clock made by a
LUT is a timing hazard there.
"""

from typing import NamedTuple

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import Sem
from simtgpu.isa.instructions import HALF2_OPS, HCVT_OPS

from .fp_utils import CANONICAL_NAN, at_least, lzc
from .isa_consts import isa_op_enum
from .stages import Cuts, delayed, gated_domain, last_cut_enable

__all__ = ["CORE_LATENCY", "HALF_UNIT_OPS", "LATENCY", "HalfOp", "HalfUnit"]

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
"""The unit's default latency: conversions and sums | rounding."""
CORE_LATENCY = 5
"""The core's half unit, as the core's FPU (rtl/fpu.py): operands presented in rr and
registered, segments A to D in ex1, ex2, mem and wb, the last register the register file's
write register (``HalfUnit(latency=CORE_LATENCY, output_register=False,
last_enable=True)``)."""


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


class _NarrowPrep(NamedTuple):
    """FP32 -> fp16 narrowing after :func:`narrow_prep`: the significand and how far right
    it goes."""

    sign: Value
    nan: Signal  # NaN in: the result is HALF_NAN
    top: Signal  # the exponent field is all ones (inf or NaN)
    sig: Signal  # 24-bit significand with its hidden bit
    shift: Signal  # right shift of sig to the fp16 LSB
    shift_m1: Signal
    ebase: Signal  # the biased exponent's contribution, moved to its field


class _NarrowRounded(NamedTuple):
    """After :func:`narrow_round`: the kept significand and whether it rounds up."""

    sign: Value
    nan: Signal
    top: Signal
    q: Signal
    up: Signal
    ebase: Signal


def narrow_prep(m: Module, a, name: str) -> _NarrowPrep:
    """First part of FP32 -> fp16 :func:`narrow`: the exponent's range and the shift."""
    ebits, mbits = _FIELDS["f16"]
    emin = 2 - (1 << (ebits - 1))
    exp, man = a[23:31], a[:23]
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
    ebase = Signal(range(0, 1 << 20), name=f"{name}_ebase")
    m.d.comb += ebase.eq(Mux(e > emin, e - emin, 0) << mbits)
    nan, top = Signal(name=f"{name}_nan"), Signal(name=f"{name}_top")
    m.d.comb += [top.eq(exp == 0xFF), nan.eq((exp == 0xFF) & (man != 0))]
    return _NarrowPrep(a[31], nan, top, sig, shift, shift_m1, ebase)


def narrow_round(m: Module, p: _NarrowPrep, name: str) -> _NarrowRounded:
    """Second part of :func:`narrow`: the kept bits and the round-to-nearest-even decision."""
    q = Signal(25, name=f"{name}_q")
    rem = Signal(24, name=f"{name}_rem")
    half = Signal(32, name=f"{name}_half")
    mask = Signal(32, name=f"{name}_mask")
    m.d.comb += [q.eq(p.sig >> p.shift), mask.eq((Const(1, 33) << p.shift) - 1),
                 rem.eq(p.sig & mask), half.eq(Const(1, 32) << p.shift_m1)]
    up = Signal(name=f"{name}_up")
    m.d.comb += up.eq((rem > half) | ((rem == half) & q[0]))
    return _NarrowRounded(p.sign, p.nan, p.top, q, up, p.ebase)


def narrow_pack(m: Module, r: _NarrowRounded, name: str) -> Signal:
    """Last part of :func:`narrow`: the rounded encoding, overflow to infinity, NaN."""
    ebits, mbits = _FIELDS["f16"]
    inf = ((1 << ebits) - 1) << mbits
    out = Signal(16, name=f"{name}_h")
    biased = Signal(range(0, 1 << 20), name=f"{name}_enc")
    m.d.comb += biased.eq(r.ebase + r.q + r.up)
    with m.If(r.nan):
        m.d.comb += out.eq(HALF_NAN)
    with m.Elif(r.top | (biased >= inf)):
        m.d.comb += out.eq(Cat(Const(inf, 15), r.sign))
    with m.Else():
        m.d.comb += out.eq(Cat(biased[:15], r.sign))
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


class _Control(NamedTuple):
    """The op's choices in segment A, decoded before the operand register."""

    wide_hi: Signal  # hcvt.hh2f / bh2f: widen a's high half
    wide_bf: Signal  # hcvt.bl2f / bh2f: widen from bf16
    arith: Signal  # the packed arithmetic (else a conversion)
    bf: Signal  # the arithmetic's format: bf16, else fp16
    y_one: Signal  # hadd2, hsub2: y is 1.0 in each half (else b)
    z_b: Signal  # hadd2, hsub2: z is b (else -0 or c)
    z_neg: Signal  # hsub2: b's signs flipped; hmul2: z is -0 in each half


def _decode_op(m: Module, op) -> _Control:
    """The :class:`_Control` bits of ``op``."""
    v = Value.cast(op)
    add_sub = (HalfOp.HADD2_F16, HalfOp.HADD2_BF16, HalfOp.HSUB2_F16, HalfOp.HSUB2_BF16)
    terms = {
        "wide_hi": v.matches(HalfOp.HCVT_HH2F, HalfOp.HCVT_BH2F),
        "wide_bf": v.matches(HalfOp.HCVT_BL2F, HalfOp.HCVT_BH2F),
        "arith": v.matches(*_F16_OPS, *_BF16_OPS),
        "bf": v.matches(*_BF16_OPS),
        "y_one": v.matches(*add_sub),
        "z_b": v.matches(*add_sub),
        "z_neg": v.matches(HalfOp.HSUB2_F16, HalfOp.HSUB2_BF16,
                           HalfOp.HMUL2_F16, HalfOp.HMUL2_BF16),
    }
    ctl = _Control(**{f: Signal(name=f"ctl_{f}_d") for f in _Control._fields})
    m.d.comb += [getattr(ctl, f).eq(t) for f, t in terms.items()]
    return ctl


class HalfUnit(wiring.Component):
    """Pipelined half-precision conversions and packed arithmetic of one lane, one operation
    per enabled cycle.

    Four segments, each a pipeline stage when the unit has the cycles for it:

    A: operand selection (by the op's bits, decoded before the operand register),
       widening, the narrowing's exponent range and shift,
       each half's fused multiply-add up to its terms (:func:`fma_terms`: unpack, product,
       which term is big and how far the other shifts).
    B: the narrowing's kept bits and rounding decision; each half's small term aligned,
       the sum and its magnitude (:func:`fma_sum`).
    C: the narrowing's encoding (the conversions' result final); each half's leading-zero
       count and where its kept LSB lies (:func:`fma_normal`).
    D: each half's rounding and encoding (:func:`fma_pack`), the result word.

    ``latency`` 2 cuts between B and C (the unit's first form: the conversions and the
    sums | the rounding), 4 between every two, 5 also registers the operands before A; the
    core's form is 5 with the last register its user's (``output_register`` False), the
    segments filling ex1, ex2, mem and wb.

    Parameters
    ----------
    gated : bool
        Take the operands on a gated clock (the simulation model's form, see the module
        docstring; every segment runs after them and the result is delayed under ``en``);
        False registers the segments' outputs under a clock enable, the form an FPGA wants
        (:attr:`simtgpu.rtl.configs.RtlConfig.clock_gating`). Same function, same timing.
    latency : int
        Enabled cycles from operands to ``result``: 2 (the default), 4 or 5.
    output_register : bool
        False: the last of the ``latency`` registers is the user's, and ``result`` shows a
        cycle earlier, from logic (as :class:`~simtgpu.rtl.fpu.Fpu`'s).
    last_enable : bool
        The unit's last register loads under ``en_last`` (as :class:`~simtgpu.rtl.fpu.
        Fpu`'s); needs two registers of the unit's own.

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
    en_last : In(1)
        With ``last_enable`` only: advance the last register.
    result : Out(32)
        Result bits of the operation presented ``latency`` enabled cycles earlier (with
        ``valid``; one fewer without the output register).
    """

    def __init__(self, gated: bool = True, latency: int = LATENCY,
                 output_register: bool = True, last_enable: bool = False) -> None:
        if latency not in _CUTS:
            self._MustUse__silence = True
            raise ValueError(f"HalfUnit: latency must be one of {sorted(_CUTS)}, not "
                             f"{latency!r}")
        if last_enable and latency - (not output_register) < 2:
            self._MustUse__silence = True
            raise ValueError("HalfUnit: last_enable needs two registers of the unit's own")
        self.gated = gated
        self.latency = latency
        self.output_register = output_register
        self.last_enable = last_enable
        super().__init__({
            "en": In(1), "valid": In(1), "op": In(HalfOp),
            "a": In(32), "b": In(32), "c": In(32), "result": Out(32),
            **({"en_last": In(1)} if last_enable else {}),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        take = Signal()
        m.d.comb += take.eq(self.en & self.valid)
        registers = self.latency - (0 if self.output_register else 1)  # the unit's own
        # the op decoded before the operand register (in the core, in rr): segment A starts
        # at the choices it makes, not at the op's decoding
        ctl = _decode_op(m, self.op)
        if self.gated:
            # the operands, registered on the gated clock; every segment after them
            op = Signal(HalfOp)
            a, b, c = Signal(32), Signal(32), Signal(32)
            ctl_q = _Control(*(Signal.like(v, name=f"ctl_{f}")
                               for f, v in zip(_Control._fields, ctl, strict=True)))
            m.d[gated_domain(m, "half", take)] += [
                op.eq(self.op), a.eq(self.a), b.eq(self.b), c.eq(self.c),
                *(q.eq(v) for q, v in zip(ctl_q, ctl, strict=True))]
            ctl = ctl_q
            cuts, delays = (), registers - 1
        else:
            op, a, b, c = self.op, self.a, self.b, self.c
            cuts = _CUTS[self.latency]
            delays = registers - len(cuts)
        last_en = self.en_last if self.last_enable else None
        # the last register: a delay register where there is one, else the last cut
        boundary = Cuts(m, cuts, take, self.en, last_cut_enable(_CUTS[5], cuts, last_en, delays))
        op, ctl, a, b, c = boundary("in", (op, ctl, a, b, c))
        seg_a = boundary("ab", self._segment_a(m, op, ctl, a, b, c))
        seg_b = boundary("bc", self._segment_b(m, seg_a))
        seg_c = boundary("cd", self._segment_c(m, seg_b))
        # each half of the word: the rounded encoding where the arithmetic's result is not
        # special and does not overflow, else what is known before the rounding's sum (a
        # special value, the overflow's infinity, or the conversion's half), so the late
        # encoding passes one choice
        halves = []
        for i, (half, n) in enumerate(zip(("lo", "hi"), seg_c.halves, strict=True)):
            m.submodules[f"pack_{half}"] = sub = Module()
            packed = fma_pack(sub, n, f"fma_{half}")
            normal = seg_c.arith & ~packed.special
            early = Mux(normal, packed.infinity,
                        Mux(seg_c.arith, packed.special_value, seg_c.conv[16 * i:16 * (i + 1)]))
            halves.append(Mux(normal & ~packed.over, packed.rounded, early))
        word = Signal(32)
        m.d.comb += word.eq(Cat(*halves))
        m.d.comb += self.result.eq(delayed(m, self.en, word, delays, last_en if delays else None))
        return m

    @staticmethod
    def _segment_a(m: Module, op, ctl: "_Control", a, b, c) -> "_SegA":
        """Widening, the narrowing's shift, each half's terms."""
        m.submodules.seg_a = m = Module()
        # the widening reads one half of ``a`` at a time: it is chosen first
        a_half = Signal(16)
        m.d.comb += a_half.eq(Mux(ctl.wide_hi, a[16:], a[:16]))
        wide = Signal(32, name="wide")
        m.d.comb += wide.eq(Mux(ctl.wide_bf, widen(m, a_half, "bf16", "bw"),
                                widen(m, a_half, "f16", "hw")))
        arith = Signal(name="arith")
        m.d.comb += arith.eq(ctl.arith)
        # the packed arithmetic: one fused x * y + z per half and format
        bf = ctl.bf  # the arithmetic's format: bf16, else fp16
        one = Signal(16)
        m.d.comb += one.eq(Mux(bf, 0x3F80, 0x3C00))
        x, y, z = Signal(32), Signal(32), Signal(32)
        # hadd2: a * 1 + b; hsub2: a * 1 + (-b); hmul2: a * b + (-0); hfma2: a * b + c
        m.d.comb += [x.eq(a), y.eq(Mux(ctl.y_one, Cat(one, one), b)),
                     z.eq(Mux(ctl.z_b, b ^ Mux(ctl.z_neg, 0x80008000, 0),
                              Mux(ctl.z_neg, 0x80008000, c)))]
        halves = []
        for half, sl in (("lo", slice(0, 16)), ("hi", slice(16, 32))):
            m.submodules[f"terms_{half}"] = sub = Module()
            # y's and z's exponents from their candidates' (b, c and the constants 1.0 and
            # -0), which segment A has before the choice of y and z
            ey = Mux(ctl.y_one, Mux(bf, _BIAS["bf16"], _BIAS["f16"]), exponent1(b[sl], bf))
            ez = Mux(ctl.z_b, exponent1(b[sl], bf), Mux(ctl.z_neg, 1, exponent1(c[sl], bf)))
            halves.append(fma_terms(sub, x[sl], y[sl], z[sl], bf, f"fma_{half}", (ey, ez)))
        op_q = Signal(HalfOp, name="seg_a_op")
        m.d.comb += op_q.eq(op)
        return _SegA(op_q, arith, wide, narrow_prep(m, a, "ha"), narrow_prep(m, b, "hb"),
                     _narrow_bf16(m, a, "ba"), _narrow_bf16(m, b, "bb"), *halves)

    @staticmethod
    def _segment_b(m: Module, s: "_SegA") -> "_SegB":
        """The narrowing's rounding decision, each half's aligned sum."""
        m.submodules.seg_b = m = Module()
        halves = []
        for half, t in zip(("lo", "hi"), (s.terms_lo, s.terms_hi), strict=True):
            m.submodules[f"sum_{half}"] = sub = Module()
            halves.append(fma_sum(sub, t, f"fma_{half}"))
        return _SegB(s.op, s.arith, s.wide, narrow_round(m, s.ha, "ha"),
                     narrow_round(m, s.hb, "hb"), s.ba, s.bb, *halves)

    @staticmethod
    def _segment_c(m: Module, s: "_SegB") -> "_SegC":
        """The conversions' result word (0 for the arithmetic), each half's normalisation."""
        m.submodules.seg_c = m = Module()
        conv = Signal(32, name="conv")
        h_a, h_b = narrow_pack(m, s.ha, "ha"), narrow_pack(m, s.hb, "hb")
        with m.Switch(s.op):
            for hop, value in ((HalfOp.HCVT_HL2F, s.wide), (HalfOp.HCVT_HH2F, s.wide),
                               (HalfOp.HCVT_BL2F, s.wide), (HalfOp.HCVT_BH2F, s.wide),
                               (HalfOp.HCVT_F2H, h_a), (HalfOp.HCVT_F2B, s.ba),
                               (HalfOp.HCVT_F2H2, Cat(h_a, h_b)),
                               (HalfOp.HCVT_F2B2, Cat(s.ba, s.bb))):
                with m.Case(hop):
                    m.d.comb += conv.eq(value)
        halves = []
        for half, al in zip(("lo", "hi"), (s.sum_lo, s.sum_hi), strict=True):
            m.submodules[f"normal_{half}"] = sub = Module()
            halves.append(fma_normal(sub, al, f"fma_{half}"))
        return _SegC(s.arith, conv, tuple(halves))


_WIDE_SIG = 11  # significand bits of the wider format (fp16), which holds bf16's 8


_GAP = 2 * _WIDE_SIG + 4  # where the big term's LSB sits in the sum's window
_MBITS = {fmt: mb for fmt, (_, mb) in _FIELDS.items()}
_BIAS = {fmt: (1 << (eb - 1)) - 1 for fmt, (eb, _) in _FIELDS.items()}
_CUTS = {2: ("bc",), 4: ("ab", "bc", "cd"), 5: ("in", "ab", "bc", "cd")}
"""Segment boundaries that are registers, by latency."""


class _Specials(NamedTuple):
    """What one half's result needs of its operands besides the sum, carried unchanged from
    :func:`fma_terms` to :func:`fma_pack`."""

    bf: Signal  # the format
    nan: Signal  # the result is NaN
    prod_inf: Signal  # the product is infinite
    iz: Signal  # the addend is infinite
    sp: Signal  # the product's sign
    sz: Signal  # the addend's sign


class _Terms(NamedTuple):
    """One half's fused multiply-add after :func:`fma_terms`."""

    big: Signal  # the term whose LSB weighs more (a zero term is never big)
    small: Signal  # the other term
    lbig: Signal  # the weight of the big term's LSB
    dclamp: Signal  # how far the small term shifts right below the big one's window place
    sub: Signal  # the signs differ: subtract
    s_big: Signal  # the big term's sign
    spec: _Specials


class _Aligned(NamedTuple):
    """One half's fused multiply-add after :func:`fma_sum`: the sum, and what the kept LSB's
    place depends on besides the sum's leading-zero count, worked out beside the sum."""

    mag: Signal  # the magnitude of the sum of the aligned terms (the big one at bit _GAP)
    sign: Signal  # the sum's sign
    thr: Signal  # leading zeros below which the sum is normal: e > emin <=> lz < thr
    c2: Signal  # window bit of the kept LSB for a subnormal result
    sh2: Signal  # c2 clamped to the window
    spec: _Specials


class _Normal(NamedTuple):
    """One half's fused multiply-add after :func:`fma_normal`: the sum and where its kept
    significand lies."""

    mag: Signal
    sign: Signal
    is_zero: Signal  # the sum is exactly zero
    lsb: Signal  # window bit of the kept LSB (negative: below the window)
    sh: Signal  # lsb clamped to the window: the right shift to the kept LSB
    base_enc: Signal  # the encoding's exponent field, before the significand is added
    limit: Signal  # the infinity's encoding
    spec: _Specials


class _SegA(NamedTuple):
    op: Signal
    arith: Signal
    wide: Signal
    ha: _NarrowPrep
    hb: _NarrowPrep
    ba: Signal
    bb: Signal
    terms_lo: _Terms
    terms_hi: _Terms


class _SegB(NamedTuple):
    op: Signal
    arith: Signal
    wide: Signal
    ha: _NarrowRounded
    hb: _NarrowRounded
    ba: Signal
    bb: Signal
    sum_lo: _Aligned
    sum_hi: _Aligned


class _SegC(NamedTuple):
    arith: Signal
    conv: Signal
    halves: tuple[_Normal, _Normal]


def exponent1(v: Value, bf: Value) -> Value:
    """The exponent field of the 16-bit ``v`` in its format, 1 for a zero or subnormal."""
    e = Mux(bf, v[7:15], v[10:15])
    return Mux(e == 0, 1, e)


def fma_terms(m: Module, x, y, z, bf, name: str,
              exps: tuple[Value, Value] | None = None) -> _Terms:
    """``x * y + z`` on 16-bit patterns, fp16 (``bf`` 0) or bf16 (``bf`` 1) chosen per
    operation, rounded once (RNE), subnormals kept, NaN -> 0x7fff: its first part, up to
    the terms and how they align; :func:`fma_sum`, :func:`fma_normal` and :func:`fma_pack`
    end it. ``exps``: :func:`exponent1` of ``y`` and ``z``, where the caller has them
    sooner than ``y`` and ``z`` (chosen among their candidates' own).

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
        e1 = Signal(8, name=f"{name}_{tag}_e1")  # the exponent field, 1 for a subnormal
        m.d.comb += e1.eq(Mux(e == 0, 1, e))
        w = Signal(signed(10), name=f"{name}_{tag}_w")  # weight of the significand's LSB
        m.d.comb += w.eq(e1 - lsb_bias)
        return v[15], sig, w, e1, top & (man != 0), top & (man == 0), sig == 0

    lsb_bias = pick(_BIAS["f16"] + _MBITS["f16"], _BIAS["bf16"] + _MBITS["bf16"])
    sx, gx, wx, ex, nx_, ix, zx = unpack(x, "x")
    sy, gy, wy, ey, ny, iy, zy = unpack(y, "y")
    sz, gz, lz, ez, nz, iz, zz = unpack(z, "z")
    if exps is not None:  # the same values, each chosen after its candidates' own
        ey, ez = exps
    sp = sx ^ sy
    prod = Signal(2 * _WIDE_SIG, name=f"{name}_prod")
    lp = Signal(signed(11), name=f"{name}_lp")  # weight of the product's LSB
    m.d.comb += [prod.eq(gx * gy), lp.eq(wx + wy)]
    # d = lz - lp = ez - ex - ey + lsb_bias, how far z's LSB lies above the product's, and
    # -d, each from the exponents (ez chosen beside z, by the caller), not from the weights
    # after z's choice and their sum: one chain less in series. (Carry-save levels instead,
    # as the FPU's sum_of, were 200 LUT4 more a lane here and no faster.)
    d = Signal(signed(12), name=f"{name}_d")
    nd = Signal(signed(12), name=f"{name}_nd")
    m.d.comb += [d.eq(ez + lsb_bias - (ex + ey)), nd.eq((ex + ey) - (ez + lsb_bias))]
    # the product is zero exactly when a factor's significand is (no multiply needed)
    z_big = Signal(name=f"{name}_zbig")
    m.d.comb += z_big.eq(~zz & (~d[-1] | zx | zy))
    big = Signal(len(prod), name=f"{name}_big")
    small = Signal(len(prod), name=f"{name}_small")
    lbig = Signal(signed(11), name=f"{name}_lbig")
    diff = Signal(11, name=f"{name}_diff")
    m.d.comb += [big.eq(Mux(z_big, gz, prod)), small.eq(Mux(z_big, prod, gz)),
                 lbig.eq(Mux(z_big, lz, lp)), diff.eq(Mux(z_big, d, nd))]
    # the clamp's compare made on both candidates beside the choice between them, not on
    # the chosen one after it (d, its sign, the choice and a compare were four carry chains
    # in series)
    dclamp = Signal(range(gap + len(prod) + 2), name=f"{name}_dclamp")
    limit = gap + len(prod)
    m.d.comb += dclamp.eq(Mux(Mux(z_big, d[:11] > limit, nd[:11] > limit), limit + 1, diff))
    sub, s_big = Signal(name=f"{name}_sub"), Signal(name=f"{name}_sbig")
    m.d.comb += [s_big.eq(Mux(z_big, sz, sp)), sub.eq(sz ^ sp)]
    nan, prod_inf = Signal(name=f"{name}_nan"), Signal(name=f"{name}_pinf")
    m.d.comb += [prod_inf.eq(ix | iy),
                 nan.eq(nx_ | ny | nz | (ix & zy) | (iy & zx) | ((ix | iy) & iz & (sp != sz)))]
    named = []
    for v, tag in ((bf, "bf"), (iz, "iz"), (sp, "sp"), (sz, "sz")):
        sig = Signal(name=f"{name}_{tag}")
        m.d.comb += sig.eq(v)
        named.append(sig)
    bf_, iz_, sp_, sz_ = named
    return _Terms(big, small, lbig, dclamp, sub, s_big,
                  _Specials(bf_, nan, prod_inf, iz_, sp_, sz_))


def fma_sum(m: Module, t: _Terms, name: str) -> _Aligned:
    """The small term shifted into place (its lost bits jammed into bit 0), the sum and its
    magnitude."""
    gap = _GAP
    width = len(t.big) + gap + 2
    wbig = Signal(width, name=f"{name}_wbig")
    wsmall = Signal(width, name=f"{name}_wsmall")
    m.d.comb += wbig.eq(t.big << gap)
    # small placed gap bits up, then one right shift by dclamp; what falls below bit 0
    # (only when it is more than gap) is jammed into it: small's bits j with gap + j below
    # dclamp, ORed under a mask decoded from dclamp beside the shift (ORed stage by stage
    # behind it, they were the shifter's levels and a wide OR in front of the adder's
    # first bit, as fma_pack's sticky bit was)
    v = Cat(Const(0, gap), t.small)
    for i in range(len(t.dclamp)):  # a stage per bit of the amount
        nv = Signal(len(v), name=f"{name}_al{i}")
        m.d.comb += nv.eq(Mux(t.dclamp[i], v >> (1 << i), v))
        v = nv
    dropped = Signal(len(t.small), name=f"{name}_dropped")
    for j in range(len(t.small)):
        m.d.comb += dropped[j].eq(t.small[j] & at_least(t.dclamp, gap + j + 1))
    lost = Signal(name=f"{name}_lost")
    m.d.comb += lost.eq(dropped.any())
    m.d.comb += wsmall.eq(v | lost)
    sub = t.sub
    # one adder: big + small, or big - small as big + ~small + 1 (the carry-in rides in a
    # bit below both), then the magnitude
    raw = Signal(width + 3, name=f"{name}_raw")
    m.d.comb += raw.eq(Cat(sub, wbig, Const(0, 2))
                       + Cat(sub, wsmall ^ sub.replicate(width), sub, sub))
    total = Signal(signed(width + 2), name=f"{name}_sum")
    m.d.comb += total.eq(raw[1:])
    neg = Signal(name=f"{name}_neg")
    m.d.comb += neg.eq(total[-1])
    # the magnitude: where big - small is negative, small - big from an adder of its own
    # beside it, not the sum negated by a second carry chain after the first
    rev = Signal(width + 1, name=f"{name}_rev")
    m.d.comb += rev.eq(wsmall - wbig)
    sign = Signal(name=f"{name}_sign")
    mag = Signal(width + 1, name=f"{name}_mag")
    m.d.comb += [sign.eq(t.s_big ^ neg), mag.eq(Mux(neg, rev, total))]
    # beside the sum: window bit 0 weighs 2**(lbig - gap), so a leading one at bit k (lz
    # leading zeros) weighs 2**e, e = lbig - gap + len(mag) - 1 - lz; the result is normal
    # when e > emin, and a subnormal's kept LSB is at window bit emin - mb - (lbig - gap)
    bf = t.spec.bf
    emin = Mux(bf, 1 - _BIAS["bf16"], 1 - _BIAS["f16"])  # the smallest normal's exponent
    mb = Mux(bf, _MBITS["bf16"], _MBITS["f16"])  # fraction bits kept
    thr = Signal(signed(12), name=f"{name}_thr")
    c2 = Signal(signed(12), name=f"{name}_c2")
    sh2 = Signal(7, name=f"{name}_sh2")
    m.d.comb += [thr.eq(t.lbig - gap + len(mag) - 1 - emin), c2.eq(emin - mb - (t.lbig - gap)),
                 sh2.eq(Mux(c2 > width + 2, width + 2, Mux(c2 < 0, 0, c2)))]
    return _Aligned(mag, sign, thr, c2, sh2, t.spec)


def fma_normal(m: Module, al: _Aligned, name: str) -> _Normal:
    """Where the sum's leading one is, so where its kept LSB lies (the format's precision,
    or the subnormal range's), and the encoding's exponent part: subtractions of the
    leading-zero count from what :func:`fma_sum` prepared, no adder after another."""
    mbits = _MBITS

    def pick(f16, bf16):
        return Mux(al.spec.bf, bf16, f16)

    is_zero, lz_cnt = lzc(al.mag)
    zero = Signal(name=f"{name}_zero")
    lz = Signal(len(lz_cnt), name=f"{name}_lz")
    m.d.comb += [zero.eq(is_zero), lz.eq(lz_cnt)]
    normal = Signal(name=f"{name}_normal")  # e > emin
    m.d.comb += normal.eq(lz < al.thr)
    # a normal result keeps mb bits below its leading one: LSB at window bit c1 - lz
    c1 = pick(len(al.mag) - 1 - mbits["f16"], len(al.mag) - 1 - mbits["bf16"])
    d1 = Signal(signed(9), name=f"{name}_d1")
    m.d.comb += d1.eq(c1 - lz)
    lsb = Signal(signed(12), name=f"{name}_lsb")  # window bit of the kept LSB
    sh = Signal(7, name=f"{name}_sh")  # lsb clamped to the window: the right shift
    m.d.comb += [lsb.eq(Mux(normal, d1, al.c2)),
                 sh.eq(Mux(normal, Mux(d1 < 0, 0, d1), al.sh2))]
    ebias = Signal(range(0, 1 << 10), name=f"{name}_ebias")  # biased exponent - 1
    m.d.comb += ebias.eq(Mux(normal, al.thr - lz, 0))
    base_enc = Signal(range(0, 1 << 24), name=f"{name}_benc")
    m.d.comb += base_enc.eq(pick(ebias << mbits["f16"], ebias << mbits["bf16"]))
    limit = Signal(15, name=f"{name}_inf")
    m.d.comb += limit.eq(pick(0x7C00, 0x7F80))
    return _Normal(al.mag, al.sign, zero, lsb, sh, base_enc, limit, al.spec)


class _Packed(NamedTuple):
    """One half's result after :func:`fma_pack`, in parts chosen last: a special value (NaN,
    infinity or zero, known from the operands since segment A), the infinity of an
    overflow and the rounded encoding, which arrive late."""

    special: Signal  # the result is ``special_value``
    special_value: Signal
    over: Signal  # else: the rounding overflows to ``infinity``
    infinity: Value
    rounded: Value  # else: the rounded encoding, which arrives last


def fma_pack(m: Module, n: _Normal, name: str) -> _Packed:
    """The end of the fused multiply-add: the sum's magnitude shifted to its kept LSB,
    rounded once, and the 16-bit pattern (specials apart)."""
    # The kept significand has at most _WIDE_SIG bits (its leading one at mb, or below it
    # for a subnormal), so only those, the guard bit below them and a sticky OR of the rest
    # are formed: one right shift of the magnitude with a bit below it (the guard of sh 0).
    v = Cat(Const(0, 1), n.mag)
    for i in range(len(n.sh)):  # a stage per bit of the amount
        nv = Signal(len(v), name=f"{name}_rs{i}")
        m.d.comb += nv.eq(Mux(n.sh[i], v >> (1 << i), v))
        v = nv
    q, guard = v[1:_WIDE_SIG + 1], v[0]
    # What falls below the guard bit, the magnitude's bits 0 to sh - 2, ORed under a mask
    # decoded from sh beside the shift: ORed stage by stage behind it, the sticky bit was
    # the shifter's levels and then a 52-input OR before the rounding's adder (the unit's
    # slowest segment; docs/performance.md, section synth-units).
    below = Signal(len(n.mag), name=f"{name}_below")
    for j in range(len(n.mag)):
        m.d.comb += below[j].eq(n.mag[j] & at_least(n.sh, j + 2))
    sticky = Signal(name=f"{name}_sticky")
    m.d.comb += sticky.eq(below.any())
    # a kept LSB below the window (lsb < 0) happens only for results far above the
    # subnormal range, where the window holds the exact sum (under 2**mb) and no rounding
    # is needed
    exact = n.lsb < 0
    up = Signal(name=f"{name}_up")
    m.d.comb += up.eq(~exact & guard & (sticky | q[0]))
    kept = Signal(_WIDE_SIG + 1, name=f"{name}_kept")
    m.d.comb += kept.eq(Mux(exact, n.mag[:_WIDE_SIG] << (-n.lsb)[:4], q))
    # the encoding: exponent part + kept significand + rounding increment, one adder (the
    # increment rides in a bit below both operands)
    enc = Signal(range(0, 1 << 24), name=f"{name}_enc")
    m.d.comb += enc.eq((Cat(up, n.base_enc) + Cat(up, kept))[1:])
    # enc >= limit (the exponent field all ones or beyond): a compare with the format's
    # constant, a few LUTs on the encoding's top bits, rather than a comparator with the
    # chosen limit, a second carry chain behind the adder's
    over = Signal(name=f"{name}_over")
    top = enc[15:] != 0
    m.d.comb += over.eq(top | Mux(n.spec.bf, enc[7:15] == 0xFF, enc[10:15] == 0x1F))
    # the specials, from segment A's flags and C's zero test: worked out beside the
    # rounding and chosen after it, so that the late encoding passes one choice, not a
    # chain of the specials' priorities
    spec = n.spec
    special = Signal(name=f"{name}_special")
    special_value = Signal(16, name=f"{name}_special_value")
    m.d.comb += special.eq(spec.nan | spec.prod_inf | spec.iz | n.is_zero)
    with m.If(spec.nan):
        m.d.comb += special_value.eq(HALF_NAN)
    with m.Elif(spec.prod_inf):
        m.d.comb += special_value.eq(Cat(n.limit, spec.sp))
    with m.Elif(spec.iz):
        m.d.comb += special_value.eq(Cat(n.limit, spec.sz))
    with m.Else():
        m.d.comb += special_value.eq(Cat(Const(0, 15), spec.sp & spec.sz))
    return _Packed(special, special_value, over, Cat(n.limit, n.sign), Cat(enc[:15], n.sign))
