"""Exact decimal -> IEEE-754 binary32 conversion for float constants (`li`, `.float`).

Going through Python's double and then to single would round twice and can be off by one
ulp; here the decimal is converted exactly (``fractions.Fraction``) and rounded once,
to nearest, ties to even. Denormal constants are encoded exactly (the FP units flush them
when they compute, not the assembler).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

QNAN = 0x7FC00000
INF = 0x7F800000
MAX_FINITE = Fraction(2) ** 127 * (2 - Fraction(1, 2 ** 23))

FLOAT_LITERAL = re.compile(r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|inf|nan")


def _round_half_even(q: Fraction) -> int:
    n = math.floor(q)
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2):
        n += 1
    return n


def f32_bits_exact(q: Fraction) -> int:
    """binary32 bits of a finite rational; ValueError when it rounds past the largest float."""
    sign = 0
    if q < 0:
        sign, q = 1 << 31, -q
    if q == 0:
        return sign
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1  # now 2**e <= q < 2**(e+1)
    if e < -126:  # subnormal: a multiple of 2**-149 (rounding may carry into the normals)
        return sign | _round_half_even(q * 2 ** 149)
    m = _round_half_even(q / Fraction(2) ** (e - 23))  # in [2**23, 2**24]
    bits = ((e + 126) << 23) + m  # the implicit bit adds the final 1 to the exponent
    if bits >= INF:
        raise ValueError("out of range")
    return sign | bits


def f32_bits(text: str, negative: bool = False) -> int:
    """The binary32 bits of a float literal (``1.5``, ``1e-3``, ``inf``, ``nan``)."""
    sign = (1 << 31) if negative else 0
    if text == "inf":
        return sign | INF
    if text == "nan":
        return sign | QNAN
    rough = float(text)  # a double: decides the far ends without exact arithmetic, which on
    # a literal like 1e1000000 would take minutes
    if rough == 0.0:  # below 2**-1074, far under half the smallest binary32 (2**-150)
        return sign
    if rough > 1e39 or len(text) > 800:
        raise ValueError(f"float constant {'-' if negative else ''}{text[:40]} is out of "
                         "range for binary32 (largest finite 3.4028235e38; write inf)"
                         if rough > 1e39 else "float constant has too many digits (at most "
                         "800)")
    q = Fraction(text)
    try:
        return sign | f32_bits_exact(q)  # the sign apart, so that -0.0 keeps it
    except ValueError:
        raise ValueError(f"float constant {'-' if negative else ''}{text} is out of range "
                         "for binary32 (largest finite 3.4028235e38; write inf)") from None
