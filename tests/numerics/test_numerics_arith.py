"""FP32 add/sub/mul/fma/min/max/abs/neg/compare/convert against independent references."""

import math

import numpy as np
import pytest
from numerics_ref import (
    CNAN,
    bits,
    ftz,
    is_nan,
    ref_add,
    ref_fma,
    ref_mul,
    ref_sub,
    value,
)
from simtgpu.errors import SimtgpuError
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import fp_operands

ONE, TWO, HALF = 0x3F800000, 0x40000000, 0x3F000000
MAXN, MINN = 0x7F7FFFFF, 0x00800000  # largest / smallest normal
SUB = 0x00000001  # smallest subnormal
NINF, PINF = 0xFF800000, 0x7F800000
QNAN, SNAN, NEG_NAN = 0x7FC00000, 0x7F800001, 0xFFC12345
# Operands of the exhaustive fma cross product (the pairs of the other ops come with
# fp_operands(..., edges=True)).
EDGES = [0, 0x80000000, ONE, 0xBF800000, TWO, HALF, MAXN, 0xFF7FFFFF, MINN, 0x80800000,
         SUB, 0x807FFFFF, 0x00400000, PINF, NINF, QNAN, SNAN, NEG_NAN, 0x3F800001, 0x33800000,
         0x34000000, 0x4B800000, 0x4B7FFFFF, 0x00800001, 0x7F000000, 0x0C000000]


def _arr(x):
    return np.array(x, dtype=np.uint32)


# --- hand-computed bit patterns -------------------------------------------------------------

HAND = [
    # op, a, b, expected
    ("fadd", ONE, ONE, TWO),
    ("fadd", ONE, 0x33800000, ONE),  # 1 + 2^-24: exact tie, stays on the even 1.0
    ("fadd", 0x3F800001, 0x33800000, 0x3F800002),  # tie with odd neighbour rounds up
    ("fadd", ONE, 0x33800001, 0x3F800001),  # just above the tie
    ("fadd", 0, 0x80000000, 0),  # +0 + -0 = +0
    ("fadd", 0x80000000, 0x80000000, 0x80000000),
    ("fadd", ONE, 0xBF800000, 0),  # x - x = +0
    ("fadd", MAXN, 0x73000000, PINF),  # max + half ulp: tie, odd mantissa, overflows
    ("fadd", MAXN, 0x72800000, MAXN),  # max + quarter ulp stays
    ("fadd", PINF, NINF, CNAN),
    ("fadd", QNAN, ONE, CNAN),
    ("fadd", NEG_NAN, ONE, CNAN),  # payload and sign are not propagated
    ("fadd", SUB, 0, 0),  # subnormal input flushed
    ("fadd", 0x80000001, 0, 0),  # -0 + +0 = +0 after the flush
    ("fadd", 0x00C00000, 0x80800000, 0),  # 1.5*2^-126 - 2^-126 = 2^-127: flushed, +0
    ("fadd", 0x80C00000, 0x00800000, 0x80000000),  # same, negative: -0
    ("fadd", SUB, MINN, MINN),
    ("fsub", ONE, ONE, 0),
    ("fsub", 0x80000000, 0, 0x80000000),  # -0 - +0 = -0
    ("fsub", PINF, PINF, CNAN),
    ("fsub", TWO, ONE, ONE),
    ("fmul", TWO, HALF, ONE),
    ("fmul", 0, PINF, CNAN),
    ("fmul", SUB, PINF, CNAN),  # the flushed subnormal is a zero
    ("fmul", 0x80000000, ONE, 0x80000000),
    ("fmul", MINN, HALF, 0),  # 2^-127 is subnormal: flushed
    ("fmul", 0x80800000, HALF, 0x80000000),
    ("fmul", 0x1F800000, 0x1F800000, 0),  # 2^-64 * 2^-64 underflows
    ("fmul", 0x5F800000, 0x5F800000, PINF),  # 2^64 * 2^64 overflows
    ("fmul", 0x3FFFFFFF, 0x3FFFFFFF, 0x407FFFFE),  # (2-2^-23)^2 = 4 - 2^-21 + 2^-46
    ("fmul", 0x3F800001, 0x3F800001, 0x3F800002),  # (1+2^-23)^2 rounds down to 1+2^-22
]


@pytest.mark.parametrize("op,a,b,expected", HAND)
def test_hand_computed(op, a, b, expected):
    assert int(getattr(nx, op)(a, b)) == expected


