"""Matrix unit: one warp's ``mma.f16``/``mma.bf16`` (``D = A x B + C``) per core.

An ``mma`` names three source groups (A: 4 registers, B: 2 or 4, C: 4) and a destination
group of 4 (isa/mma.py), more than the register file's three read ports and one write port
can move in a cycle. The unit sequences them around the pipeline:

1. **Operand reads.** The ``mma`` reads A0, B0 and C0 through the ordinary ``is``/``rr``
   path as it issues. In each of the next three cycles in which the read ports advance
   (``ren``) the unit drives them itself (``read`` high: ``is`` issues nothing) with
   A[r], B[r], C[r] for r = 1, 2, 3, and latches the data a cycle later. Nothing of the
   warp can write a source meanwhile: the ``mma`` issued with none of its registers pending
   and the read cycles are issue bubbles.
2. **Start.** The ``mma`` leaves ex1 as a deferred instruction (``ex1.start``). A
   divergent or stale one (``ex1.abort``) drops the unit back to idle with nothing written.
3. **Compute.** ``dots`` dot-product trees, each ``k`` products (:func:`half_product`:
   ``fmul`` of two widened halves, exact, so no rounding), a balanced tree of ``log2 k``
   levels of FP32 adders (:func:`fp32_add`) and one adder for C (so bit for bit
   ``numerics.mma``: exact half-to-FP32 conversion, ``fmul``, the pairwise ``fadd`` tree,
   ``fadd`` of C). The nodes are made for this place rather than the lanes' fused
   :class:`~simtgpu.rtl.fpu.Fpu`, a third of its Verilog each (many copies cost the model
   and the export), and pipelined so that the trees do not bound the clock: a product is
   :data:`PRODUCT_STAGES` register stages, an adder :data:`ADD_STAGES` (one whole FP32
   add per stage ran at 20 MHz on an ECP5). The trees take ``dots`` output elements per
   cycle, D3's first, then D2's, D1's and D0's, each register's in the order of its lanes
   (so that the write-back of D3, D2 and D1 overlaps the trees); the last result arrives
   :data:`SELECT_STAGES` + :func:`tree_latency` ``(k)`` cycles (1 + 2 + 3 (log2 k + 1):
   the step's operands picked into registers, then the tree) after the last step. They run
   on the falling edge of a clock gated by ``busy`` and read only registers (their own and
   the core clock's operand buffers), so no edge samples a signal it changes and an idle
   unit costs a Verilator model nothing (see :meth:`MatrixUnit.elaborate`).
4. **Write-back.** The destination registers D3, D2, D1, D0 are offered in turn to the late
   write-back (``result``, taken by ``take``), each as soon as the trees have filled it
   and each clearing its scoreboard bit; the last one (D0, as on the ISS) carries the
   instruction's one retire record. D3 to D1 go while the trees work on the later
   registers, so the long trees cost only D0's write-back after them.

One ``mma`` is in the unit at a time: ``busy`` from its issue until its last register is
taken (the next ``mma`` waits in ``is`` as a structural hazard). Cycles per ``mma`` with
no stall and a free write port (:func:`mma_cycles`): the issue, 3 read cycles, 2 to latch
and start, ``4 * lanes / dots`` compute steps, the operand selection and the tree latency
(:data:`SELECT_STAGES` + :func:`tree_latency`) and D0's write-back (tiny, 1 tree, and small,
2 trees: 38 cycles).
"""

from amaranth import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    DomainRenamer,
    EnableInserter,
    Module,
    Mux,
    ResetSignal,
    Signal,
    Value,
    signed,
)
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa.mma import mma_shape

from . import reuse
from .fp_utils import CANONICAL_NAN, lzc, unpack

__all__ = ["ADD_STAGES", "PRODUCT_STAGES", "SELECT_STAGES", "DotTree", "MatrixUnit",
           "mma_cycles", "tree_latency"]


PRODUCT_STAGES = 2
"""Registers of a product node (:func:`half_product`), its output register included."""

ADD_STAGES = 3
"""Registers of an adder node (:func:`fp32_add`), its output register included."""

SELECT_STAGES = 1
"""Registers of the unit between its operand copies and a tree: the step's A and B elements
picked into registers, so that a tree's first stage has no multiplexer in front of it."""


def tree_latency(k: int) -> int:
    """Edges of the trees' clock from a tree's operands to its sum: the product's stages, then
    ``log2 k`` levels of adders and the adder of C, :data:`ADD_STAGES` each."""
    return PRODUCT_STAGES + ADD_STAGES * k.bit_length()


def mma_cycles(lanes: int, dots: int) -> int:
    """Cycles the unit is busy with one ``mma`` from its issue to its last write-back when
    the pipeline never stalls and the write port is free (the unit's throughput)."""
    s = mma_shape(lanes)
    # issue, 3 reads, the last latch, the start of the trees, the steps, the operand
    # selection and the tree latency, D0's write-back (D3 to D1 go while the trees work)
    return 1 + 3 + 1 + 1 + 4 * lanes // dots + SELECT_STAGES + tree_latency(s.k) + 1


