"""Special-function algorithms on binary32 bit patterns, defined as integer arithmetic.

This is the bit-exact definition of ``sfu.rcp rsqrt sqrt exp2 log2 sin cos``; rtl/sfu.py does
the same integer steps in hardware, so every intermediate below is an integer (int64 here)
whose width the RTL matches.  All functions are vectorised over uint32 arrays of *flushed*
operands (numerics.sfu applies FTZ first).

Every op follows one pattern (docs/numerics.md has the rationale and error tables):

1. special operands (NaN, +-inf, +-0, negatives where undefined) pick a constant result;
2. the operand is reduced to a ROM segment index ``idx`` and a ``w``-bit segment fraction
   ``f``, plus an exponent offset ``k`` and a sign (for sin/cos the reduction first multiplies
   the significand by 1/(2*pi) in fixed point);
3. a quadratic from the coefficient ROM (sfu_tables.py, units of 2**-30) is evaluated by
   Horner's rule with two truncating multiply-shifts::

       t = (c2 * f) >> w;   t = ((c1 + t) * f) >> w;   y = c0 + t

4. log2 multiplies once more (``R = ee * 2**54 + V * y``);
5. ``y * 2**k`` is normalised and rounded to 24 significant bits, round half away from
   zero on the magnitude; overflow gives inf, a result below the normal range gives zero.
"""

from __future__ import annotations

import math

import numpy as np

from .sfu_tablegen import FRAC, SEG_BITS, TABLE_SIZES
from .sfu_tables import TABLES

SFU_LATENCY = 12
"""Cycles from the clock edge that samples ``start`` to the cycle in which ``done`` is high."""

SFU_MAX_ULP: dict[str, float] = {
    "rcp": 0.76, "rsqrt": 0.59, "sqrt": 0.53, "exp2": 0.53, "log2": 0.58,
    "sin": math.inf, "cos": math.inf,
}
"""Largest error in ulps of the exact result over the normal range, measured (docs/numerics.md,
``python -m simtgpu.sim.sfu_accuracy``).  sin and cos have an absolute bound instead."""

SFU_TRIG_ABS_ERR = 2.0**-23
"""|sin/cos(x) - exact| <= SFU_TRIG_ABS_ERR + |x| * SFU_TRIG_ABS_ERR_SLOPE (measured 2**-24.6
on [-pi, pi]); the slope is the error of the 1/(2*pi) constant."""
SFU_TRIG_ABS_ERR_SLOPE = 2.0**-38
SFU_TRIG_MAX_X = 2.0**24
"""The absolute bound above is measured up to this |x|; beyond it the reduction loses its
correct bits one by one (none are left past about 2**38) and sin/cos only promise a value in
[-1, 1]."""

CANONICAL_NAN = 0x7FFFFFFF
ONE = 0x3F800000

# ROM layout shared with the RTL: the tables one after another, in TABLE_SIZES order.
ROM_BASE: dict[str, int] = {}
_ROM_ROWS: list[tuple[int, int, int]] = []
for _op, _size in TABLE_SIZES.items():
    ROM_BASE[_op] = len(_ROM_ROWS)
    _ROM_ROWS.extend(TABLES[_op])
ROM: np.ndarray = np.array(_ROM_ROWS, dtype=np.int64)  # shape (rows, 3): c0, c1, c2

# 1/(2*pi) as a 38-bit integer scaled by 2**40: the sin/cos reduction multiplier.
INV_2PI = round(2**40 / (2 * math.pi))
TINY_TRIG_EXP = 127 - 12  # biased exponents below this: sin(x) = x, cos(x) = 1
LOG_FRAC = 54  # log2 accumulates in units of 2**-54

# Segment-fraction widths (w) per op.
W_MANT = 23 - SEG_BITS  # rcp, rsqrt, sqrt, log2: the mantissa below the index bits
W_EXP2 = 32 - SEG_BITS  # exp2: 32 fraction bits of x
W_TRIG = 30 - SEG_BITS  # sin/cos: 30 bits within a quadrant


def _fields(a: np.ndarray):
    a = a.astype(np.int64)
    s = (a >> 31) & 1
    e_b = (a >> 23) & 0xFF
    m = a & 0x7FFFFF
    return s, e_b, m


def poly(base: int, idx: np.ndarray, f: np.ndarray, w: int | np.ndarray) -> np.ndarray:
    """Horner evaluation of the ROM quadratic at row ``base + idx``, fraction ``f`` of w bits."""
    row = ROM[base + idx]
    c0, c1, c2 = row[..., 0], row[..., 1], row[..., 2]
    t = (c2 * f) >> w
    t = ((c1 + t) * f) >> w
    return c0 + t


def bit_length(y: np.ndarray) -> np.ndarray:
    """Exact bit length of non-negative int64 values below 2**62 (0 for 0).

    frexp's exponent is the bit length unless the conversion to float64 rounded up to the next
    power of two (possible above 2**53), which the shift check corrects."""
    n = np.frexp(y.astype(np.float64))[1].astype(np.int64)
    return n - ((y >> np.maximum(n - 1, 0)) == 0) * (y > 0)


def pack(sign: np.ndarray, y: np.ndarray, k: np.ndarray) -> np.ndarray:
    """binary32 pattern of (-1)**sign * y * 2**k, y >= 0 an int64 below 2**62.

    Rounds to 24 significant bits, half away from zero; exponents above the range give inf,
    below the normal range give a zero of the given sign (FTZ).
    """
    y = np.asarray(y, dtype=np.int64)
    L = bit_length(y)
    sh = L - 24
    down = np.maximum(sh, 1)
    q_dn = (y >> down) + ((y >> (down - 1)) & 1)  # shifted with the first dropped bit added
    q_up = y << np.maximum(-sh, 0)
    q = np.where(sh > 0, q_dn, q_up)
    carry = q >> 24  # rounding overflowed to 2**24
    q = q >> carry
    biased = k + L - 1 + carry + 127
    mant = q & 0x7FFFFF
    out = (sign << 31) | (np.minimum(np.maximum(biased, 0), 255) << 23) | mant
    out = np.where(biased >= 255, (sign << 31) | 0x7F800000, out)
    out = np.where((biased <= 0) | (y == 0), sign << 31, out)
    return out.astype(np.uint32)


