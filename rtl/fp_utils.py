"""Building blocks shared by the FP units (``fpu.py``, ``fcompare.py``, ``half_unit.py``).

They build Amaranth logic inside a caller's module rather than being components: operand
unpacking with flush-to-zero, the sign-magnitude order used by min/max and compares, a
log-depth leading-zero counter, and two forms of arithmetic that keep carry chains off a
segment's critical path (a compare with a constant as gates, a three-term sum in one chain).
The numeric rules are those of ``simtgpu.sim.numerics``
(FP32, FTZ on inputs and results, canonical NaN ``0x7fffffff``).
"""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value

__all__ = ["CANONICAL_NAN", "EXP_BIAS", "FP_ONE", "FP_NEG_ZERO", "Unpacked", "at_least", "lzc",
           "order_less", "sum_of", "unpack"]

CANONICAL_NAN = 0x7FFFFFFF
"""The one NaN every FP operation returns (``simtgpu.sim.numerics.CANONICAL_NAN``)."""
EXP_BIAS = 127
FP_ONE = 0x3F800000
FP_NEG_ZERO = 0x80000000


@dataclass(frozen=True)
class Unpacked:
    """One FP32 operand after flush-to-zero, as named signals of the caller's module."""

    bits: Signal  # the flushed pattern (a subnormal becomes a zero of the same sign)
    sign: Value
    exp: Value  # biased exponent, 8 bits (0 for zeros, including flushed subnormals)
    mant: Signal  # 24-bit significand with the hidden bit; 0 for zeros
    zero: Signal
    inf: Signal
    nan: Signal


def unpack(m: Module, v: Value, name: str) -> Unpacked:
    """Unpack ``v`` (32 bits) with FTZ into signals named ``<name>_*``."""
    exp, frac = v[23:31], v[0:23]
    zero = Signal(name=f"{name}_zero")
    inf = Signal(name=f"{name}_inf")
    nan = Signal(name=f"{name}_nan")
    bits = Signal(32, name=f"{name}_ftz")
    mant = Signal(24, name=f"{name}_mant")
    m.d.comb += [
        zero.eq(exp == 0),
        inf.eq((exp == 0xFF) & (frac == 0)),
        nan.eq((exp == 0xFF) & (frac != 0)),
        bits.eq(Mux(zero, Cat(Const(0, 31), v[31]), v)),
        mant.eq(Mux(zero, 0, Cat(frac, Const(1, 1)))),
    ]
    return Unpacked(bits=bits, sign=v[31], exp=exp, mant=mant, zero=zero, inf=inf, nan=nan)


def order_less(a: Unpacked, b: Unpacked) -> Value:
    """``a < b`` for non-NaN flushed operands in the order where -0 is just below +0."""
    mag_a, mag_b = a.bits[0:31], b.bits[0:31]
    return Mux(a.sign != b.sign, a.sign, Mux(a.sign, mag_a > mag_b, mag_a < mag_b))


def lzc(v: Value) -> tuple[Value, Value]:
    """Leading-zero count of ``v`` as a balanced tree: returns ``(all_zero, count)``.

    ``v`` is padded at the bottom to a power-of-two width, so ``count`` has
    ``ceil(log2(len(v)))`` bits (one for a 1-bit ``v``) and is exact whenever ``v`` is not
    zero.
    """
    width = 1 << max(0, (len(v) - 1).bit_length())
    padded = Cat(Const(0, width - len(v)), v) if width > len(v) else v
    return _lzc_pow2(padded)


def _lzc_pow2(v: Value) -> tuple[Value, Value]:
    if len(v) == 1:  # only for a 1-bit input; a count of zero width has no bits to return
        return ~v[0], Const(0, 1)
    if len(v) == 2:
        return ~(v[0] | v[1]), ~v[1]
    half = len(v) // 2
    zero_hi, count_hi = _lzc_pow2(v[half:])
    zero_lo, count_lo = _lzc_pow2(v[:half])
    return zero_hi & zero_lo, Cat(Mux(zero_hi, count_lo, count_hi), zero_hi)


def at_least(bits: Value, c: int) -> Value:
    """``bits >= c`` for a constant ``c``, as ANDs and ORs of the bits (from the lowest up:
    ``bits[:i+1] >= c[:i+1]``), not a comparator: yosys maps a comparison to a carry chain,
    and a mask of many of them would be that many chains."""
    bits = Value.cast(bits)
    if c >> len(bits):
        return Const(0, 1)
    ge = Const(1, 1)
    for i in range(len(bits)):
        ge = (bits[i] & ge) if c >> i & 1 else (bits[i] | ge)
    return ge


def sum_of(m: Module, plus: list[Value], minus: list[Value], k: Value, width: int,
           name: str) -> Signal:
    """The sum of ``plus`` less the sum of ``minus`` plus ``k``, modulo ``2**width``, for
    three unsigned terms in all: two levels of carry-save adders (a term less is its
    complement plus one, the ones folded into the constant), then one adder. yosys leaves
    the carry-save levels to the LUT mapper, so a single carry chain remains."""
    if len(plus) + len(minus) != 3:
        raise ValueError("sum_of takes three terms")
    terms = [Signal(width, name=f"{name}_t{i}") for i in range(3)]
    kk = Signal(width, name=f"{name}_k")
    m.d.comb += [t.eq(v) for t, v in zip(terms, plus, strict=False)]
    m.d.comb += [t.eq(~Cat(v, Const(0, width - len(Value.cast(v)))))
                 for t, v in zip(terms[len(plus):], minus, strict=True)]
    m.d.comb += kk.eq(k + len(minus))
    a, b, c = terms
    s1, c1 = a ^ b ^ c, Cat(Const(0, 1), ((a & b) | (a & c) | (b & c))[:width - 1])
    s2, c2 = s1 ^ c1 ^ kk, Cat(Const(0, 1), ((s1 & c1) | (s1 & kk) | (c1 & kk))[:width - 1])
    out = Signal(width, name=name + "_sum")
    m.d.comb += out.eq(s2 + c2)
    return out
