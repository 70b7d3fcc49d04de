"""FP32 numerics shared by the ISS, the RTL tests and the compiler: defined once, here.

Every operation takes and returns IEEE-754 binary32 *bit patterns* held in ``numpy.uint32``
arrays (any shape; Python ints are accepted too), because registers hold bits and both the ISS
and the RTL benches compare bits.  The rules (docs/numerics.md) are those of PTX ``.ftz``
arithmetic on sm_80+:

* add, sub, mul and fma round to nearest even; fma rounds once;
* subnormal inputs are read as zero of the same sign and subnormal results are flushed to
  zero of the same sign (FTZ);
* every NaN an arithmetic operation produces is the canonical NaN ``0x7fffffff``;
* min/max return the other operand when exactly one is NaN and order -0 below +0.

The special functions (:func:`sfu`) are fixed-point algorithms defined bit for bit in
:mod:`simtgpu.sim.sfu_algo`; ``rtl/sfu.py`` implements the same steps in hardware.
"""

from __future__ import annotations

import numpy as np
from simtgpu.errors import SimtgpuError
from simtgpu.isa.instructions import (
    CVT_OPS,
    FP_CONDS,
    HALF2_OPS,
    HALF_FORMATS,
    HCVT_OPS,
    SFU_OPS,
)

from .sfu_algo import (
    SFU_LATENCY,
    SFU_MAX_ULP,
    SFU_TRIG_ABS_ERR,
    SFU_TRIG_ABS_ERR_SLOPE,
    SFU_TRIG_MAX_X,
)
from .sfu_algo import evaluate as _sfu_eval

__all__ = [
    "CANONICAL_NAN", "CVT_OPS", "FP_CONDS", "SFU_LATENCY", "SFU_MAX_ULP", "SFU_OPS",
    "SFU_TRIG_ABS_ERR", "SFU_TRIG_ABS_ERR_SLOPE", "SFU_TRIG_MAX_X",
    "NumericsError", "bits_to_f32", "cvt", "f32_to_bits", "fabs", "fadd", "fcmp", "ffma",
    "fmax", "fmin", "fmul", "fneg", "fsub", "ftz", "is_nan", "sfu", "sfu_error_bound",
    "HALF_CANONICAL_NAN", "HALF_FORMATS", "HCVT_OPS", "HALF2_OPS", "bf16_to_f32", "f16_to_f32",
    "f32_to_bf16", "f32_to_f16", "half2", "half_to_f64", "hcvt", "hfma2", "mma", "mma_error_bound",
    "INT64_OPS", "cvt64", "int64_cmp", "int64_op", "wrap_i64",
]

CANONICAL_NAN = 0x7FFFFFFF
SIGN = 0x80000000
EXP_MASK = 0x7F800000
MANT_MASK = 0x007FFFFF
POS_INF = 0x7F800000
NEG_INF = 0xFF800000


class NumericsError(SimtgpuError):
    """A numerics function was called with an unknown operation or non-integer operands."""


