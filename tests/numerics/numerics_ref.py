"""Independent binary32 reference for the numerics tests: exact rational arithmetic.

Nothing here uses ``simtgpu.sim.numerics``: values are decoded by hand into Python
``Fraction``s, combined exactly and rounded to nearest even by hand, so the tests compare two
implementations that share no code.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np

CNAN = 0x7FFFFFFF
INF = 0x7F800000


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def value(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def is_nan(b: int) -> bool:
    return (b & 0x7FFFFFFF) > INF


def ftz(b: int) -> int:
    return b & 0x80000000 if (b & 0x7F800000) == 0 else b


def to_fraction(b: int) -> Fraction:
    """Exact value of a finite pattern (subnormals included)."""
    e, m = (b >> 23) & 0xFF, b & 0x7FFFFF
    mag = Fraction(m, 1 << 149) if e == 0 else Fraction((1 << 23) | m) * Fraction(2) ** (e - 150)
    return -mag if b >> 31 else mag


def floor_log2(q: Fraction) -> int:
    """The exponent ``e`` with ``2**e <= q < 2**(e + 1)`` of a positive ``q``."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > q else e


def round_to_grid(q: Fraction, emin: int, mbits: int) -> Fraction:
    """The positive ``q`` rounded to nearest, ties to even, on the grid of a binary format
    with ``mbits`` fraction bits and least normal exponent ``emin`` (the subnormal grid
    below it); the exponent range above is the caller's."""
    quantum = Fraction(2) ** (max(floor_log2(q), emin) - mbits)
    n = q / quantum
    whole = n.numerator // n.denominator
    rem = n - whole
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    return whole * quantum


def round_f32(q: Fraction, zero_sign: int = 0) -> int:
    """Nearest-even binary32 of the exact value ``q`` (subnormal grid), then FTZ.

    ``zero_sign`` is the sign a zero ``q`` gets (exact-zero sign rules are the caller's)."""
    if q == 0:
        return zero_sign << 31
    sign = 1 if q < 0 else 0
    r = round_to_grid(abs(q), -126, 23)
    if r >= Fraction(2) ** 128:
        return (sign << 31) | INF
    if r < Fraction(2) ** -126:  # subnormal (or zero) after rounding: flushed
        return sign << 31
    e2 = floor_log2(r)
    mant = r / Fraction(2) ** (e2 - 23) - (1 << 23)
    assert mant.denominator == 1
    return (sign << 31) | ((e2 + 127) << 23) | int(mant)


def _special(fn, *ops: int) -> int | None:
    """Result for operands that include inf or NaN, from Python float semantics."""
    if not any(((o >> 23) & 0xFF) == 0xFF for o in ops):
        return None
    with np.errstate(all="ignore"):
        r = fn(*(np.float64(value(o)) for o in ops))
    if math.isnan(r):
        return CNAN
    return bits(float(r))


def ref_add(a: int, b: int) -> int:
    a, b = ftz(a), ftz(b)
    sp = _special(lambda x, y: x + y, a, b)
    if sp is not None:
        return sp
    zero_sign = 1 if (a >> 31) and (b >> 31) else 0  # exact zero: -0 only for -0 + -0
    return round_f32(to_fraction(a) + to_fraction(b), zero_sign)


def ref_sub(a: int, b: int) -> int:
    return ref_add(a, ftz(b) ^ 0x80000000) if not is_nan(b) else CNAN


def ref_mul(a: int, b: int) -> int:
    a, b = ftz(a), ftz(b)
    sp = _special(lambda x, y: x * y, a, b)
    if sp is not None:
        return sp
    return round_f32(to_fraction(a) * to_fraction(b), (a >> 31) ^ (b >> 31))


def ref_fma(a: int, b: int, c: int) -> int:
    a, b, c = ftz(a), ftz(b), ftz(c)
    sp = _special(lambda x, y, z: x * y + z, a, b, c)
    if sp is not None:
        return sp
    p = to_fraction(a) * to_fraction(b)
    psign = (a >> 31) ^ (b >> 31)
    zero_sign = 1 if psign and (c >> 31) else 0
    return round_f32(p + to_fraction(c), zero_sign)
