"""The SFU algorithms: special operands by hand, error bounds against float64 NumPy, exact
cases, the ROM against its generator, and the properties the error sweep relies on."""

import math

import numpy as np
import pytest
from numerics_ref import CNAN, bits, value
from simtgpu.sim import numerics as nx
from simtgpu.sim import sfu_algo, sfu_tablegen
from simtgpu.sim.sfu_tables import TABLES
from simtgpu.verification.fp_vectors import fp_operands

ONE = 0x3F800000
PINF, NINF, QNAN = 0x7F800000, 0xFF800000, 0x7FC00000
SUB, NSUB = 0x00000001, 0x80000005

SPECIALS = [
    # op, operand, expected
    ("rcp", 0, PINF), ("rcp", 0x80000000, NINF), ("rcp", SUB, PINF), ("rcp", NSUB, NINF),
    ("rcp", PINF, 0), ("rcp", NINF, 0x80000000), ("rcp", QNAN, CNAN),
    ("rcp", 0x7F7FFFFF, 0), ("rcp", 0xFF000000, 0x80000000),  # 1/x below the normal range
    ("rsqrt", 0, PINF), ("rsqrt", 0x80000000, NINF), ("rsqrt", NSUB, NINF),
    ("rsqrt", PINF, 0), ("rsqrt", NINF, CNAN), ("rsqrt", 0xBF800000, CNAN),
    ("rsqrt", QNAN, CNAN),
    ("sqrt", 0, 0), ("sqrt", 0x80000000, 0x80000000), ("sqrt", NSUB, 0x80000000),
    ("sqrt", PINF, PINF), ("sqrt", NINF, CNAN), ("sqrt", 0xBF800000, CNAN), ("sqrt", QNAN, CNAN),
    ("exp2", 0, ONE), ("exp2", 0x80000000, ONE), ("exp2", SUB, ONE), ("exp2", PINF, PINF),
    ("exp2", NINF, 0), ("exp2", QNAN, CNAN), ("exp2", bits(128.0), PINF), ("exp2", bits(-150.0), 0),
    ("exp2", bits(-127.0), 0),  # 2^-127 is below the normal range: flushed
    ("exp2", bits(-126.0), 0x00800000), ("exp2", bits(127.0), 0x7F000000),
    ("log2", 0, NINF), ("log2", 0x80000000, NINF), ("log2", SUB, NINF), ("log2", PINF, PINF),
    ("log2", NINF, CNAN), ("log2", 0xBF800000, CNAN), ("log2", QNAN, CNAN), ("log2", ONE, 0),
    ("sin", 0, 0), ("sin", 0x80000000, 0x80000000), ("sin", NSUB, 0x80000000),
    ("sin", PINF, CNAN), ("sin", NINF, CNAN), ("sin", QNAN, CNAN),
    ("sin", 0x39000000, 0x39000000),  # |x| < 2^-12: sin x = x
    ("cos", 0, ONE), ("cos", 0x80000000, ONE), ("cos", PINF, CNAN), ("cos", QNAN, CNAN),
    ("cos", 0xB9000000, ONE), ("sin", 0x397FFFFF, 0x397FFFFF),
]


@pytest.mark.parametrize("op,a,expected", SPECIALS)
def test_special_operands(op, a, expected):
    assert int(nx.sfu(op, a)) == expected


@pytest.mark.parametrize("op,x,want", [
    ("rcp", 2.0**k, 2.0**-k) for k in (-125, -20, -1, 0, 1, 7, 100, 125)
] + [("rsqrt", 4.0**k, 2.0**-k) for k in (-60, -1, 0, 1, 2, 63)]
  + [("sqrt", 4.0**k, 2.0**k) for k in (-63, -1, 0, 1, 2, 63)]
  + [("sqrt", 9.0, 3.0), ("sqrt", 2.25, 1.5), ("rcp", -4.0, -0.25), ("rcp", 0.5, 2.0)]
  + [("exp2", float(n), 2.0**n) for n in (-126, -5, -1, 1, 2, 10, 127)]
  + [("log2", 2.0**k, float(k)) for k in (-126, -9, -1, 1, 2, 64, 127)])