def _u32(a: object, what: str = "operand") -> np.ndarray:
    """Operand as a uint32 array of bit patterns; ints wrap modulo 2**32 (so -1 is 0xffffffff)."""
    arr = np.asarray(a)
    if arr.dtype == np.uint32:
        return arr
    if arr.dtype.kind not in "iub":
        raise NumericsError(
            f"numerics: {what} must be integer bit patterns (uint32), not {arr.dtype}; "
            "use f32_to_bits() to convert floats")
    return (arr.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def _out(r: np.ndarray) -> np.ndarray:
    """0-d results come back as numpy scalars, others as arrays."""
    return r[()]


def f32_to_bits(x: object) -> np.ndarray:
    """binary32 bit patterns of ``x`` (floats are rounded to float32 first)."""
    return _out(np.asarray(x, dtype=np.float32).view(np.uint32))


def bits_to_f32(u: object) -> np.ndarray:
    """float32 values of the bit patterns ``u`` (no flushing)."""
    return _out(_u32(u).view(np.float32))


def is_nan(a: object) -> np.ndarray:
    """True where ``a`` is a NaN pattern (any payload, either sign)."""
    a = _u32(a)
    return _out((a & 0x7FFFFFFF) > POS_INF)


_U_SIGN = np.uint32(SIGN)
_U_ALL = np.uint32(0xFFFFFFFF)
_U_EXP = np.uint32(EXP_MASK)
_U_NAN = np.uint32(CANONICAL_NAN)


# The helpers below run once per warp instruction in the ISS, on 32-element arrays where each
# NumPy call costs about a microsecond: they are written with as few array operations as
# possible (no broadcast_arrays, masks instead of nested where).

def _ftz(a: np.ndarray) -> np.ndarray:
    return a & np.where((a & _U_EXP) == 0, _U_SIGN, _U_ALL)


def ftz(a: object) -> np.ndarray:
    """Flush subnormals to zero of the same sign; every other pattern is returned unchanged."""
    return _out(_ftz(_u32(a)))


def _finish(r: np.ndarray) -> np.ndarray:
    """Result rule shared by arithmetic on a float32 result: flush a subnormal, canonical NaN."""
    r = np.asarray(r)
    return np.where(np.isnan(r), _U_NAN, _ftz(r.view(np.uint32)))


def _f(a: np.ndarray) -> np.ndarray:
    return a.view(np.float32)


def _binary(a: object, b: object, fn) -> np.ndarray:
    fa, fb = _f(_ftz(_u32(a, "a"))), _f(_ftz(_u32(b, "b")))
    with np.errstate(all="ignore"):
        r = fn(fa, fb)
    return _out(_finish(r))


def fadd(a: object, b: object) -> np.ndarray:
    """a + b, round to nearest even, FTZ in and out, NaN -> 0x7fffffff."""
    return _binary(a, b, np.add)


def fsub(a: object, b: object) -> np.ndarray:
    """a - b, round to nearest even, FTZ in and out, NaN -> 0x7fffffff."""
    return _binary(a, b, np.subtract)


def fmul(a: object, b: object) -> np.ndarray:
    """a * b, round to nearest even, FTZ in and out, NaN -> 0x7fffffff."""
    return _binary(a, b, np.multiply)


def ffma(a: object, b: object, c: object) -> np.ndarray:
    """a * b + c with a single rounding to nearest even, FTZ in and out, NaN -> 0x7fffffff.

    The float64 product of two float32 values is exact.  The float64 sum ``s`` of product and
    addend is then corrected to *round to odd* using the exact TwoSum error ``e``: when the sum
    was inexact and ``s`` has an even last bit, ``s`` moves one step toward the exact value.
    Rounding a round-to-odd value with at least two extra bits (53 >= 24 + 2) to float32 gives
    the correctly rounded result of the exact a * b + c.
    """
    a, b, c = _ftz(_u32(a, "a")), _ftz(_u32(b, "b")), _ftz(_u32(c, "c"))
    with np.errstate(all="ignore"):
        p = _f(a).astype(np.float64) * _f(b).astype(np.float64)
        r = _sum_round_odd(p, _f(c).astype(np.float64)).astype(np.float32)
    return _out(_finish(r))


def _sum_round_odd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float64 ``p + q`` rounded to odd (exact sums stay exact), for a second rounding to a
    format with at most 51 significant bits that then equals rounding the exact sum once."""
    with np.errstate(all="ignore"):
        s = p + q
        bb = s - p
        e = (p - (s - bb)) + (q - bb)  # TwoSum: s + e == p + q exactly when s is finite
        sbits = np.asarray(s).view(np.uint64)
        fix = np.isfinite(s) & (e != 0) & ((sbits & np.uint64(1)) == 0)
        # Toward the exact value: magnitude grows when e has the sign of s.
        up = (e > 0) == (s > 0)
        step = np.where(up, np.uint64(1), np.uint64(0xFFFFFFFFFFFFFFFF))  # +1 or -1 (mod 2^64)
        return np.where(fix, sbits + step, sbits).view(np.float64)


def _order_key(a: np.ndarray) -> np.ndarray:
    """An int32 that orders non-NaN patterns like their values, with -0 just below +0:
    negative patterns get their magnitude bits inverted (sign-magnitude to two's complement)."""
    k = a.view(np.int32)
    return k ^ ((k >> 31) & np.int32(0x7FFFFFFF))


def _minmax(a: object, b: object, want_max: bool) -> np.ndarray:
    a, b = _ftz(_u32(a, "a")), _ftz(_u32(b, "b"))
    an, bn = np.isnan(_f(a)), np.isnan(_f(b))
    ka, kb = _order_key(a), _order_key(b)
    r = np.where((ka >= kb) if want_max else (ka <= kb), a, b)
    r = np.where(an, b, np.where(bn, a, r))
    return _out(np.where(an & bn, _U_NAN, r))


def fmin(a: object, b: object) -> np.ndarray:
    """Minimum; one NaN operand yields the other, two yield 0x7fffffff; -0 < +0; FTZ."""
    return _minmax(a, b, want_max=False)


def fmax(a: object, b: object) -> np.ndarray:
    """Maximum; one NaN operand yields the other, two yield 0x7fffffff; -0 < +0; FTZ."""
    return _minmax(a, b, want_max=True)


def atomic_fminmax(m: object, b: object, want_max: bool) -> np.ndarray:
    """The word ``atom.fmax`` (``atom.fmin``) stores: Triton's lowering of float atomic max/min.

    PTX has no ``atom.max.f32``; Triton orders the words by their bits instead: for
    ``b >= 0.0`` (+0.0 and -0.0 included) the signed integer max (min) of ``m`` and ``b``, for
    ``b < 0.0`` the unsigned integer min (max), and a NaN ``b`` leaves ``m``. This is the float
    order on non-NaN words except that ``b = -0.0`` acts as the smallest integer (max keeps
    ``m``, min stores -0.0); a positive NaN in memory sorts above +inf, a negative one below
    -inf. No flushing: the result is one of the two words, bit for bit.
    """
    m, b = _u32(m, "m"), _u32(b, "b")
    ms, bs = m.view(np.int32), b.view(np.int32)
    pos = (b < _U_SIGN) | (b == _U_SIGN)
    if want_max:
        take_m = np.where(pos, ms >= bs, m < b)
    else:
        take_m = np.where(pos, ms <= bs, m >= b)
    nan_b = (b & np.uint32(0x7FFFFFFF)) > np.uint32(POS_INF)
    return _out(np.where(take_m | nan_b, m, b))


def fabs(a: object) -> np.ndarray:
    """|a| after FTZ; a NaN gives 0x7fffffff (the instruction is an FP operation, not a mask)."""
    a = _ftz(_u32(a)) & np.uint32(0x7FFFFFFF)
    return _out(_finish(_f(a)))


def fneg(a: object) -> np.ndarray:
    """-a after FTZ; a NaN gives 0x7fffffff (the instruction is an FP operation, not a mask)."""
    a = _ftz(_u32(a)) ^ _U_SIGN
    return _out(_finish(_f(a)))


def fcmp(cond: str, a: object, b: object) -> np.ndarray:
    """FP32 compare after FTZ; eq..ge are ordered (false when either is NaN), -0 == +0.

    ``nan`` is true when either operand is NaN, ``num`` when neither is.
    """
    if cond not in FP_CONDS:
        raise NumericsError(f"fcmp: unknown condition {cond!r}; expected one of "
                            f"{', '.join(FP_CONDS)}")
    fa, fb = _f(_ftz(_u32(a, "a"))), _f(_ftz(_u32(b, "b")))
    unordered = np.isnan(fa) | np.isnan(fb)
    with np.errstate(all="ignore"):
        r = {
            "eq": lambda: fa == fb, "ne": lambda: (fa != fb) & ~unordered,
            "lt": lambda: fa < fb, "le": lambda: fa <= fb,
            "gt": lambda: fa > fb, "ge": lambda: fa >= fb,
            "nan": lambda: unordered, "num": lambda: ~unordered,
        }[cond]()
    return _out(np.asarray(r, dtype=bool))


def cvt(op: str, a: object) -> np.ndarray:
    """Conversions: ``i2f``/``u2f`` round to nearest even; ``f2i``/``f2u`` truncate toward
    zero, saturate to the integer range, and turn NaN into 0 (``f2u`` maps negatives to 0).
    Float inputs are flushed first.  Results are uint32 register patterns."""
    if op not in CVT_OPS:
        raise NumericsError(f"cvt: unknown conversion {op!r}; expected one of "
                            f"{', '.join(CVT_OPS)}")
    a = _u32(a)
    if op in ("i2f", "u2f"):
        ints = a.view(np.int32) if op == "i2f" else a
        # int -> float64 is exact (|x| < 2^53); float64 -> float32 rounds to nearest even.
        r = ints.astype(np.float64).astype(np.float32)
        return _out(r.view(np.uint32))
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        x = _f(_ftz(a)).astype(np.float64)
    lo, hi = (-(2.0**31), 2.0**31 - 1) if op == "f2i" else (0.0, 2.0**32 - 1)
    with np.errstate(invalid="ignore"):
        t = np.clip(np.trunc(x), lo, hi)
    t = np.where(np.isnan(x), 0.0, t)
    return _out((t.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32))


# --- 64-bit integers (the compiler's tl.int64: constant folding and its reference) -----------

INT64_OPS = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "sra", "min", "max",
             "minu", "maxu")


def wrap_i64(x: int) -> int:
    """``x`` wrapped to a signed 64-bit integer (two's complement, as NumPy's int64)."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def int64_op(op: str, a: int, b: int) -> int:
    """The 64-bit integer op ``op`` on exact Python ints, wrapped to signed 64 bits. Shift
    amounts are taken modulo 64 (as the 32-bit ISA takes them modulo 32); ``shr``, ``minu``
    and ``maxu`` read the operands as unsigned."""
    m = (1 << 64) - 1
    a, b = wrap_i64(a), wrap_i64(b)
    if op == "shl":
        return wrap_i64(a << (b & 63))
    if op in ("shr", "sra"):
        return wrap_i64((a & m if op == "shr" else a) >> (b & 63))
    if op in ("minu", "maxu"):
        return wrap_i64((min if op == "minu" else max)(a & m, b & m))
    fns = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
           "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
           "min": lambda: min(a, b), "max": lambda: max(a, b)}
    if op not in fns:
        raise NumericsError(f"int64_op: unknown operation {op!r}; expected one of "
                            f"{', '.join(INT64_OPS)}")
    return wrap_i64(fns[op]())


def int64_cmp(cond: str, a: int, b: int) -> bool:
    """Integer comparison ``cond`` (eq ne lt le gt ge, and ltu leu gtu geu) of two 64-bit
    values."""
    a, b = wrap_i64(a), wrap_i64(b)
    if cond.endswith("u"):
        a, b, cond = a & ((1 << 64) - 1), b & ((1 << 64) - 1), cond[:-1]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
            "ge": a >= b}[cond]


def _int_to_f32_bits(x: int) -> int:
    """The float32 nearest to the integer ``x`` (ties to even), as a bit pattern."""
    m = abs(x)
    shift = max(0, m.bit_length() - 24)
    q, r = m >> shift, m & ((1 << shift) - 1)
    if shift and (r > 1 << (shift - 1) or (r == 1 << (shift - 1) and q & 1)):
        q += 1
    f = float(q) * 2.0 ** shift  # exact: q <= 2**24
    return int(f32_to_bits(np.float32(-f if x < 0 else f))[()])


def cvt64(op: str, a: int) -> int:
    """Conversions between 64-bit integers and float32: ``i2f``/``u2f`` read the signed or
    unsigned 64-bit ``a`` and return float32 bits rounded to nearest even; ``f2i``/``f2u``
    read float32 bits, truncate toward zero, saturate to the 64-bit range and turn NaN into
    0 (as PTX's ``cvt.rzi.s64.f32``; ``f2u`` maps negatives to 0). Integer results are
    signed 64-bit Python ints (an unsigned result wrapped)."""
    if op in ("i2f", "u2f"):
        a = wrap_i64(a)
        return _int_to_f32_bits(a & ((1 << 64) - 1) if op == "u2f" else a)
    if op not in ("f2i", "f2u"):
        raise NumericsError(f"cvt64: unknown conversion {op!r}")
    x = float(_f(_ftz(_u32(a))).reshape(-1)[0])
    if x != x:
        return 0
    lo, hi = (-(1 << 63), (1 << 63) - 1) if op == "f2i" else (0, (1 << 64) - 1)
    t = min(max(int(x), lo), hi) if abs(x) != float("inf") else (hi if x > 0 else lo)
    return wrap_i64(t)


def sfu(op: str, a: object) -> np.ndarray:
    """Special function ``op`` (rcp rsqrt sqrt exp2 log2 sin cos), bit-exact with rtl/sfu.py.

    The algorithms and their measured error bounds (:data:`SFU_MAX_ULP`) are in
    docs/numerics.md.
    """
    if op not in SFU_OPS:
        raise NumericsError(f"sfu: unknown function {op!r}; expected one of "
                            f"{', '.join(SFU_OPS)}")
    return _out(_sfu_eval(op, _ftz(_u32(a))))


def sfu_error_bound(op: str, a: object) -> np.ndarray:
    """Documented bound on |sfu(op, a) - exact| (float64 per element) for finite results.

    For tests that compare SFU results with float64 NumPy math: rcp..log2 allow
    ``SFU_MAX_ULP[op]`` ulps of the exact result (results below the normal range flush to
    zero, so they may be off by up to 2**-126); sin/cos allow the absolute bound
    ``SFU_TRIG_ABS_ERR + |x| * SFU_TRIG_ABS_ERR_SLOPE`` (2 beyond ``SFU_TRIG_MAX_X``).
    """
    if op not in SFU_OPS:
        raise NumericsError(f"sfu_error_bound: unknown function {op!r}; expected one of "
                            f"{', '.join(SFU_OPS)}")
    with np.errstate(invalid="ignore"):
        x = _f(_ftz(_u32(a))).astype(np.float64)
    if op in ("sin", "cos"):
        ax = np.abs(x)
        bound = SFU_TRIG_ABS_ERR + ax * SFU_TRIG_ABS_ERR_SLOPE
        return _out(np.where(ax > SFU_TRIG_MAX_X, 2.0, bound))
    ref_fn = {"rcp": lambda v: 1.0 / v, "rsqrt": lambda v: 1.0 / np.sqrt(v),
              "sqrt": np.sqrt, "exp2": np.exp2, "log2": np.log2}[op]
    with np.errstate(all="ignore"):
        ref = np.abs(ref_fn(x))
        e = np.floor(np.log2(np.where(ref > 0, ref, 1.0)))
    ulp = np.exp2(np.maximum(e, -126) - 23)
    return _out(np.where(ref < 2.0**-126, 2.0**-126, SFU_MAX_ULP[op] * ulp))


# --- half precision: fp16 and bf16 ------------------------------------------------------
# Half values are uint16 bit patterns. Conversions and half2 arithmetic keep subnormals (no
# flushing: PTX's f16/bf16 instructions without .ftz); results round to nearest even, and
# every NaN result is the canonical 0x7fff. The matrix multiply-accumulate (mma) works in
# FP32 through fmul and fadd above, so it follows the FP32 rules (FTZ, 0x7fffffff).

HALF_CANONICAL_NAN = 0x7FFF
_HALF_FIELDS = {"f16": (5, 10), "bf16": (8, 7)}  # exponent bits, mantissa bits


def _half_fmt(fmt: str) -> tuple[int, int]:
    if fmt not in _HALF_FIELDS:
        raise NumericsError(f"unknown half format {fmt!r}; expected one of "
                            f"{', '.join(HALF_FORMATS)}")
    return _HALF_FIELDS[fmt]


def _u16(a: object, what: str = "operand") -> np.ndarray:
    """Half operand as uint16 patterns (ints taken modulo 2**16)."""
    arr = np.asarray(a)
    if arr.dtype == np.uint16:
        return arr
    return (_u32(arr, what) & np.uint32(0xFFFF)).astype(np.uint16)


def half_to_f64(fmt: str, h: object) -> np.ndarray:
    """float64 values of half patterns ``h`` (exact; subnormals kept, NaNs stay NaN)."""
    _half_fmt(fmt)
    h = _u16(h)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        if fmt == "f16":
            return _out(h.view(np.float16).astype(np.float64))
        return _out((h.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64))


def _round_half(x: np.ndarray, fmt: str) -> np.ndarray:
    """float64 ``x`` rounded once to ``fmt``, nearest even, subnormals kept, overflow to the
    signed infinity, NaN -> 0x7fff. Integer arithmetic on the float64 fields, so the rounding
    is direct (never through float32) and identical on every machine."""
    ebits, mbits = _half_fmt(fmt)
    bits = np.asarray(x, dtype=np.float64).view(np.uint64)
    sign = ((bits >> np.uint64(63)) << np.uint64(15)).astype(np.int64)
    ex = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    man = (bits & np.uint64((1 << 52) - 1)).astype(np.int64)
    sig = np.where(ex > 0, man | (1 << 52), man)
    e = np.where(ex > 0, ex - 1023, -1022)  # x = sig * 2**(e - 52)
    emin = 2 - (1 << (ebits - 1))  # exponent of the smallest normal
    shift = np.minimum((52 - mbits) + np.maximum(emin - e, 0), 62)
    q = sig >> shift
    rem = sig & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    # normal: exponent field e - emin + 1, and q carries the hidden bit (a carry out of the
    # significand moves into the exponent); subnormal: q alone (q == 2**mbits is the min normal)
    enc = np.minimum((np.maximum(e - emin, 0) << mbits) + q, ((1 << ebits) - 1) << mbits)
    r = np.where(np.isnan(np.asarray(x, dtype=np.float64)), HALF_CANONICAL_NAN, sign | enc)
    return r.astype(np.uint16)


def f32_to_f16(a: object) -> np.ndarray:
    """FP32 patterns to fp16 patterns: RNE, overflow to infinity, NaN -> 0x7fff (PTX
    ``cvt.rn.f16.f32``); FP32 subnormals are below fp16's range and round to a signed zero."""
    with np.errstate(invalid="ignore"):
        return _out(_round_half(_f(_u32(a)).astype(np.float64), "f16"))


def f32_to_bf16(a: object) -> np.ndarray:
    """FP32 patterns to bf16 patterns: RNE, subnormals kept (not flushed), overflow to
    infinity, NaN -> 0x7fff (PTX ``cvt.rn.bf16.f32``)."""
    with np.errstate(invalid="ignore"):
        return _out(_round_half(_f(_u32(a)).astype(np.float64), "bf16"))


def _half_to_f32_bits(fmt: str, h: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        v = np.asarray(half_to_f64(fmt, h)).astype(np.float32)
    return np.where(np.isnan(v), _U_NAN, v.view(np.uint32))


def f16_to_f32(h: object) -> np.ndarray:
    """fp16 patterns to FP32 patterns, exact (fp16 subnormals are FP32 normals); NaN ->
    0x7fffffff (PTX ``cvt.f32.f16``)."""
    return _out(_half_to_f32_bits("f16", _u16(h)))


def bf16_to_f32(h: object) -> np.ndarray:
    """bf16 patterns to FP32 patterns, exact: the pattern shifted up 16 bits (a bf16
    subnormal stays an FP32 subnormal, which FP32 arithmetic then reads as zero); NaN ->
    0x7fffffff (PTX ``cvt.f32.bf16``)."""
    return _out(_half_to_f32_bits("bf16", _u16(h)))


_U16 = np.uint32(0xFFFF)
_SH16 = np.uint32(16)


def hcvt(op: str, a: object, b: object = 0) -> np.ndarray:
    """The ``hcvt.*`` conversions on register patterns (uint32 in, uint32 out).

    ``hl2f``/``hh2f`` (``bl2f``/``bh2f``) read the fp16 (bf16) in the low/high half of
    ``a``; ``f2h``/``f2b`` write the low half and zero the high half; ``f2h2``/``f2b2`` pack
    ``a`` into the low half and ``b`` into the high half.
    """
    if op not in HCVT_OPS:
        raise NumericsError(f"hcvt: unknown conversion {op!r}; expected one of "
                            f"{', '.join(HCVT_OPS)}")
    a = _u32(a, "a")
    if op.endswith("2f"):
        fmt = "f16" if op[0] == "h" else "bf16"
        h = (a >> _SH16) if op[1] == "h" else (a & _U16)
        return _out(_half_to_f32_bits(fmt, h.astype(np.uint16)))
    narrow = f32_to_f16 if op[2] == "h" else f32_to_bf16
    lo = np.asarray(narrow(a)).astype(np.uint32)
    if op.endswith("2"):
        return _out(lo | (np.asarray(narrow(_u32(b, "b"))).astype(np.uint32) << _SH16))
    return _out(lo)


def _halves(fmt: str, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray(half_to_f64(fmt, (r & _U16).astype(np.uint16))),
            np.asarray(half_to_f64(fmt, (r >> _SH16).astype(np.uint16))))


def _pack(fmt: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return _out(_round_half(lo, fmt).astype(np.uint32)
                | (_round_half(hi, fmt).astype(np.uint32) << _SH16))


def half2(op: str, fmt: str, a: object, b: object) -> np.ndarray:
    """Packed ``hadd2``/``hsub2``/``hmul2`` on both halves of ``a`` and ``b`` in ``fmt``:
    each half is the exact result rounded once (RNE), subnormals kept, NaN -> 0x7fff."""
    if op not in HALF2_OPS:
        raise NumericsError(f"half2: unknown operation {op!r}; expected one of "
                            f"{', '.join(HALF2_OPS)}")
    _half_fmt(fmt)
    (al, ah), (bl, bh) = _halves(fmt, _u32(a, "a")), _halves(fmt, _u32(b, "b"))
    with np.errstate(all="ignore"):
        if op == "hmul2":  # 11- or 8-bit significands: the float64 product is exact
            return _pack(fmt, al * bl, ah * bh)
        if op == "hsub2":
            bl, bh = -bl, -bh
        return _pack(fmt, _sum_round_odd(al, bl), _sum_round_odd(ah, bh))


def hfma2(fmt: str, a: object, b: object, c: object) -> np.ndarray:
    """Packed ``hfma2``: each half ``a * b + c`` rounded once (RNE) in ``fmt``, subnormals
    kept, NaN -> 0x7fff. The float64 product is exact; the sum is rounded to odd and then to
    ``fmt``, which equals one rounding of the exact value."""
    _half_fmt(fmt)
    (al, ah), (bl, bh), (cl, ch) = (_halves(fmt, _u32(x, n))
                                    for x, n in ((a, "a"), (b, "b"), (c, "c")))
    with np.errstate(all="ignore"):
        return _pack(fmt, _sum_round_odd(al * bl, cl), _sum_round_odd(ah * bh, ch))


def mma(fmt: str, a: object, b: object, c: object) -> np.ndarray:
    """``D = A x B + C`` of the matrix unit, bit-exact with rtl/matrix_unit.py.

    ``a`` (..., m, k) and ``b`` (..., k, n) hold ``fmt`` patterns, ``c`` (..., m, n) FP32
    patterns; leading dimensions batch. The order of operations is fixed so that every
    implementation agrees bit for bit:

    1. every element of A and B is converted to FP32 exactly;
    2. each product ``A[i, j] * B[j, l]`` is an FP32 ``fmul`` (exact for fp16; for bf16
       rounded, with FP32's FTZ);
    3. the k products are summed by a balanced binary tree of FP32 ``fadd`` (pairs
       (0, 1), (2, 3), ... then pairs of those sums, ...);
    4. ``D = fadd(sum, C)``.
    """
    _half_fmt(fmt)
    a, b, c = _u16(a, "a"), _u16(b, "b"), _u32(c, "c")
    k = a.shape[-1]
    if a.ndim < 2 or b.shape[-2] != k or k & (k - 1):
        raise NumericsError(f"mma: shapes {a.shape} x {b.shape} do not chain, or k is not a "
                            "power of two")
    fa = _half_to_f32_bits(fmt, a)[..., :, None, :]  # (..., m, 1, k)
    fb = np.swapaxes(_half_to_f32_bits(fmt, b), -1, -2)[..., None, :, :]  # (..., 1, n, k)
    p = np.asarray(fmul(fa, fb))
    while p.shape[-1] > 1:
        p = np.asarray(fadd(p[..., 0::2], p[..., 1::2]))
    return _out(np.asarray(fadd(p[..., 0], c)))


def mma_error_bound(fmt: str, a: object, b: object, c: object) -> np.ndarray:
    """Bound on |mma(fmt, a, b, c) - exact A x B + C| (float64 per element) for results that
    stay in FP32's normal range: ``gamma_d * (sum |A B| + |C|)`` with ``d`` the roundings on
    the longest path (log2 k adds + the C add, + the product for bf16) and
    ``gamma_d = d u / (1 - d u)``, ``u = 2**-24``; plus 2**-126 per rounding for flushes."""
    _half_fmt(fmt)
    a, b, c = _u16(a, "a"), _u16(b, "b"), _u32(c, "c")
    k = a.shape[-1]
    depth = k.bit_length() - 1 + 1 + (fmt == "bf16")
    u = 2.0 ** -24
    gamma = depth * u / (1 - depth * u)
    with np.errstate(invalid="ignore"):
        mag = np.abs(np.asarray(half_to_f64(fmt, a))) @ np.abs(np.asarray(half_to_f64(fmt, b)))
        cv = np.abs(_f(_ftz(c)).astype(np.float64))
    return _out(gamma * (mag + cv) + (k + 1) * 2.0 ** -126)
