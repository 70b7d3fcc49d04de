"""Multi-cycle special-function unit of one lane (rcp rsqrt sqrt exp2 log2 sin cos).

It computes exactly what :func:`simtgpu.sim.numerics.sfu` computes: the integer algorithm of
``sim/sfu_algo.py`` (docs/numerics.md), step for step, with one shared signed multiplier, one
coefficient ROM (``sim/sfu_tables.py``) and one normaliser.  Every op takes the same
:data:`~simtgpu.sim.numerics.SFU_LATENCY` cycles, so the core can book the writeback slot at
issue time.

The multiplier is a multiply-add ``ma * mb + addend`` in two register stages (six MULT18X18D
partial products; their sum and the addend through a carry-save tree and one carry chain):
an operation issued in step n has its sum in step n + 2, where the next one that needs it is
issued.  Horner's rule rides on it: ``c1 + t`` and ``y = c0 + ...`` are the addends of the
products, with the fraction shifted up to one width for every op so that every product is
shifted down by the same ``W`` bits.  No step holds more than one DSP block, one wide carry
chain with a carry-save tree or a few multiplexers beside it, or the ROM's output (block RAM,
slow to its output) and a multiplexer: about 100 MHz on an ECP5 (``simtgpu synth --unit
sfu``), where the 8-step schedule of one product per step reached 30.

Schedule (``step`` counts the cycles after the edge that sampled ``start``; "issue" loads the
multiplier's operands)::

    start    issue mant * (1/2pi) (sin/cos reduction)
    step 1   classify the operand, pick the special result; rcp/rsqrt/sqrt/log2: ROM segment,
             fraction, exponent offset (rsqrt/sqrt: step 2) and sign; log2: ROM read;
             exp2: signed significand and shift
    step 2   sin/cos: the reduction product, shifted by a multiple of 16; log2: issue
             c2 * f + c1 (Horner 1); exp2: x * 2**32
    step 3   sin/cos: revolutions, quadrant, ROM segment and fraction; exp2: ROM segment,
             fraction, exponent offset; ROM read (all but log2)
    step 4   issue Horner 1 (log2: issue (c1 + t) * f + c0, Horner 2)
    step 6   issue Horner 2 (log2: issue R = v * y + ee * 2**54)
    step 8   y * 2**W (log2: R)
    step 9   sign and magnitude, leading-zero count
    step 10  normalising shift, sin/cos clamp, exponent candidates
    step 11  round, exponent, overflow/underflow, special-case select -> ``result``
    step 12  ``done`` is high for this one cycle; ``result`` holds until the next result
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
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

_W = max(algo.W_MANT, algo.W_EXP2, algo.W_TRIG)
"""Every segment fraction is shifted up to this many bits, so every product is shifted down
by the same amount (no multiplexer behind the multiplier)."""
_MUL = 2  # steps from issuing a multiply-add to its sum
_S_ROM = _MUL + 1  # the sin/cos reduction product is there in step _MUL
_S_H1 = _S_ROM + 1
_S_H2 = _S_H1 + _MUL
_S_MAG = _S_H2 + _MUL + 1
_S_NORM = _S_MAG + 1
_S_PACK = _S_NORM + 1
assert _S_PACK + 1 == SFU_LATENCY, "the schedule below and SFU_LATENCY disagree"


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


def _trig_y_max() -> float:
    """An upper bound of sin/cos's y over every ROM row and fraction: y <= c0 + (c1 + c2 * f /
    2**w) * f / 2**w (the floors only lower it, f >= 0), a quadratic in f whose maximum on
    [0, 2**w] is at an end or at its vertex."""
    top = 0.0
    span = float(1 << algo.W_TRIG)
    for table in ("sin", "cos"):
        base = algo.ROM_BASE[table]
        for c0, c1, c2 in algo.ROM[base:base + (1 << algo.SEG_BITS)].tolist():
            ends = [0.0, span] + ([-c1 * span / (2 * c2)] if c2 else [])
            top = max(top, c0 + max((c1 + c2 * x / span) * x / span
                                    for x in ends if 0 <= x <= span))
    return top


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
        W = _W

        # -- control -----------------------------------------------------------------------
        step = Signal(range(SFU_LATENCY + 1))
        sync, told = "sync", step  # ``told``: the counter that ``busy`` and ``done`` read
        if self.gated:
            # A copy of ``step`` on the core clock says when the unit's clock must rise, and
            # ``busy`` and ``done``: a register of the gated domain behind either would close
            # a loop through the gate's clock (the SFU sequencer starts a pass at ``done``).
            live = Signal(range(SFU_LATENCY + 1))
            _count_steps(m, "sync", self.start, live)
            sync, told = gated_domain(m, "sfu", self.start | (live != 0), reset=True), live
        _count_steps(m, sync, self.start, step)
        # The datapath's registers are reset_less: each is written in its step before it is
        # read, and a reset input on each would be one more LUT input in front of it.
        op = Signal(SfuOp, reset_less=True)
        a = Signal(32, reset_less=True)
        with m.If(self.start):
            # FTZ on the way in: a subnormal operand is a zero of its sign.
            flushed = Mux(self.a[23:31] == 0, Cat(Const(0, 31), self.a[31]), self.a)
            m.d[sync] += [op.eq(self.op), a.eq(flushed)]
        m.d.comb += [
            self.busy.eq((told != 0) & (told != SFU_LATENCY)),
            self.done.eq(told == SFU_LATENCY),
        ]

        # The function decoded at the start edge, one flag per function: a path that depends on
        # it starts at a register, not at a comparison of ``op``.
        op_is = {member: Signal(name=f"is_{member.name.lower()}", reset_less=True)
                 for member in SfuOp}
        with m.If(self.start):
            m.d[sync] += [flag.eq(self.op == member) for member, flag in op_is.items()]

        def is_op(*names: str):
            return Cat(*(op_is[SfuOp[n.upper()]] for n in names)).any()

        is_log2 = Signal()
        is_trig = Signal()
        m.d.comb += [is_log2.eq(is_op("log2")), is_trig.eq(is_op("sin", "cos"))]

        s, e_b, mant = a[31], a[23:31], a[0:23]
        e_bs = Cat(e_b, Const(0, 2)).as_signed()  # biased exponent, signed for arithmetic
        e = Signal(signed(10))
        m.d.comb += e.eq(e_bs - 127)
        m1 = Cat(mant, Const(1, 1))  # 1.m as a 24-bit integer

        # -- the shared multiply-add: ma * mb + addend, two register stages ---------------------
        # Issue (load ma and mb) in step n; the sum ``total`` is there in step n + _MUL, in
        # time to be issued again.  Stage 1: six MULT18X18D partial products (ma in pieces of
        # 17 unsigned, 17 unsigned and 6 signed bits, mb in 17 unsigned and 9 signed), each
        # registered, and the addend (chosen in step n + 1, from registers).  Stage 2: the
        # pieces that do not overlap are concatenated, which leaves five terms; three layers
        # of carry-save adders take them to two, one carry chain adds those.  The whole
        # product through yosys' adder tree, behind the ROM and in front of the normaliser,
        # was the unit's longest path.
        ma = Signal(signed(40), reset_less=True)
        mb = Signal(signed(26), reset_less=True)
        a0, a1, a2 = ma[0:17], ma[17:34], ma[34:40].as_signed()
        b0, b1 = mb[0:17], mb[17:26].as_signed()
        p00 = Signal(34, reset_less=True)
        p10 = Signal(34, reset_less=True)
        p20 = Signal(signed(24), reset_less=True)
        p01 = Signal(signed(27), reset_less=True)
        p11 = Signal(signed(27), reset_less=True)
        p21 = Signal(signed(16), reset_less=True)
        addend_p = Signal(signed(66), reset_less=True)  # the addend of the last issue
        m.d[sync] += [p00.eq(a0 * b0), p10.eq(a1 * b0), p20.eq(a2 * b0),
                      p01.eq(a0 * b1), p11.eq(a1 * b1), p21.eq(a2 * b1)]
        terms = [Signal(66, name=f"term{i}") for i in range(5)]  # two's complement, 66 bits
        m.d.comb += [
            terms[0].eq(Cat(p00, p20).as_signed()),  # p00 < 2**34: p00 + p20 * 2**34
            terms[1].eq(Cat(p10, p21).as_signed() << 17),  # (p10 + p21 * 2**34) * 2**17
            terms[2].eq(p01 << 17),
            terms[3].eq(p11 << 34),
            terms[4].eq(addend_p),
        ]

        def csa(x: Value, y: Value, z: Value) -> tuple[Value, Value]:
            """x + y + z = sum + carry (mod 2**66), one LUT deep."""
            return x ^ y ^ z, Cat(Const(0, 1), (x & y) | (x & z) | (y & z))[0:66]

        sum0, carry0 = csa(*terms[0:3])
        sum1, carry1 = csa(sum0, carry0, terms[3])
        sum2, carry2 = csa(sum1, carry1, terms[4])
        total = Signal(signed(66))
        m.d.comb += total.eq(sum2 + carry2)
        # The sin/cos reduction product (its addend is zero) without the addend's layer: a
        # shift follows it in the same step.
        product = Signal(62)
        m.d.comb += product.eq(sum1 + carry1)

        # -- step 1: classify, special result -------------------------------------------------
        zero = e_b == 0
        inf = (e_b == 255) & (mant == 0)
        nan = (e_b == 255) & (mant != 0)
        special = Signal(reset_less=True)
        special_res = Signal(32, reset_less=True)
        with m.If(step == 1):
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

        # -- steps 1 to 3: reduction to ROM segment + fraction ---------------------------------
        rom = Memory(shape=unsigned(_ROM_WIDTH), depth=len(algo.ROM), init=_rom_words())
        m.submodules.rom = rom
        rd = rom.read_port(domain=sync)

        def row(table: str, idx: Value) -> Value:
            """Row ``idx`` of ``table``: a table of 2**len(idx) rows starts at a multiple of
            its size, so the row number is a concatenation, not a sum."""
            base = algo.ROM_BASE[table]
            assert base % (1 << len(idx)) == 0
            return Cat(idx, Const(base >> len(idx), len(rd.addr) - len(idx)))

        addr = Signal(range(len(algo.ROM)), reset_less=True)  # ROM row: rcp, rsqrt, sqrt, log2
        f = Signal(W, reset_less=True)  # segment fraction, shifted up from its w bits to W (see _W)
        k = Signal(signed(10), reset_less=True)  # exponent offset: value = y * 2**k
        sign = Signal(reset_less=True)
        v = Signal(signed(25), reset_less=True)  # log2: v * 2**24
        ee = Signal(signed(9), reset_less=True)  # log2: exponent of the reduced argument

        idx_m = mant[23 - seg:23]
        f_m = mant[0:23 - seg] << (W - algo.W_MANT)
        par = ~e_b[0]  # (e_b - 127) is odd
        half = Signal(signed(10), reset_less=True)  # rsqrt, sqrt: step 1; their k: step 2

        # exp2: x * 2**32 as a signed fixed-point number: the signed significand and the shift
        # (step 1), the shift (step 2), the segment, read straight from it (step 3).
        # The shift is sh = e + 9 = e_b - 118 to the left (at most 15 for every non-special
        # operand), -sh to the right (at most 63); the tests on e_b need no subtraction first.
        sm = Signal(signed(25), reset_less=True)
        sh_left = Signal(reset_less=True)
        sh_n = Signal(6, reset_less=True)
        x32_r = Signal(signed(41), reset_less=True)
        with m.If((step == 1) & is_op("exp2")):
            m.d[sync] += [sm.eq(Mux(s, -m1, m1)), sh_left.eq(e_b >= 118),
                          sh_n.eq(Mux(e_b >= 118, (e_b - 118)[0:4],
                                      Mux(e_b < 118 - 63, 63, (118 - e_b)[0:6])))]
        with m.If(step == 2):
            m.d[sync] += x32_r.eq(Mux(sh_left, sm << sh_n[0:4], sm >> sh_n))

        # sin/cos: revolutions * 2**32 modulo 2**32 = bits [rsh, rsh + 32) of the product
        # (zeros below bit 0), rsh = 31 - e: the product above 32 zeros, shifted right by
        # rsh + 32 (at least 0: a shift left by 32 or more leaves no bit below 2**32).
        # The shift by multiples of 16 is done on the product as it is summed (step _MUL), the
        # rest (step _S_ROM) leaves time for the ROM address.
        rev_sh = Signal(7, reset_less=True)
        rev_prod = Signal(47, reset_less=True)
        rev = Signal(32)
        m.d.comb += rev.eq((rev_prod >> rev_sh[0:4])[0:32])
        quad = Signal(2)
        m.d.comb += quad.eq(rev[30:32] + is_op("cos"))
        u = rev[0:30]

        with m.If(step == 1):
            with m.Switch(op):
                with m.Case(SfuOp.RCP):
                    m.d[sync] += [addr.eq(row("rcp", idx_m)), f.eq(f_m),
                                  sign.eq(s), k.eq(96 - e_bs)]
                with m.Case(SfuOp.RSQRT, SfuOp.SQRT):
                    base = Mux(op == SfuOp.RSQRT, algo.ROM_BASE["rsqrt"], algo.ROM_BASE["sqrt"])
                    m.d[sync] += [addr.eq(base + Cat(idx_m, par)), f.eq(f_m), sign.eq(0),
                                  half.eq((e - par.as_unsigned()) >> 1)]
                with m.Case(SfuOp.LOG2):
                    hi = mant[22]
                    m.d[sync] += [f.eq(f_m), k.eq(-algo.LOG_FRAC), sign.eq(0),
                                  v.eq(Mux(hi, Cat(mant, Const(0, 1)).as_signed() - (1 << 23),
                                            Cat(Const(0, 1), mant))),
                                  ee.eq(e + hi)]
                with m.Default():  # sin, cos
                    rsh32 = 190 - e_bs  # rsh + 32
                    m.d[sync] += rev_sh.eq(Mux(rsh32 < 0, 0, rsh32[0:7]))
        with m.If((step == 2) & is_op("rsqrt", "sqrt")):
            m.d[sync] += k.eq(Mux(op == SfuOp.RSQRT, -half - 1 - frac, half - frac))
        assert _S_ROM == 3, "exp2's steps 1 and 2 and the reduction of step 1 come first"
        with m.If((step == _S_ROM) & is_op("exp2")):
            fr = x32_r[0:32]
            m.d[sync] += [f.eq(fr[0:32 - seg]), sign.eq(0), k.eq(x32_r[32:41].as_signed() - frac)]
        with m.If(step == _MUL):
            m.d[sync] += rev_prod.eq((Cat(Const(0, 32), product) >> (rev_sh[4:7] * 16))[0:47])
        with m.If((step == _S_ROM) & is_trig):
            m.d[sync] += [f.eq(u[0:30 - seg] << (W - algo.W_TRIG)), k.eq(-frac),
                          sign.eq(Mux(op == SfuOp.SIN, quad[1] ^ s, quad[1]))]

        # The ROM is read in step 1 for log2 (its segment is a field of the operand, and it
        # takes one more multiply than the rest), in step _S_ROM for the others.
        # log2's row is in ``addr`` from the start edge on (written after the steps' writes
        # above: a start while an operation is in flight wins).
        with m.If(self.start & (self.op == SfuOp.LOG2)):
            m.d[sync] += addr.eq(row("log2", self.a[23 - seg:23]))
        m.d.comb += [
            rd.addr.eq(Mux(is_trig, Mux(rev[30] ^ is_op("cos"),  # quad[0]
                                        row("cos", u[30 - seg:30]), row("sin", u[30 - seg:30])),
                           Mux(is_op("exp2"), row("exp2", x32_r[32 - seg:32]), addr))),
            rd.en.eq(Mux(is_log2, step == 1, step == _S_ROM)),
        ]

        # -- Horner (and log2's last product) on the multiply-add ------------------------------
        # With f shifted up to W bits, every product is shifted down by W:
        # (c2*f*2**(W-w) + c1*2**W) >> W = c1 + ((c2*f) >> w), exactly.
        w0, w1, _ = _C_WIDTHS
        c0 = rd.data[0:w0].as_signed()
        c1 = rd.data[w0:w0 + w1].as_signed()
        c2 = rd.data[w0 + w1:].as_signed()
        c0_r = Signal(signed(w0), reset_less=True)
        c1_r = Signal(signed(w1), reset_less=True)
        # Registered a step ahead (cleared by a start), so that the ROM's output, late as it
        # is, meets only the operand multiplexer.
        h1 = Signal()  # issue c2 * f + c1 * 2**W
        h2 = Signal()  # issue (c1 + t) * f + c0 * 2**W, or log2's v * y + ee * 2**54
        log_mul = Signal()
        m.d[sync] += [
            h1.eq(~self.start & Mux(is_log2, step == _S_H1 - _MUL - 1, step == _S_H1 - 1)),
            h2.eq(~self.start & ((is_log2 & (step == _S_H1 - 1)) | (step == _S_H2 - 1))),
            log_mul.eq(~self.start & is_log2 & (step == _S_H2 - 1)),
        ]
        # ma from the ROM is one multiplexer after its output: the other choice and the select
        # are made beside it, kept apart (``keep``) so that the LUT mapping, which does not
        # know how late the block RAM's output is, cannot fold them in behind it.
        ma_other = Signal(40, attrs={"keep": 1})
        ma_rom = Signal(attrs={"keep": 1})
        m.d.comb += [ma_other.eq(Mux(self.start, algo.INV_2PI, total[W:W + 40])),
                     ma_rom.eq(h1 & ~self.start)]
        with m.If(self.start | h1 | h2):
            m.d[sync] += ma.eq(Mux(ma_rom, c2, ma_other))
        with m.If(self.start):  # sin/cos: 1.m * (1/2pi), used in step _MUL
            m.d[sync] += mb.eq(Cat(self.a[0:23], Const(1, 1)))
        with m.Elif(h1):
            m.d[sync] += [mb.eq(f), c1_r.eq(c1), c0_r.eq(c0)]
        with m.Elif(h2):
            m.d[sync] += mb.eq(Mux(log_mul, v, f))
        # The addend goes in with the partial products, a step after the issue: from registers.
        issued = Signal(3)  # start, h1, h2 in the step before
        log_mul_d = Signal()
        m.d[sync] += [issued.eq(Cat(self.start, h1 & ~self.start, h2 & ~self.start)),
                      log_mul_d.eq(log_mul)]
        with m.If(issued[0]):
            m.d[sync] += addend_p.eq(0)
        with m.Elif(issued[1]):
            m.d[sync] += addend_p.eq(c1_r << W)
        with m.Elif(issued[2]):
            m.d[sync] += addend_p.eq(Mux(log_mul_d, ee << algo.LOG_FRAC, c0_r << W))

        r = Signal(signed(66), reset_less=True)  # log2: R; the others: y * 2**W + (bits below)
        with m.If(step == _S_H2 + _MUL):
            m.d[sync] += r.eq(total)

        # -- normalise: magnitude and leading-zero count, shift, round -------------------------
        # log2 counts the leading zeros of ~R for a negative R (no wait for -R): one too many
        # when -R is a power of two (or 1: lzc of zero is 63), which the shift's top bit shows.
        # k + 189 + i and k + 189 + i - 255: biased = kc - lz + ..., and biased <= 0, >= 255
        # are lz >= kc, lz <= kc - 255 (no subtraction in front of the comparison).
        kc = [Signal(signed(12), name=f"kc{i}", reset_less=True) for i in range(3)]
        kc_inf = [Signal(signed(12), name=f"kc_inf{i}", reset_less=True) for i in range(3)]
        with m.If(step == _S_H1):
            m.d[sync] += [kc[i].eq(k + 189 + i) for i in range(3)]
            m.d[sync] += [kc_inf[i].eq(k + 189 + i - 255) for i in range(3)]
        r_neg = r[-1]
        y = r[W:66].as_signed()
        lz_zero, lz_cnt = lzc(Mux(is_log2, (r ^ r_neg.replicate(66))[0:63], y[0:63]))
        # sin/cos clamp y to 1.0 (2**frac): a y above it is below 2**(frac + 1), so it has the
        # leading-zero count and exponent of 1.0, and only the significand is replaced (in
        # the shift's step, no multiplexer behind the count or the magnitude).
        assert _trig_y_max() < 1 << (frac + 1)
        y_big = Signal(reset_less=True)
        mag = Signal(unsigned(63), reset_less=True)
        lz = Signal(6, reset_less=True)
        mag_zero = Signal(reset_less=True)  # a zero result (a negative y is zero too)
        # -R is one multiplexer after its carry chain (``keep``: see ma_other).
        mag_neg = Signal(attrs={"keep": 1})
        mag_pos = Signal(63, attrs={"keep": 1})
        m.d.comb += [mag_neg.eq(is_log2 & r_neg), mag_pos.eq(Mux(is_log2, r, y))]
        with m.If(step == _S_MAG):
            m.d[sync] += [mag.eq(Mux(mag_neg, -r, mag_pos)), lz.eq(lz_cnt),
                          y_big.eq(is_trig & (y > (1 << frac)))]
            with m.If(is_log2):
                m.d[sync] += [mag_zero.eq(lz_zero & ~r_neg), sign.eq(r_neg)]
            with m.Else():
                m.d[sync] += mag_zero.eq(r_neg | lz_zero)

        # The leading one lands on bit 62 (bit 63: the count was one too many); the 24 bits
        # from it down are the significand, the next one rounds (zeros when mag is short).
        # biased = k + length - 1 + carry + 127, length = 63 - lz + ovf: kc0 - lz + ovf + carry.
        norm = Signal(64)
        m.d.comb += norm.eq(mag << lz)
        ovf = norm[63]
        ex = [Signal(8, name=f"ex{i}") for i in range(3)]  # the exponent field, when in range
        m.d.comb += [ex[i].eq(kc[i][0:8] - lz) for i in range(3)]
        sig = Signal(25, reset_less=True)  # significand and round bit
        ex_c = [Signal(8, name=f"ex_c{i}", reset_less=True) for i in range(2)]  # by rounding carry
        zero_c = [Signal(name=f"zero_c{i}", reset_less=True) for i in range(2)]
        inf_c = [Signal(name=f"inf_c{i}", reset_less=True) for i in range(2)]
        with m.If(step == _S_NORM):
            m.d[sync] += sig.eq(Mux(y_big, 1 << 24, Mux(ovf, norm[39:64], norm[38:63])))
            for c in range(2):
                lo, hi = c, c + 1  # ovf + carry
                m.d[sync] += [ex_c[c].eq(Mux(ovf, ex[hi], ex[lo])),
                              zero_c[c].eq(mag_zero | Mux(ovf, lz >= kc[hi], lz >= kc[lo])),
                              inf_c[c].eq(Mux(ovf, lz <= kc_inf[hi], lz <= kc_inf[lo]))]

        q = Signal(25)
        m.d.comb += q.eq(sig[1:25] + sig[0])
        carry = q[24]  # rounding overflowed to 2**24: the mantissa field is zero all the same
        packed = Signal(32)
        with m.If(Mux(carry, zero_c[1], zero_c[0])):
            m.d.comb += packed.eq(Cat(Const(0, 31), sign))
        with m.Elif(Mux(carry, inf_c[1], inf_c[0])):
            m.d.comb += packed.eq(Cat(Const(0x7F800000, 31), sign))
        with m.Else():
            m.d.comb += packed.eq(Cat(q[0:23], Mux(carry, ex_c[1], ex_c[0]), sign))
        with m.If(step == _S_PACK):
            m.d[sync] += self.result.eq(Mux(special, special_res, packed))
        return m