def _unpack_half(m: Module, h, bf16, name: str):
    """Sign and 11-bit significand ``sig`` of the fp16 (``bf16`` low) or bf16 pattern ``h``
    (the exponent: :func:`half_product`), and whether it is a zero, an infinity or a NaN, as
    FP32 arithmetic with FTZ sees its exact widening (``numerics.f16_to_f32``/
    ``bf16_to_f32``): an fp16 subnormal keeps its value (its widening is a normal FP32), a
    bf16 subnormal reads as zero."""
    sig = Signal(11, name=f"{name}_sig")
    zero, inf, nan = (Signal(name=f"{name}_{x}") for x in ("zero", "inf", "nan"))
    ef, mf = h[10:15], h[:10]  # fp16
    eb, mb = h[7:15], h[:7]  # bf16
    with m.If(bf16):
        m.d.comb += [sig.eq(Cat(Const(0, 3), mb, 1)), zero.eq(eb == 0),
                     inf.eq((eb == 0xFF) & (mb == 0)), nan.eq((eb == 0xFF) & (mb != 0))]
    with m.Else():
        m.d.comb += [sig.eq(Cat(mf, ef != 0)), zero.eq((ef == 0) & (mf == 0)),
                     inf.eq((ef == 0x1F) & (mf == 0)), nan.eq((ef == 0x1F) & (mf != 0))]
    return h[15], sig, zero, inf, nan


def _cut(m: Module, regs: list | None, value, name: str) -> Signal:
    """``value`` as the named signal ``name``: a register between two stages of a node when
    ``regs`` collects them (the tree puts them in its domain), a wire when it is None (the
    node alone, combinational, as the tests of the nodes take it)."""
    r = Signal(Value.cast(value).shape(), name=name)
    if regs is None:
        m.d.comb += r.eq(value)
    else:
        regs.append(r.eq(value))
    return r


def half_product(m: Module, a, b, bf16, name: str, regs: list | None = None) -> Signal:
    """FP32 pattern of ``fmul(widen(a), widen(b))`` for two fp16 (``bf16`` low) or bf16
    patterns: the 11x11-bit product of the significands is exact in FP32's 24 bits, so
    there is no rounding; a result below 2**-126 is an exact subnormal (flushed to zero, as
    FTZ does) or underflows, one of 2**128 or more overflows to infinity.

    Two stages (``regs``: the register between them, see :func:`_cut`): the significands are
    normalised before the multiplier (only an fp16 subnormal has leading zeros, a
    leading-zero count of its 10 bits), so that the product needs a shift of at most one
    place after it instead of a leading-zero count and a shift of 22 bits behind the
    multiplier, one stage's worth of logic more."""
    def cut(v, tag):
        return _cut(m, regs, v, f"{name}_{tag}")

    sa, ma, za, ia, na = _unpack_half(m, a, bf16, f"{name}_a")
    sb, mb, zb, ib, nb = _unpack_half(m, b, bf16, f"{name}_b")
    # --- stage 1: the significands normalised (leading one at bit 10), their exponents
    norm_sig = []
    for h, sig, tag in ((a, ma, "a"), (b, mb, "b")):
        sub = ~bf16 & (h[10:15] == 0)  # fp16 subnormal (or zero: then the flags decide)
        lz = lzc(h[:10])[1]  # the leading one of the 10 fraction bits at 9 - lz
        sh = Signal(11, name=f"{name}_{tag}_sh")
        m.d.comb += sh.eq(Cat(Const(0, 1), (h[:10] << lz)[:10]))  # lz + 1 places, no adder
        # unbiased exponent of the normalised significand, each choice straight from the
        # pattern's bits: fp16 e - 15 (a subnormal: 1 - 15 less the shift lz + 1), bf16
        # e - 127
        en = Signal(signed(10), name=f"{name}_{tag}_en")
        sn = Signal(11, name=f"{name}_{tag}_sn")
        m.d.comb += [en.eq(Mux(bf16, h[7:15] - 127, Mux(sub, -15 - lz, h[10:15] - 15))),
                     sn.eq(Mux(sub, sh, sig))]
        norm_sig.append((cut(en, f"{tag}e"), cut(sn, f"{tag}m")))
    (ea1, ma1), (eb1, mb1) = norm_sig
    # the range checks: only bf16 products leave FP32's normal range (fp16 ones lie within
    # 2**-48 .. 2**32), and a bf16 significand needs no normalising, so they come from the
    # two exponent fields alone, beside the normalising: the biased exponent is
    # ea + eb - 126 for a product in [2, 4) (top bit set), one less in [1, 2)
    esum = Signal(9, name=f"{name}_es")
    m.d.comb += esum.eq(a[7:15] + b[7:15])
    sign = cut(sa ^ sb, "s")
    nan = cut(na | nb | (ia & zb) | (ib & za), "nan")
    # per top bit of the product: an infinity (an operand's, or overflow) or a zero (an
    # operand's, or underflow)
    inf_t = [cut(ia | ib | (bf16 & (esum >= 381 + 1 - t)), f"inf{t}") for t in (0, 1)]
    zero_t = [cut(za | zb | (bf16 & (esum <= 126 + 1 - t)), f"zero{t}") for t in (0, 1)]
    # --- stage 2: the product of two significands in [1, 2): in [1, 4), a shift of 0 or 1
    prod = Signal(22, name=f"{name}_p")
    m.d.comb += prod.eq(ma1 * mb1)
    top = prod[21]
    # the result's top 9 bits for either top bit and the fraction's mask, all beside the
    # multiplier, so that its top bit only picks
    hi, keep = [], []
    for t in (0, 1):
        e = Signal(8, name=f"{name}_e{t}")  # in range: 2**-126 <= product < 2**128
        m.d.comb += e.eq(ea1 + eb1 + (127 + t))
        h = Signal(9, name=f"{name}_h{t}")
        m.d.comb += h.eq(Mux(nan, Cat(Const(0xFF, 8), 0),
                             Cat(Mux(inf_t[t], 0xFF, Mux(zero_t[t], 0, e)), sign)))
        k = Signal(name=f"{name}_k{t}")
        m.d.comb += k.eq(~inf_t[t] & ~zero_t[t])
        hi.append(h)
        keep.append(k)
    frac = Signal(21, name=f"{name}_fr")
    m.d.comb += frac.eq(Mux(top, prod[:21] & keep[1].replicate(21),
                            Cat(Const(0, 1), prod[:20]) & keep[0].replicate(21)))
    out = Signal(32, name=name)
    # NaN: the canonical 0x7fffffff
    m.d.comb += out.eq(Cat(nan.replicate(2), frac | nan.replicate(21), Mux(top, hi[1], hi[0])))
    return out


