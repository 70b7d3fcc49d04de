"""Independent fp16/bf16 reference for the half-precision tests: exact rational arithmetic.

Nothing here uses ``simtgpu.sim.numerics``: patterns are decoded by hand into ``Fraction``s,
combined exactly and rounded to nearest even by hand (subnormals kept, NaN -> 0x7fff).
"""

from __future__ import annotations

from fractions import Fraction

from numerics_ref import floor_log2, round_to_grid

FIELDS = {"f16": (5, 10), "bf16": (8, 7)}
HNAN = 0x7FFF


def _consts(fmt: str) -> tuple[int, int, int, int]:
    ebits, mbits = FIELDS[fmt]
    bias = (1 << (ebits - 1)) - 1
    return ebits, mbits, bias, ((1 << ebits) - 1) << mbits


def is_nan(fmt: str, h: int) -> bool:
    _, _, _, inf = _consts(fmt)
    return (h & 0x7FFF) > inf


def is_inf(fmt: str, h: int) -> bool:
    _, _, _, inf = _consts(fmt)
    return (h & 0x7FFF) == inf


def to_fraction(fmt: str, h: int) -> Fraction:
    """Exact value of a finite half pattern."""
    ebits, mbits, bias, _ = _consts(fmt)
    e, m = (h >> mbits) & ((1 << ebits) - 1), h & ((1 << mbits) - 1)
    if e == 0:
        mag = Fraction(m) * Fraction(2) ** (1 - bias - mbits)
    else:
        mag = Fraction((1 << mbits) | m) * Fraction(2) ** (e - bias - mbits)
    return -mag if h >> 15 else mag


def round_half(fmt: str, q: Fraction, zero_sign: int = 0) -> int:
    """Nearest-even pattern of the exact ``q`` (subnormals kept, overflow to infinity)."""
    ebits, mbits, bias, inf = _consts(fmt)
    if q == 0:
        return zero_sign << 15
    sign = int(q < 0)
    r = round_to_grid(abs(q), 1 - bias, mbits)
    if r == 0:
        return sign << 15
    if r >= Fraction(2) ** (bias + 1):
        return (sign << 15) | inf
    e2 = floor_log2(r)
    if e2 < 1 - bias:  # subnormal
        return (sign << 15) | int(r / Fraction(2) ** (1 - bias - mbits))
    mant = r / Fraction(2) ** (e2 - mbits) - (1 << mbits)
    return (sign << 15) | ((e2 + bias) << mbits) | int(mant)


def _special(fmt: str, fn, *ops: int) -> int | None:
    """Result when an operand is inf or NaN: IEEE rules on Python floats."""
    if not any(is_nan(fmt, o) or is_inf(fmt, o) for o in ops):
        return None
    vals = []
    for o in ops:
        if is_nan(fmt, o):
            return HNAN
        vals.append(float("inf") * (-1 if o >> 15 else 1) if is_inf(fmt, o)
                    else float(to_fraction(fmt, o)))
    r = fn(*vals)
    if r != r:
        return HNAN
    if abs(r) == float("inf"):
        return (int(r < 0) << 15) | _consts(fmt)[3]
    return round_half(fmt, Fraction(r))  # finite results of inf operands do not occur


def ref_add(fmt: str, a: int, b: int) -> int:
    sp = _special(fmt, lambda x, y: x + y, a, b)
    if sp is not None:
        return sp
    return round_half(fmt, to_fraction(fmt, a) + to_fraction(fmt, b),
                      1 if (a >> 15) and (b >> 15) else 0)


def ref_sub(fmt: str, a: int, b: int) -> int:
    return HNAN if is_nan(fmt, b) else ref_add(fmt, a, b ^ 0x8000)


def ref_mul(fmt: str, a: int, b: int) -> int:
    sp = _special(fmt, lambda x, y: x * y, a, b)
    if sp is not None:
        return sp
    return round_half(fmt, to_fraction(fmt, a) * to_fraction(fmt, b), (a >> 15) ^ (b >> 15))


def ref_fma(fmt: str, a: int, b: int, c: int) -> int:
    sp = _special(fmt, lambda x, y, z: x * y + z, a, b, c)
    if sp is not None:
        return sp
    psign = (a >> 15) ^ (b >> 15)
    return round_half(fmt, to_fraction(fmt, a) * to_fraction(fmt, b) + to_fraction(fmt, c),
                      1 if psign and (c >> 15) else 0)