def test_exact_cases(op, x, want):
    """Exact results come out exactly: the quadratic's error stays below the rounding step."""
    assert value(int(nx.sfu(op, bits(x)))) == want


def _sample(op: str, rng: np.random.Generator, n: int) -> np.ndarray:
    pats = fp_operands(rng, n, 1)[0]
    if op == "exp2":
        pats = pats[np.abs(pats.view(np.float32)) < 126]
    if op in ("sin", "cos"):
        x = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
        pats = np.concatenate([x.view(np.uint32), pats])
    # Keep finite operands whose exact result is finite and in the normal range.
    with np.errstate(all="ignore"):
        ref = _ref(op, pats)
        keep = np.isfinite(ref) & ((np.abs(ref) >= 2.0**-126) | (ref == 0))
        keep &= (pats & 0x7F800000) != 0
    return pats[keep]


def _ref(op: str, pats: np.ndarray) -> np.ndarray:
    x = pats.view(np.float32).astype(np.float64)
    fn = {"rcp": lambda v: 1.0 / v, "rsqrt": lambda v: 1.0 / np.sqrt(v), "sqrt": np.sqrt,
          "exp2": np.exp2, "log2": np.log2, "sin": np.sin, "cos": np.cos}[op]
    with np.errstate(all="ignore"):
        return fn(x)


@pytest.mark.parametrize("op", nx.SFU_OPS)
def test_error_within_documented_bound(op):
    pats = _sample(op, np.random.default_rng(61), 200_000)
    got = nx.bits_to_f32(nx.sfu(op, pats)).astype(np.float64)
    err = np.abs(got - _ref(op, pats))
    bound = nx.sfu_error_bound(op, pats)
    worst = np.argmax(err / bound)
    assert np.all(err <= bound), (hex(pats[worst]), got[worst], err[worst], bound[worst])


def test_bounds_are_tight_enough_to_mean_something():
    """The documented bounds are the brief's targets or better, and a wrong result breaks them."""
    for op in ("rcp", "rsqrt", "sqrt"):
        assert nx.SFU_MAX_ULP[op] <= 2
    for op in ("exp2", "log2"):
        assert nx.SFU_MAX_ULP[op] <= 4
    assert nx.SFU_TRIG_ABS_ERR + math.pi * nx.SFU_TRIG_ABS_ERR_SLOPE <= 2.0**-20
    x = bits(3.0)
    off_by_2ulp = int(nx.sfu("rcp", x)) + 2
    assert abs(value(off_by_2ulp) - 1 / 3) > nx.sfu_error_bound("rcp", x)


@pytest.mark.parametrize("op", ["rcp", "rsqrt", "sqrt"])
def test_results_only_shift_with_the_exponent(op):
    """What the exhaustive two-binade sweep in docs/numerics.md relies on: away from the range
    ends, scaling x by 4 scales the result by a power of two and changes no mantissa bit."""
    rng = np.random.default_rng(71)
    m = rng.integers(0, 1 << 23, 3000, dtype=np.uint32)
    base = np.uint32(127 << 23) | m
    ref = nx.sfu(op, base)
    for de in (-100, -2, 2, 60, 120):
        r = nx.sfu(op, base + np.uint32((de << 23) & 0xFFFFFFFF))
        assert np.array_equal(r & 0x807FFFFF, ref & 0x807FFFFF)


def test_sin_cos_symmetry():
    rng = np.random.default_rng(81)
    x = rng.uniform(-100, 100, 5000).astype(np.float32).view(np.uint32)
    assert np.array_equal(nx.sfu("sin", x ^ np.uint32(0x80000000)),
                          nx.sfu("sin", x) ^ np.uint32(0x80000000))
    assert np.array_equal(nx.sfu("cos", x ^ np.uint32(0x80000000)), nx.sfu("cos", x))
    for op in ("sin", "cos"):
        r = nx.bits_to_f32(nx.sfu(op, fp_operands(rng, 20000, 1)[0]))
        r = r[~np.isnan(r)]
        assert np.all(np.abs(r) <= 1.0)  # even where the reduction has no correct bits left