FMA_HAND = [
    # a, b, c, expected
    (ONE, ONE, ONE, TWO),
    (0x3F800001, 0x3F800001, 0xBF800002, 0x28800000),  # (1+u)^2 - (1+2u) = u^2 exactly
    (0x3F800001, 0x3F800001, 0xBF800000, 0x34800000),  # 2u + u^2 = 2u(1 + 2^-24): tie, even
    (ONE, 0x33800000, ONE, ONE),  # 1 + 2^-24: tie to even
    (ONE, 0x33800001, ONE, 0x3F800001),
    (ONE, ONE, 0xBF800000, 0),  # exact zero is +0
    (0x80000000, ONE, 0x80000000, 0x80000000),  # -0 * 1 + -0 = -0
    (PINF, 0, ONE, CNAN),
    (PINF, ONE, NINF, CNAN),
    (PINF, ONE, ONE, PINF),
    (ONE, ONE, QNAN, CNAN),
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is a binary32 midpoint; a tiny addend decides it,
    # which a float64 sum followed by a second rounding would lose.
    (0x3F800800, 0x3F800800, 0x1C800000, 0x3F801001),
    (0x3F800800, 0x3F800800, 0x9C800000, 0x3F801000),
    (0x3F800800, 0x3F800800, 0, 0x3F801000),
    (MAXN, TWO, 0xFF7FFFFF, MAXN),  # 2*max - max: the product may exceed the range
    (SUB, PINF, ONE, CNAN),  # flushed subnormal times inf
    (MINN, HALF, 0, 0),  # 2^-127 flushed
    # 2^-126 - 2^-150 rounds (tie, even) to 2^-126 on the binary32 grid: normal, kept.
    (MINN, 0x3F7FFFFF, 0, MINN),
    (MINN, 0x3F7FFFFE, 0, 0),  # 2^-126 - 2^-149 is subnormal after rounding: flushed
]


@pytest.mark.parametrize("a,b,c,expected", FMA_HAND)
def test_fma_hand_computed(a, b, c, expected):
    assert int(nx.ffma(a, b, c)) == expected


# --- random + edge operands against exact rationals -----------------------------------------

def _pairs(seed: int, n: int):
    rng = np.random.default_rng(seed)
    a, b = fp_operands(rng, n, 2, edges=True)
    # Exact ties and near-cancellation: b close to a or to -a.
    near = a[:200] ^ _arr(np.random.default_rng(seed + 1).integers(0, 4, 200))
    return np.concatenate([a, a[:200], a[:200]]), np.concatenate([b, near, near ^ 0x80000000])


@pytest.mark.parametrize("op,ref", [("fadd", ref_add), ("fsub", ref_sub), ("fmul", ref_mul)])
def test_add_sub_mul_exact(op, ref):
    a, b = _pairs(11, 1500)
    got = getattr(nx, op)(a, b)
    want = _arr([ref(int(x), int(y)) for x, y in zip(a, b, strict=True)])
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_add_mul_match_numpy_float32_with_ftz():
    """The second reference the brief names: float32 arithmetic plus the FTZ/NaN rules."""
    a, b = _pairs(12, 20000)
    fa = np.where((a & 0x7F800000) == 0, a & 0x80000000, a).view(np.float32)
    fb = np.where((b & 0x7F800000) == 0, b & 0x80000000, b).view(np.float32)
    for op, fn in (("fadd", np.add), ("fmul", np.multiply)):
        with np.errstate(all="ignore"):
            r = fn(fa, fb).view(np.uint32)
        r = np.where((r & 0x7F800000) == 0, r & 0x80000000, r)
        r = np.where((r & 0x7FFFFFFF) > 0x7F800000, CNAN, r)
        assert np.array_equal(getattr(nx, op)(a, b), r)


def test_fma_exact():
    rng = np.random.default_rng(21)
    n = 2500
    a, b, c = fp_operands(rng, n, 3)
    # Addends that cancel most of the product: the hard case for a single rounding.
    with np.errstate(all="ignore"):
        prod = (a.view(np.float32).astype(np.float64) * b.view(np.float32).astype(np.float64))
        near = (-prod).astype(np.float32).view(np.uint32)
    pick = rng.integers(0, 2, n).astype(bool)
    c = np.where(pick, near ^ _arr(rng.integers(0, 3, n)), c)
    e = _arr(EDGES)
    ea, eb, ec = (g.ravel() for g in np.meshgrid(e[:14], e[:14], e[:14]))
    a, b, c = (np.concatenate(x) for x in ((a, ea), (b, eb), (c, ec)))
    got = nx.ffma(a, b, c)
    want = _arr([ref_fma(int(x), int(y), int(z)) for x, y, z in zip(a, b, c, strict=True)])
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(c[i]), hex(got[i]), hex(want[i]))
                           for i in bad[:5]]