def _specials(op: str, s, e_b, m):
    """(is_special, special result) for one op; everything else takes the algorithm."""
    zero = e_b == 0
    inf = (e_b == 255) & (m == 0)
    nan = (e_b == 255) & (m != 0)
    neg = s == 1
    sign = s << 31
    if op == "rcp":
        special = zero | inf | nan
        res = np.where(zero, sign | 0x7F800000, np.where(inf, sign, CANONICAL_NAN))
    elif op == "rsqrt":
        special = zero | inf | nan | neg
        res = np.where(zero, sign | 0x7F800000,
                       np.where(inf & ~neg, 0, CANONICAL_NAN))
    elif op == "sqrt":
        special = zero | inf | nan | neg
        res = np.where(zero, sign, np.where(inf & ~neg, 0x7F800000, CANONICAL_NAN))
    elif op == "exp2":
        big = e_b >= 127 + 7  # |x| >= 128: overflow or underflow
        special = zero | inf | nan | big
        res = np.where(zero, ONE, np.where(nan, CANONICAL_NAN,
                                           np.where(neg, 0, 0x7F800000)))
    elif op == "log2":
        special = zero | inf | nan | neg
        res = np.where(zero, 0xFF800000, np.where(inf & ~neg, 0x7F800000, CANONICAL_NAN))
    else:  # sin, cos
        tiny = e_b < TINY_TRIG_EXP
        special = tiny | inf | nan
        small = (sign | (e_b << 23) | m) if op == "sin" else np.full(s.shape, ONE)
        res = np.where(tiny, small, CANONICAL_NAN)
    return special, res


def evaluate(op: str, a: np.ndarray) -> np.ndarray:
    """``sfu.<op>`` of the flushed uint32 patterns ``a`` (uint32 result, same shape)."""
    shape = np.shape(a)
    a = np.asarray(a, dtype=np.uint32).reshape(-1)
    s, e_b, m = _fields(a)
    special, special_res = _specials(op, s, e_b, m)
    e = e_b - 127
    base = ROM_BASE[op]
    idx_m = m >> W_MANT
    f_m = m & ((1 << W_MANT) - 1)
    if op == "rcp":
        y = poly(base, idx_m, f_m, W_MANT)
        sign, k = s, 96 - e_b
    elif op in ("rsqrt", "sqrt"):
        par = e & 1
        y = poly(base, (par << SEG_BITS) | idx_m, f_m, W_MANT)
        half = (e - par) >> 1
        sign = np.zeros_like(s)
        k = -half - 1 - FRAC if op == "rsqrt" else half - FRAC
    elif op == "exp2":
        sm = np.where(s == 1, -(m | (1 << 23)), m | (1 << 23))  # signed 1.m * 2**23
        sh = e + 9  # fixed point x * 2**32 = sm * 2**(e - 23 + 32)
        x32 = np.where(sh >= 0, sm << np.minimum(np.maximum(sh, 0), 15),
                       sm >> np.minimum(np.maximum(-sh, 0), 63))
        n = x32 >> 32
        frac = x32 & 0xFFFFFFFF
        y = poly(base, frac >> W_EXP2, frac & ((1 << W_EXP2) - 1), W_EXP2)
        sign, k = np.zeros_like(s), n - FRAC
    elif op == "log2":
        hi = m >> 22  # 1.m >= 1.5: use (1.m)/2 and exponent + 1 so |v| stays small
        v = np.where(hi == 1, m - (1 << 23), m << 1)  # v * 2**24, signed
        ee = e + hi
        q = poly(base, idx_m, f_m, W_MANT)
        r = (ee << LOG_FRAC) + v * q
        sign, y, k = (r < 0).astype(np.int64), np.abs(r), np.full(s.shape, -LOG_FRAC)
    else:  # sin, cos
        mant = m | (1 << 23)
        prod = mant * INV_2PI  # < 2**62: revolutions * 2**(63 - e)
        rsh = 31 - e  # revolutions * 2**32 = prod >> rsh; a left shift keeps bits mod 2**32
        rev = np.where(rsh >= 0, prod >> np.minimum(np.maximum(rsh, 0), 63),
                       ((prod & 0xFFFFFFFF) << np.minimum(np.maximum(-rsh, 0), 32))) & 0xFFFFFFFF
        quad = rev >> 30
        if op == "cos":
            quad = (quad + 1) & 3
        u = rev & ((1 << 30) - 1)
        odd = quad & 1
        y = _trig_poly(odd, u)
        y = np.minimum(np.maximum(y, 0), 1 << FRAC)
        neg = quad >> 1
        sign = (neg ^ s) if op == "sin" else neg
        k = np.full(s.shape, -FRAC)
    res = pack(sign, np.maximum(y, 0), k).astype(np.int64)
    res = np.where(special, special_res, res)
    return res.astype(np.uint32).reshape(shape)


def _trig_poly(odd: np.ndarray, u: np.ndarray) -> np.ndarray:
    """sin(pi/2 u) for even quadrants, cos(pi/2 u) for odd ones (after the cos shift)."""
    base = np.where(odd == 1, ROM_BASE["cos"], ROM_BASE["sin"])
    return poly(base, u >> W_TRIG, u & ((1 << W_TRIG) - 1), W_TRIG)