def fp32_add(m: Module, a, b, name: str, regs: list | None = None) -> Signal:
    """FP32 pattern of ``numerics.fadd(a, b)``: FTZ in and out, round to nearest even,
    canonical NaN. A plain adder (align, add, normalise, round), much smaller than the
    lanes' fused datapath; a result below 2**-126 can only come from cancellation, which is
    exact, so flushing it needs no rounding.

    Three stages (``regs``: the two registers between them, see :func:`_cut`), in two paths
    so that no stage holds both a long alignment and a long normalisation (the classic
    near/far split): the sum ``t`` of the aligned significands (27 bits: 3 below the
    larger's, bit 0 sticky) has at most 2 leading zeros unless the operands' signs differ and
    their exponents by at most 1 (then the alignment is a shift of 0 or 1 place, nothing is
    sticky and the result is exact). The far path aligns in stages 1 and 2 and adds, and
    normalises by 0 to 2 places and rounds in stage 3; the near path subtracts in stage 1,
    counts leading zeros in stage 2 and normalises in stage 3. Bit for bit the single path
    of align, add, count, normalise, round that each path is a special case of."""
    def cut(v, tag):
        return _cut(m, regs, v, f"{name}_{tag}")

    x, y = unpack(m, a, f"{name}_x"), unpack(m, b, f"{name}_y")
    # --- stage 1: order, distance, the first alignment shifts, the near path's difference
    # named signals, not expressions: Amaranth writes an expression out anew at every use
    # swap (y the larger magnitude): the raw patterns compared, with no wait for the flush
    # to zero; a zero (a flushed subnormal included) below everything else
    raw_lt = Signal(name=f"{name}_rlt")
    swap = Signal(name=f"{name}_swap")
    m.d.comb += [raw_lt.eq(a[:31] < b[:31]), swap.eq(~y.zero & (x.zero | raw_lt))]
    eb = Signal(8, name=f"{name}_eb")
    mb = Signal(24, name=f"{name}_mb")
    sgn_b = Signal(name=f"{name}_sb")
    m.d.comb += [eb.eq(Mux(swap, y.exp, x.exp)), mb.eq(Mux(swap, y.mant, x.mant)),
                 sgn_b.eq(Mux(swap, y.sign, x.sign))]
    sub = Signal(name=f"{name}_sub")
    m.d.comb += sub.eq(x.sign ^ y.sign)
    # Everything else both ways round (p the larger, q the smaller), beside the compare
    # that then only picks one: the exponent difference, the alignment's first shift and
    # the near path's difference.
    # The smaller significand with 3 extra bits is shifted right by the difference (27 or
    # more leaves all in the sticky bit, bit 0): a stage per bit of the amount, each ORing
    # what it drops, 16 here, 8, 4, 2, 1 in stage 2. The near path: big - small aligned by
    # the difference's last bit (right when the exponents differ by 0 or 1).
    d0 = x.exp[0] ^ y.exp[0]
    ways = []
    for p, q, tag in ((x, y, "xy"), (y, x, "yx")):
        d = Signal(8, name=f"{name}_d{tag}")  # p.exp - q.exp; used when it is not negative
        amt = Signal(5, name=f"{name}_a{tag}")
        m.d.comb += [d.eq(p.exp - q.exp), amt.eq(Mux(d > 27, 27, d))]
        q27 = Cat(Const(0, 3), q.mant)
        v16, st16 = Signal(27, name=f"{name}_v{tag}"), Signal(name=f"{name}_st{tag}")
        by16 = d[4:].any()  # amt[4] without waiting for the clamp
        m.d.comb += [v16.eq(Mux(by16, q27 >> 16, q27)), st16.eq(by16 & (q27[:16] != 0))]
        n = Signal(28, name=f"{name}_nt{tag}")
        m.d.comb += n.eq(Cat(Const(0, 3), p.mant)
                         - Mux(d0, Cat(Const(0, 2), q.mant, Const(0, 1)), q27))
        ways.append((amt, d <= 1, v16, st16, n))
    (amt_x, close_x, v_x, st_x, nt_x), (amt_y, close_y, v_y, st_y, nt_y) = ways
    amount = Signal(4, name=f"{name}_amt")  # the rest of the shift
    close = Signal(name=f"{name}_close")  # the exponents differ by 0 or 1
    v, sticky = Signal(27, name=f"{name}_al4"), Signal(name=f"{name}_st4")
    nt = Signal(28, name=f"{name}_nt")
    m.d.comb += [amount.eq(Mux(swap, amt_y[:4], amt_x[:4])),
                 close.eq(Mux(swap, close_y, close_x)),
                 v.eq(Mux(swap, v_y, v_x)), sticky.eq(Mux(swap, st_y, st_x)),
                 nt.eq(Mux(swap, nt_y, nt_x))]

    def align(v, sticky, by, i):
        step = 1 << i
        nv, ns = Signal(27, name=f"{name}_al{i}"), Signal(name=f"{name}_st{i}")
        m.d.comb += [nv.eq(Mux(by, v >> step, v)), ns.eq(sticky | (by & (v[:step] != 0)))]
        return nv, ns

    # the specials, decided here, applied at the end: NaN; infinity of the larger's sign;
    # two zeros, a zero of sign x.sign & y.sign
    spec = Signal(name=f"{name}_sp")
    spec_nan = Signal(name=f"{name}_spn")
    spec_inf = Signal(name=f"{name}_spi")
    spec_sign = Signal(name=f"{name}_sps")
    m.d.comb += [spec.eq(x.nan | y.nan | x.inf | y.inf | (x.zero & y.zero)),
                 spec_nan.eq(x.nan | y.nan | (x.inf & y.inf & sub)),
                 spec_inf.eq(x.inf | y.inf),
                 spec_sign.eq(Mux(x.inf | y.inf, sgn_b, x.sign & y.sign))]
    v, sticky, amount = cut(v, "v1"), cut(sticky, "st1"), cut(amount, "amt1")
    mb, nt, sub, close = cut(mb, "mb1"), cut(nt, "nt1"), cut(sub, "sub1"), cut(close, "cl1")
    eb, sgn_b = cut(eb, "eb1"), cut(sgn_b, "sb1")
    spec, spec_nan = cut(spec, "sp1"), cut(spec_nan, "spn1")
    spec_inf, spec_sign = cut(spec_inf, "spi1"), cut(spec_sign, "sps1")
    # --- stage 2: the rest of the alignment and the sum; the near path's leading zeros
    for i in (3, 2, 1, 0):
        v, sticky = align(v, sticky, amount[i], i)
    big = Cat(Const(0, 3), mb)
    small = Signal(27, name=f"{name}_s")
    m.d.comb += small.eq(v | sticky)
    # one adder: big + small, or big + ~small + 1 (the carry-in in a bit below both); big's
    # magnitude is the larger, so the difference is never negative
    raw = Signal(29, name=f"{name}_raw")
    total = Signal(28, name=f"{name}_t")
    m.d.comb += [raw.eq(Cat(sub, big, Const(0, 1)) + Cat(sub, small ^ sub.replicate(27), sub)),
                 total.eq(raw[1:])]
    # near: signs differ, exponents close and at least 3 leading zeros (then nt == total;
    # otherwise the sum has at most 2, as the far path takes it)
    near = Signal(name=f"{name}_near")
    m.d.comb += near.eq(sub & close & (nt[25:28] == 0))
    nzero, nlz = lzc(nt)
    total, near, nzero = cut(total, "t2"), cut(near, "near2"), cut(nzero, "nz2")
    nlz = cut(nlz, "nlz2")
    eb, sgn_b = cut(eb, "eb2"), cut(sgn_b, "sb2")
    spec, spec_nan = cut(spec, "sp2"), cut(spec_nan, "spn2")
    spec_inf, spec_sign = cut(spec_inf, "spi2"), cut(spec_sign, "sps2")
    # --- stage 3: far: normalise by 0, 1 or 2, round; near: normalise (exact, no rounding)
    t = total
    # far: the 24 bits kept (27..4 after a shift by 0, 1 or 2; bit 23, the leading one, set),
    # rounded up when the next bit is set and those below it or the last kept one are; the
    # exponent e = eb + 1 - (the shift)
    keep = Signal(24, name=f"{name}_keep")
    rnd = Signal(name=f"{name}_rnd")
    e_far = Signal(8, name=f"{name}_fe")
    e_ovf = Signal(name=f"{name}_fo")  # e >= 255: infinity, whatever the rounding
    e_zero = Signal(name=f"{name}_fz")  # e <= 0: zero, or 2**-126 if the rounding carries
    m.d.comb += [keep.eq(Mux(t[27], t[4:28], Mux(t[26], t[3:27], t[2:26]))),
                 rnd.eq(Mux(t[27], t[3] & (t[:3].any() | t[4]),
                            Mux(t[26], t[2] & (t[:2].any() | t[3]), t[1] & (t[0] | t[2])))),
                 e_far.eq(Mux(t[27], eb + 1, Mux(t[26], eb, eb - 1))),
                 e_ovf.eq(Mux(t[27], eb >= 254, t[26] & (eb == 255))),
                 e_zero.eq(Mux(t[27], 0, Mux(t[26], eb == 0, eb <= 1)))]
    # the rounding in the packed pattern: a carry out of the fraction (it is then 0) steps the
    # exponent field on, to 255 (infinity) where that overflows, as the rounding's exponent
    # step would (the classic packed increment: the carry needs no logic after the adder)
    packed = Signal(31, name=f"{name}_pk")
    m.d.comb += packed.eq(Cat(keep[:23], e_far) + rnd)
    # the specials and the near path, none of them waiting for the rounding
    n_norm = Signal(28, name=f"{name}_nn")
    n_exp = Signal(8, name=f"{name}_ne")  # eb + 1 - nlz where that is 1 or more
    n_unf = Signal(name=f"{name}_nu")  # eb + 1 - nlz <= 0: one compare, no sum before it
    m.d.comb += [n_norm.eq(t << nlz), n_exp.eq(eb + 1 - nlz), n_unf.eq(nlz > eb)]
    other = Signal(32, name=f"{name}_o")
    with m.If(spec):
        m.d.comb += other.eq(Mux(spec_nan, CANONICAL_NAN,
                                 Cat(Const(0, 23), spec_inf.replicate(8), spec_sign)))
    with m.Elif(nzero):
        m.d.comb += other.eq(0)  # exact cancellation: +0 under round to nearest
    with m.Elif(n_unf):
        m.d.comb += other.eq(Cat(Const(0, 31), sgn_b))
    with m.Else():
        m.d.comb += other.eq(Cat(n_norm[4:27], n_exp, sgn_b))
    use_other = Signal(name=f"{name}_uo")
    m.d.comb += use_other.eq(spec | near)
    out = Signal(32, name=name)
    # the far result: infinity past the range (the packed increment would carry into the
    # sign there); e <= 0 leaves the exponent field e + carry, 0 or 1, and the fraction 0
    m.d.comb += [out[:23].eq(Mux(use_other, other[:23],
                                 packed[:23] & ~(e_ovf | e_zero).replicate(23))),
                 out[23:31].eq(Mux(use_other, other[23:31],
                                   packed[23:31] | e_ovf.replicate(8))),
                 out[31].eq(Mux(use_other, other[31], sgn_b))]
    return out