def test_fma_midpoints_with_tiny_addends():
    """Products that are exact binary32 midpoints plus an addend far below them: the cases
    where rounding the float64 sum twice goes wrong, so they test the round-to-odd step."""
    rng = np.random.default_rng(22)
    n = 600
    sig = rng.integers(1 << 12, 1 << 13, (2, n), dtype=np.uint32)  # 13-bit significands
    exp = rng.integers(110, 145, (2, n), dtype=np.uint32)
    sgn = rng.integers(0, 2, (2, n), dtype=np.uint32)
    a, b = ((sgn << 31) | (exp << 23) | ((sig << 11) & 0x7FFFFF)).astype(np.uint32)
    tiny_e = np.clip(exp[0] + exp[1] - 127 - 60, 1, 254).astype(np.uint32)
    c = (rng.integers(0, 2, n, dtype=np.uint32) << 31) | (tiny_e << 23) | \
        rng.integers(0, 1 << 23, n, dtype=np.uint32)
    got = nx.ffma(a, b, c)
    want = _arr([ref_fma(int(x), int(y), int(z)) for x, y, z in zip(a, b, c, strict=True)])
    assert np.array_equal(got, want)
    with np.errstate(all="ignore"):
        naive = (a.view(np.float32).astype(np.float64) * b.view(np.float32).astype(np.float64)
                 + c.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    assert np.count_nonzero(naive != want) > 20  # the vectors do hit double rounding


def test_fma_is_not_mul_then_add():
    """A single rounding differs from two roundings on this operand triple."""
    a, c = 0x3F800001, 0xBF800002
    assert int(nx.ffma(a, a, c)) != int(nx.fadd(nx.fmul(a, a), c))


# --- min / max / abs / neg ------------------------------------------------------------------

@pytest.mark.parametrize("a,b,mn,mx", [
    (ONE, TWO, ONE, TWO),
    (0x80000000, 0, 0x80000000, 0),  # -0 < +0
    (0, 0x80000000, 0x80000000, 0),
    (QNAN, ONE, ONE, ONE),  # one NaN: the other operand
    (ONE, NEG_NAN, ONE, ONE),
    (QNAN, NEG_NAN, CNAN, CNAN),  # two NaNs: canonical NaN
    (NINF, PINF, NINF, PINF),
    (SUB, 0x80000000, 0x80000000, 0),  # the subnormal is +0
    (0x80000001, 0, 0x80000000, 0),
    (0xBF800000, 0xC0000000, 0xC0000000, 0xBF800000),
    (QNAN, SUB, 0, 0),  # NaN and a flushed subnormal: the (flushed) zero
])
def test_min_max(a, b, mn, mx):
    assert (int(nx.fmin(a, b)), int(nx.fmax(a, b))) == (mn, mx)


def test_min_max_random_against_python():
    rng = np.random.default_rng(31)
    a, b = fp_operands(rng, 4000, 2)
    gmin, gmax = nx.fmin(a, b), nx.fmax(a, b)
    for x, y, lo, hi in zip(a, b, gmin, gmax, strict=True):
        x, y = ftz(int(x)), ftz(int(y))
        if is_nan(x) and is_nan(y):
            assert lo == hi == CNAN
            continue
        if is_nan(x) or is_nan(y):
            assert lo == hi == (y if is_nan(x) else x)
            continue
        # Order by value, then -0 before +0.
        key = sorted([x, y], key=lambda v: (value(v), -(v >> 31)))
        assert (int(lo), int(hi)) == (key[0], key[1])


@pytest.mark.parametrize("a,ab,ng", [
    (ONE, ONE, 0xBF800000), (0xBF800000, ONE, ONE), (0, 0, 0x80000000),
    (0x80000000, 0, 0), (SUB, 0, 0x80000000), (0x807FFFFF, 0, 0),
    (PINF, PINF, NINF), (NINF, PINF, PINF), (QNAN, CNAN, CNAN), (NEG_NAN, CNAN, CNAN),
])
def test_abs_neg(a, ab, ng):
    assert (int(nx.fabs(a)), int(nx.fneg(a))) == (ab, ng)


# --- compares -------------------------------------------------------------------------------

def _cmp_ref(cond: str, x: int, y: int) -> bool:
    x, y = ftz(x), ftz(y)
    unordered = is_nan(x) or is_nan(y)
    if cond == "nan":
        return unordered
    if cond == "num":
        return not unordered
    if unordered:
        return False
    fx, fy = value(x), value(y)
    return {"eq": fx == fy, "ne": fx != fy, "lt": fx < fy, "le": fx <= fy, "gt": fx > fy,
            "ge": fx >= fy}[cond]


@pytest.mark.parametrize("cond", nx.FP_CONDS)
def test_fcmp(cond):
    rng = np.random.default_rng(41)
    a, b = fp_operands(rng, 1000, 2, edges=True)
    a, b = np.concatenate([a, a]), np.concatenate([b, a])
    got = nx.fcmp(cond, a, b)
    assert got.dtype == bool
    want = np.array([_cmp_ref(cond, int(x), int(y)) for x, y in zip(a, b, strict=True)])
    assert np.array_equal(got, want)


def test_fcmp_hand():
    assert bool(nx.fcmp("eq", 0, 0x80000000))
    assert bool(nx.fcmp("eq", SUB, 0))  # flushed
    assert not bool(nx.fcmp("ne", QNAN, ONE))  # ordered ne
    assert not bool(nx.fcmp("eq", QNAN, QNAN))
    assert bool(nx.fcmp("nan", ONE, QNAN)) and not bool(nx.fcmp("num", ONE, QNAN))
    assert bool(nx.fcmp("lt", NINF, 0xFF7FFFFF))


# --- conversions ----------------------------------------------------------------------------

@pytest.mark.parametrize("op,a,expected", [
    ("i2f", 0, 0), ("i2f", 1, ONE), ("i2f", 0xFFFFFFFF, 0xBF800000),
    ("i2f", 0x80000000, 0xCF000000),  # -2^31 exactly
    ("i2f", 0x7FFFFFFF, 0x4F000000),  # 2^31 - 1 rounds to 2^31
    ("i2f", 16777217, 0x4B800000),  # 2^24 + 1: tie, to even 2^24
    ("i2f", 16777219, 0x4B800002),  # 2^24 + 3: tie, to even 2^24 + 4
    ("u2f", 0xFFFFFFFF, 0x4F800000), ("u2f", 0x80000000, 0x4F000000), ("u2f", 3, 0x40400000),
    ("f2i", bits(-3.7), 0xFFFFFFFD), ("f2i", bits(3.7), 3), ("f2i", bits(-0.5), 0),
    ("f2i", bits(2.0**31), 0x7FFFFFFF), ("f2i", bits(-(2.0**31)), 0x80000000),
    ("f2i", bits(-1e10), 0x80000000), ("f2i", PINF, 0x7FFFFFFF), ("f2i", NINF, 0x80000000),
    ("f2i", QNAN, 0), ("f2i", NEG_NAN, 0), ("f2i", SUB, 0), ("f2i", bits(2147483520.0), 2147483520),
    ("f2u", bits(-3.7), 0), ("f2u", bits(3.7), 3), ("f2u", bits(4294967040.0), 4294967040),
    ("f2u", bits(2.0**32), 0xFFFFFFFF), ("f2u", PINF, 0xFFFFFFFF), ("f2u", NINF, 0),
    ("f2u", QNAN, 0), ("f2u", 0x80000000, 0),
])
def test_cvt_hand(op, a, expected):
    assert int(nx.cvt(op, a)) == expected


def test_cvt_random_against_python():
    rng = np.random.default_rng(51)
    ints = rng.integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32)
    for op, signed in (("i2f", True), ("u2f", False)):
        got = nx.cvt(op, ints)
        for w, g in zip(ints, got, strict=True):
            iv = int(w) - (1 << 32) if signed and w >> 31 else int(w)
            # Python's int -> float is round-to-nearest-even to double, then to float32 via
            # struct; a 32-bit int is exact in double so this is one rounding.
            assert int(g) == bits(float(iv))
    pats = fp_operands(rng, 5000, 1)[0]
    for op, lo, hi in (("f2i", -(2**31), 2**31 - 1), ("f2u", 0, 2**32 - 1)):
        got = nx.cvt(op, pats)
        for p, g in zip(pats, got, strict=True):
            v = value(ftz(int(p)))
            want = 0 if math.isnan(v) else (
                lo if v == -math.inf else hi if v == math.inf else min(max(int(v), lo), hi))
            assert int(g) == want & 0xFFFFFFFF