def test_rom_matches_its_generator():
    """The committed ROM is what the generator produces (within one unit, for libm
    differences between machines)."""
    fresh = sfu_tablegen.generate()
    assert list(fresh) == list(TABLES)
    for op, rows in TABLES.items():
        diff = np.abs(np.array(fresh[op]) - np.array(rows))
        assert diff.max() <= 1, op


def test_rom_layout_and_integer_ranges():
    assert sfu_algo.ROM.shape == (sum(sfu_tablegen.TABLE_SIZES.values()), 3)
    assert sfu_algo.ROM_BASE["rcp"] == 0
    assert sfu_algo.ROM_BASE["cos"] == sfu_algo.ROM.shape[0] - sfu_tablegen.NSEG
    # Widths the RTL datapath assumes (rtl/sfu.py): c0 < 2^32, c1 < 2^25, c2 < 2^18.
    assert np.abs(sfu_algo.ROM[:, 0]).max() < 2**32
    assert np.abs(sfu_algo.ROM[:, 1]).max() < 2**25
    assert np.abs(sfu_algo.ROM[:, 2]).max() < 2**18
    assert sfu_algo.INV_2PI < 2**38


def test_pack_rounding_and_ranges():
    pack = sfu_algo.pack
    z = np.zeros(1, np.int64)
    assert int(pack(z, np.array([3 << 30]), np.array([-30]))[0]) == bits(3.0)
    # 2^25 + 1 has 26 bits: the dropped bits are 01 -> truncated; 2^25 + 2 is a tie -> up.
    assert int(pack(z, np.array([(1 << 25) + 1]), np.array([0]))[0]) == bits(2.0**25)
    assert int(pack(z, np.array([(1 << 25) + 2]), np.array([0]))[0]) == bits(2.0**25 + 4)
    # All ones round up into the next binade.
    assert int(pack(z, np.array([(1 << 26) - 1]), np.array([0]))[0]) == bits(2.0**26)
    assert int(pack(z, np.array([1]), np.array([128]))[0]) == PINF
    assert int(pack(np.ones(1, np.int64), np.array([1]), np.array([-127]))[0]) == 0x80000000
    assert int(pack(z, np.array([0]), np.array([5]))[0]) == 0


def test_bit_length_exact_near_powers_of_two():
    ys = np.array([0, 1, 2, 3, (1 << 53) - 1, 1 << 53, (1 << 62) - 1, 1 << 61], np.int64)
    assert list(sfu_algo.bit_length(ys)) == [int(y).bit_length() for y in ys]


def test_shapes_and_scalars():
    out = nx.sfu("sqrt", np.full((3, 4), bits(4.0), np.uint32))
    assert out.shape == (3, 4) and out.dtype == np.uint32 and np.all(out == bits(2.0))
    assert isinstance(nx.sfu("rcp", bits(2.0)), np.uint32)


@pytest.mark.regress
def test_documented_bounds_hold_on_the_full_sweep():
    """The docs/numerics.md sweep (exhaustive binades + sampled exponents) stays within the
    published bounds. About a minute: run with ``-m regress``."""
    from simtgpu.sim import sfu_accuracy

    for op, domain, _, ulp, abs_err in sfu_accuracy.measure(1 << 20):
        if op in ("sin", "cos"):
            xmax = 2.0 ** int(domain.rsplit("^", 1)[1]) if "^" in domain else math.pi
            bound = nx.SFU_TRIG_ABS_ERR + xmax * nx.SFU_TRIG_ABS_ERR_SLOPE
            assert abs_err <= bound, (op, domain, abs_err)
        else:
            assert ulp <= nx.SFU_MAX_ULP[op], (op, domain, ulp)