class DotTree(wiring.Component):
    """One dot-product tree of the matrix unit: ``k`` products of halves
    (:func:`half_product`), a balanced tree of ``log2 k`` levels of :func:`fp32_add` and one
    adder for ``c``, each node pipelined (:data:`PRODUCT_STAGES`, :data:`ADD_STAGES`), all
    registers on the falling edge of the core clock while ``busy``. ``a``, ``b`` and
    ``bf16`` are taken by the products, ``c`` by the first stage of the last adder
    :attr:`c_delay` edges later; ``sum`` is the last adder's register, :attr:`latency`
    edges after ``a`` and ``b``. A component of its own so that exported Verilog holds one
    definition for the unit's ``dots`` trees (rtl/reuse.py).

    ``gated``: the levels run on the falling edge of the core clock ORed with ``~busy``, so
    an idle tree costs a Verilator model nothing; False: on the falling edge of the core
    clock under the enable ``busy`` (the FPGA form, ``RtlConfig.clock_gating``). The clock
    is made here from the core clock, as the unit makes its own (``MatrixUnit.elaborate``):
    both are one gate from the core clock, so no simulator sees a tree's edge after the
    unit's registers that feed it have changed at the same edge."""

    def __init__(self, k: int, gated: bool = True):
        if k < 2 or k & (k - 1):
            raise ValueError(f"k must be a power of two of at least 2, not {k}")
        self.k, self.gated = k, gated
        self.latency = tree_latency(k)
        self.c_delay = self.latency - ADD_STAGES
        super().__init__({"busy": In(1), "bf16": In(1), "a": In(16).array(k),
                          "b": In(16).array(k), "c": In(32), "sum": Out(32)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.domains.tree = tree = ClockDomain("tree", clk_edge="neg", local=True,
                                            reset_less=True)
        level = []
        regs = []  # every register of the tree, the nodes' inner ones included
        for j in range(self.k):
            r = Signal(32, name=f"mul{j}")
            regs.append(r.eq(half_product(m, self.a[j], self.b[j], self.bf16, f"p{j}", regs)))
            level.append(r)
        lv = 0
        while len(level) > 1:
            nxt = []
            for j in range(0, len(level), 2):
                r = Signal(32, name=f"add{lv}_{j // 2}")
                regs.append(r.eq(fp32_add(m, level[j], level[j + 1], f"s{lv}_{j // 2}", regs)))
                nxt.append(r)
            level, lv = nxt, lv + 1
        regs.append(self.sum.eq(fp32_add(m, level[0], self.c, "sc", regs)))
        if self.gated:
            m.d.comb += tree.clk.eq(ClockSignal() | ~self.busy)
            m.d.tree += regs
        else:
            m.d.comb += tree.clk.eq(ClockSignal())
            with m.If(self.busy):
                m.d.tree += regs
        return m


def matrix_result_signature(warps: int, lanes: int) -> wiring.Signature:
    """One destination register of an ``mma`` for the late write-back (from the unit's
    side): lanes ``exec`` of register ``rd`` of ``warp`` take ``values``; ``retire``: the
    last one, which carries the retire record (pc, masks, register ``retire_rd``)."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({
        "valid": Out(1), "warp": Out(wb), "rd": Out(5), "retire": Out(1), "retire_rd": Out(5),
        "pc": Out(32), "active": Out(lanes), "exec": Out(lanes),
        "values": Out(32).array(lanes),
    })


class MatrixUnit(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp (the ``mma`` shape is ``isa.mma.mma_shape(lanes)``).
    dots:
        Dot-product trees: output elements started per cycle, ``dots * k`` multiply-adds
        per cycle; a power of two dividing ``lanes``.
    gated:
        The trees on a gated clock (the simulation model's form); False: under a clock
        enable (the FPGA form, ``RtlConfig.clock_gating``). Same function, same timing.

    Ports, cycle by cycle:

    - ``issue``: an ``mma`` issues (``warp``, group bases ``a``, ``b``, ``c``); its A0,
      B0, C0 are on ``rdata`` in the next cycle; ``busy`` from the next cycle.
    - ``read``/``raddr``: the unit uses the three read ports (registers of ``issue.warp``);
      the data is latched from ``rdata`` a cycle after a cycle with ``ren`` high.
    - ``ex1``: ``start`` (the ``mma`` leaves ex1: ``bf16``, ``rd``, ``pc``, masks) with
      ``abort`` (it faulted or is younger than a fault: nothing is written or retired).
    - ``result``/``take``: the destination registers, D3 first; ``reset`` drops everything.
    """

    def __init__(self, warps: int, lanes: int, dots: int = 1, gated: bool = True):
        s = mma_shape(lanes)
        self.gated = gated
        if dots < 1 or dots & (dots - 1) or lanes % dots:
            raise ValueError(f"dots must be a power of two dividing lanes ({lanes}), not {dots}")
        self.warps, self.lanes, self.dots, self.shape = warps, lanes, dots, s
        wb = max(1, (warps - 1).bit_length())
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "reset": In(1),
            "issue": In(wiring.Signature({"valid": Out(1), "warp": Out(wb), "a": Out(5),
                                          "b": Out(5), "c": Out(5)})),
            "ren": In(1),
            "read": Out(1),
            "raddr": Out(data.ArrayLayout(5, 3)),
            "rdata": In(data.ArrayLayout(vec, 3)),
            "ex1": In(wiring.Signature({"start": Out(1), "abort": Out(1), "bf16": Out(1),
                                        "rd": Out(5), "pc": Out(32), "active": Out(lanes),
                                        "exec": Out(lanes)})),
            "busy": Out(1),
            "result": Out(matrix_result_signature(warps, lanes)),
            "take": In(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        # The sequencing and the operand and result buffers run on the core clock: the ones
        # that only change while the unit holds an mma (busy, set as it issues) or a reset
        # arrives under a clock enable (``sync`` below), the issue and read sequencing
        # without (``core``). The trees run on the falling edge of a clock that only falls
        # while busy (``mma``: the core clock ORed with ~busy; busy changes just after a
        # rising edge, so the gate is closed or open before the clock falls, no glitch).
        # Every signal the falling edge samples changed at a rising edge half a cycle
        # earlier, so no simulator can see a same-edge race, and a Verilator model evaluates
        # the trees only on their own edges: an idle unit costs the model nothing there.
        # ``gated=False`` (the FPGA form, RtlConfig.clock_gating) takes the same falling edge
        # of the core clock under a clock enable instead: busy as the previous falling edge
        # saw it (``run``), a full cycle from one falling-edge register to the thousands it
        # enables, where busy itself (a rising-edge register) would leave half a cycle for
        # that fan-out (the unit's longest path, 63 MHz placed alone). The enable opens one
        # falling edge after busy and closes one after it; the trees need neither edge (the
        # first step comes cycles after the issue, the last result before the write-back),
        # so both forms compute the same in the same cycles.
        active = Signal()
        m.d.comb += active.eq(self.busy | self.reset | ResetSignal())
        m.domains.mma = mma = ClockDomain("mma", clk_edge="neg", local=True, reset_less=True)
        run = Signal()  # the trees' side runs (the gate's or the enable's input)
        logic = DomainRenamer({"core": "sync"})(EnableInserter(active)(self._logic(run)))
        if self.gated:
            m.d.comb += [mma.clk.eq(ClockSignal() | ~self.busy), run.eq(self.busy)]
        else:
            m.d.comb += mma.clk.eq(ClockSignal())
            m.d.mma += run.eq(self.busy)  # here, outside the enable
            logic = EnableInserter({"mma": run})(logic)
        m.submodules.logic = logic
        return m

    def _logic(self, run: Signal) -> Module:  # noqa: C901 - one sequencer, kept together
        m = Module()
        s, L, P = self.shape, self.lanes, self.dots
        k = s.k
        steps = 4 * L // P
        # the trees: one module in exported Verilog, instantiated dots times (rtl/reuse.py)
        trees = [DotTree(k, self.gated) for _ in range(P)]
        # step -> result: the selection of A and B, the products, log2 k add levels, add C
        latency = SELECT_STAGES + trees[0].latency
        c_at = SELECT_STAGES + trees[0].c_delay  # C this many edges after the step

        # The issue and the read sequencing run in domain core (the core clock, no enable):
        # the issue is taken while the unit is idle. Everything else is in sync, enabled only
        # while busy.
        busy = Signal()
        warp = Signal.like(self.issue.warp)
        base = Signal(data.ArrayLayout(5, 3))  # A, B, C group bases
        slot = Signal(range(5))  # next register of the groups to read (1..3), 4 = all issued
        cap = Signal()  # rdata holds register cap_slot of the groups in this cycle
        cap_slot = Signal(2)
        have = Signal(4)  # registers of the groups latched
        bufs = [[Signal(32, name=f"op{g}_{r}_{ln}") for ln in range(L)] for g in range(3)
                for r in range(4)]  # bufs[g * 4 + r][lane]; g = 0 A, 1 B, 2 C
        started = Signal()
        meta = Signal(data.StructLayout({"bf16": 1, "rd": 5, "pc": 32, "active": L,
                                         "exec": L}))
        step = Signal(range(steps + 1))
        computing = Signal()
        pipe_v = Signal(latency)  # valid of each tree stage
        pipe_s = [Signal(range(steps), name=f"step_d{i}") for i in range(latency)]
        dbuf = [[Signal(32, name=f"d{r}_{ln}") for ln in range(L)] for r in range(4)]
        writing = Signal()
        wreg = Signal(2)
        ready = Signal(range(5))  # destination registers filled, D3 first

        def element(st: int, p: int) -> int:
            """The output element (register * lanes + lane) of tree p at step st: D3's
            first, so that its write-back and D2's and D1's go while the trees still work."""
            return (steps - 1 - st) * P + p

        m.d.comb += self.busy.eq(busy)
        # --- operand reads ----------------------------------------------------------------
        reading = busy & (slot >= 1) & (slot <= 3)
        m.d.comb += [self.read.eq(reading)]
        for g in range(3):
            m.d.comb += self.raddr[g].eq(base[g] + slot[:2])
        with m.If(reading & self.ren):
            m.d.core += [slot.eq(slot + 1), cap.eq(1), cap_slot.eq(slot[:2])]
        with m.Elif(~self.issue.valid):
            m.d.core += cap.eq(0)
        with m.If(cap):
            m.d.sync += have.eq(have | (1 << cap_slot))
            with m.Switch(cap_slot):
                for r in range(4):
                    with m.Case(r):
                        for g in range(3):
                            m.d.sync += [bufs[g * 4 + r][ln].eq(self.rdata[g][ln])
                                         for ln in range(L)]
        with m.If(self.issue.valid):
            m.d.core += [busy.eq(1), warp.eq(self.issue.warp), slot.eq(1), cap.eq(1),
                         cap_slot.eq(0), base[0].eq(self.issue.a), base[1].eq(self.issue.b),
                         base[2].eq(self.issue.c)]

        # --- start: the instruction leaves ex1 --------------------------------------------
        x = self.ex1
        with m.If(x.start):
            m.d.sync += [started.eq(1), meta.bf16.eq(x.bf16), meta.rd.eq(x.rd),
                         meta.pc.eq(x.pc), meta.active.eq(x.active), meta.exec.eq(x.exec)]
        with m.If(started & (have == 0xF)):
            m.d.sync += [computing.eq(1), started.eq(0), have.eq(0), writing.eq(1), wreg.eq(3),
                         ready.eq(0)]

        # --- compute: dots trees of pipelined FP32 nodes ------------------------------------
        a_src = {s.a_pos(r, h, ln): (r, h, ln) for r in range(s.regs_a) for h in (0, 1)
                 for ln in range(L)}
        b_src = {s.b_pos(r, h, ln): (r, h, ln) for r in range(s.regs_b) for h in (0, 1)
                 for ln in range(L)}

        # The trees' side (domain mma, falling edges while busy) samples only registers of
        # the core clock (stable at a falling edge) and its own: a copy of the operands, the
        # format and the step, which it delays alongside its levels to pick C.
        opg = [[Signal(32, name=f"opg{i}_{ln}") for ln in range(L)] for i in range(12)]
        bf16g = Signal()
        stepg = [Signal.like(step, name=f"stepg{i}") for i in range(c_at)]
        m.d.mma += [opg[i][ln].eq(bufs[i][ln]) for i in range(12) for ln in range(L)]
        m.d.mma += [bf16g.eq(meta.bf16), stepg[0].eq(step)]
        m.d.mma += [stepg[i].eq(stepg[i - 1]) for i in range(1, c_at)]

        def half(g, src):
            r, h, ln = src
            return opg[g * 4 + r][ln].word_select(h, 16)

        feed = computing & (step < steps)
        outs = []
        for p in range(P):
            m.submodules[f"tree{p}"] = reuse.shared(trees[p], (k, self.gated))
        for p in range(P):
            a_in = [Signal(16, name=f"t{p}_a{j}") for j in range(k)]
            b_in = [Signal(16, name=f"t{p}_b{j}") for j in range(k)]
            # the step's elements in registers (SELECT_STAGES): the multiplexer and the
            # products' first stage together would be the longest path of the unit
            with m.Switch(stepg[0]):
                for st in range(steps):
                    e = element(st, p)
                    row, col = s.c_pos(e // L, e % L)
                    with m.Case(st):
                        for j in range(k):
                            m.d.mma += [a_in[j].eq(half(0, a_src[(row, j)])),
                                        b_in[j].eq(half(1, b_src[(j, col)]))]
            # C of the element whose products leave the last level at the next edge, in a
            # register of its own: the adder of C sees no multiplexer in front of it
            c_in = Signal(32, name=f"t{p}_c")
            with m.Switch(stepg[c_at - 1]):
                for st in range(steps):
                    e = element(st, p)
                    with m.Case(st):
                        m.d.mma += c_in.eq(opg[8 + e // L][e % L])
            tree = trees[p]
            m.d.comb += [tree.busy.eq(run), tree.bf16.eq(bf16g), tree.c.eq(c_in)]
            m.d.comb += [tree.a[j].eq(a_in[j]) for j in range(k)]
            m.d.comb += [tree.b[j].eq(b_in[j]) for j in range(k)]
            outs.append(tree.sum)

        m.d.sync += [pipe_v.eq(Cat(feed, pipe_v[:-1])), pipe_s[0].eq(step)]
        m.d.sync += [pipe_s[i].eq(pipe_s[i - 1]) for i in range(1, latency)]
        with m.If(feed):
            m.d.sync += step.eq(step + 1)
        with m.If(pipe_v[latency - 1]):
            with m.Switch(pipe_s[latency - 1]):
                for st in range(steps):
                    with m.Case(st):
                        for p in range(P):
                            e = element(st, p)
                            m.d.sync += dbuf[e // L][e % L].eq(outs[p])
                        if (st + 1) % (L // P) == 0:  # the register's last elements
                            m.d.sync += ready.eq((st + 1) // (L // P))
            with m.If(pipe_s[latency - 1] == steps - 1):
                m.d.sync += [computing.eq(0), step.eq(0)]

        # --- write-back: D3, D2, D1, D0, each once filled; D0 retires ---------------------
        res = self.result
        m.d.comb += [res.valid.eq(writing & (ready > 3 - wreg)), res.warp.eq(warp),
                     res.rd.eq(meta.rd + wreg),
                     res.retire.eq(wreg == 0), res.retire_rd.eq(meta.rd), res.pc.eq(meta.pc),
                     res.active.eq(meta.active), res.exec.eq(meta.exec)]
        with m.Switch(wreg):
            for r in range(4):
                with m.Case(r):
                    m.d.comb += [res.values[ln].eq(dbuf[r][ln]) for ln in range(L)]
        with m.If(self.take):
            m.d.sync += wreg.eq(wreg - 1)
            with m.If(wreg == 0):
                m.d.core += [busy.eq(0), slot.eq(0)]
                m.d.sync += writing.eq(0)

        with m.If((x.start & x.abort) | self.reset):
            m.d.core += [busy.eq(0), slot.eq(0), cap.eq(0)]
            m.d.sync += [have.eq(0), started.eq(0), computing.eq(0), step.eq(0),
                         writing.eq(0), pipe_v.eq(0), ready.eq(0)]
        return m