# --- helpers and input checking -------------------------------------------------------------

def test_ftz_and_bit_helpers():
    assert int(nx.ftz(SUB)) == 0 and int(nx.ftz(0x807FFFFF)) == 0x80000000
    assert int(nx.ftz(MINN)) == MINN and int(nx.ftz(QNAN)) == QNAN
    assert int(nx.f32_to_bits(1.0)) == ONE
    assert float(nx.bits_to_f32(0xC0000000)) == -2.0
    out = nx.fadd(np.zeros((2, 3), np.uint32), ONE)
    assert out.shape == (2, 3) and out.dtype == np.uint32
    assert np.array_equal(nx.f32_to_bits(np.array([1.0, -2.0])), _arr([ONE, 0xC0000000]))
    assert int(nx.fadd(-1, 0)) == CNAN  # ints wrap: -1 is 0xffffffff, a NaN


def test_misuse_raises_our_error():
    with pytest.raises(SimtgpuError, match="uint32"):
        nx.fadd(1.5, 2.5)
    with pytest.raises(SimtgpuError, match="unknown condition 'lte'"):
        nx.fcmp("lte", 0, 0)
    with pytest.raises(SimtgpuError, match="unknown conversion"):
        nx.cvt("f2d", 0)
    with pytest.raises(SimtgpuError, match="unknown function"):
        nx.sfu("tan", 0)
