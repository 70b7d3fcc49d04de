"""fp16/bf16 numerics: conversions exhaustively against NumPy float16 and ml_dtypes bfloat16,
half2 arithmetic and the mma against exact rational references (tests/numerics/half_ref.py,
numerics_ref.py), the mma's error against exact arithmetic within its documented bound."""

from __future__ import annotations

from fractions import Fraction

import half_ref as hr
import ml_dtypes
import numerics_ref as ref
import numpy as np
import pytest
from simtgpu.sim import numerics as nx

ALL16 = np.arange(1 << 16, dtype=np.uint32)
BF16 = ml_dtypes.bfloat16


def _nan16(fmt: str, h: np.ndarray) -> np.ndarray:
    return (h & 0x7FFF) > (0x7C00 if fmt == "f16" else 0x7F80)


def test_f16_to_f32_exhaustive():
    got = nx.f16_to_f32(ALL16)
    want = ALL16.astype(np.uint16).view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    assert (got[nan] == nx.CANONICAL_NAN).all()
    assert (got[~nan] == want[~nan].view(np.uint32)).all()
    assert (nx.hcvt("hl2f", ALL16) == got).all() and (nx.hcvt("hh2f", ALL16 << 16) == got).all()


def test_bf16_to_f32_exhaustive():
    got = nx.bf16_to_f32(ALL16)
    want = ALL16.astype(np.uint16).view(BF16).astype(np.float32)
    nan = np.isnan(want)
    assert (got[nan] == nx.CANONICAL_NAN).all()
    assert (got[~nan] == want[~nan].view(np.uint32)).all()
    assert (got[~nan] == (ALL16[~nan] << 16)).all()  # exact: the pattern moved up
    assert (nx.hcvt("bl2f", ALL16 | 0xABCD0000) == got).all()
    assert (nx.hcvt("bh2f", (ALL16 << 16) | 0x1234) == got).all()


def _probes(fmt: str) -> np.ndarray:
    """FP32 patterns at every half value, at every midpoint between neighbours and one FP32
    ulp either side of it (the cases where rounding decides)."""
    v = nx.f16_to_f32(ALL16) if fmt == "f16" else nx.bf16_to_f32(ALL16)
    v = v[~_nan16(fmt, ALL16)]
    f = v.view(np.float32).astype(np.float64)
    order = np.argsort(f, kind="stable")
    f = np.unique(f[order])
    mids = ((f[:-1] + f[1:]) / 2).astype(np.float32)  # exact: halves have few bits
    mids = mids[np.isfinite(mids)].view(np.uint32)
    top = np.float32(65520.0 if fmt == "f16" else 3.4e38).view(np.uint32)
    probes = np.concatenate([v, mids, mids + 1, mids - 1, [top, top - 1, top + 1]])
    return np.concatenate([probes, probes ^ 0x80000000]).astype(np.uint32)


def test_f32_to_f16_against_numpy():
    rng = np.random.default_rng(12)
    a = np.concatenate([_probes("f16"), rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint32)])
    got = nx.f32_to_f16(a)
    x = a.view(np.float32)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert (got[nan] == nx.HALF_CANONICAL_NAN).all()
    bad = np.flatnonzero(got[~nan] != want[~nan])
    assert bad.size == 0, [hex(int(v)) for v in a[~nan][bad[:5]]]
    # hcvt packs: a low, b high
    assert (nx.hcvt("f2h2", a[:1000], a[1000:2000]) ==
            (got[:1000].astype(np.uint32) | (got[1000:2000].astype(np.uint32) << 16))).all()
    assert (nx.hcvt("f2h", a[:1000]) == got[:1000]).all()


def _bf16_rne_bits(a: np.ndarray) -> np.ndarray:
    """bf16 RNE of finite FP32 patterns by the carry trick: add 0x7fff plus the kept LSB."""
    a64 = a.astype(np.uint64)
    r = (a64 + 0x7FFF + ((a64 >> 16) & 1)) >> 16
    return r.astype(np.uint16)


def test_f32_to_bf16_against_ml_dtypes_and_bits():
    rng = np.random.default_rng(13)
    a = np.concatenate([_probes("bf16"), rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint32),
                        np.arange(0, 1 << 20, 7, dtype=np.uint32)])  # FP32 subnormals
    got = nx.f32_to_bf16(a)
    x = a.view(np.float32)
    nan = np.isnan(x)
    assert (got[nan] == nx.HALF_CANONICAL_NAN).all()
    assert (got[~nan] == x[~nan].astype(BF16).view(np.uint16)).all()
    assert (got[~nan] == _bf16_rne_bits(a[~nan])).all()
    assert (nx.hcvt("f2b2", a[:500], a[500:1000]) ==
            (got[:500].astype(np.uint32) | (got[500:1000].astype(np.uint32) << 16))).all()


def _edge16(fmt: str) -> list[int]:
    ebits, mbits = hr.FIELDS[fmt]
    inf = ((1 << ebits) - 1) << mbits
    mn = 1 << mbits
    base = [0, 1, 2, 3, mn - 1, mn, mn + 1, 0x3C00 if fmt == "f16" else 0x3F80,
            (0x3C00 if fmt == "f16" else 0x3F80) + 1, inf - 1, inf - 2, inf, inf + 1]
    return base + [b | 0x8000 for b in base]


def _pairs(fmt: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = np.array(_edge16(fmt), dtype=np.uint32)
    grid = np.stack(np.meshgrid(e, e), -1).reshape(-1, 2)
    rnd = rng.integers(0, 1 << 16, (n, 2), dtype=np.uint32)
    # nearby exponents make cancellation and ties likely
    near = rng.integers(0, 1 << 16, (n, 1), dtype=np.uint32)
    near = np.concatenate([near, near ^ rng.integers(0, 1 << 9, (n, 1), dtype=np.uint32)], 1)
    return np.concatenate([grid, rnd, near])


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("op", ["hadd2", "hsub2", "hmul2"])
def test_half2_against_exact(op, fmt):
    p = _pairs(fmt, 2500, hash((op, fmt)) & 0xFFFF)
    lo, hi = p[:, 0], p[:, 1]
    # pack swapped halves so both lanes of the packed op are checked
    a, b = lo | (hi << 16), hi | (lo << 16)
    got = nx.half2(op, fmt, a, b)
    fn = {"hadd2": hr.ref_add, "hsub2": hr.ref_sub, "hmul2": hr.ref_mul}[op]
    for i in range(len(p)):
        x, y = int(lo[i]), int(hi[i])
        want = fn(fmt, x, y) | (fn(fmt, y, x) << 16)
        assert int(got[i]) == want, (op, fmt, hex(x), hex(y), hex(int(got[i])), hex(want))


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_hfma2_against_exact(fmt):
    rng = np.random.default_rng(7 if fmt == "f16" else 8)
    e = np.array(_edge16(fmt), dtype=np.uint32)
    n = 3000
    t = np.concatenate([rng.choice(e, (300, 3)),
                        rng.integers(0, 1 << 16, (n, 3), dtype=np.uint32)])
    # addends near the product: cancellation and the tie cases that double rounding breaks
    prod = np.asarray(nx.half2("hmul2", fmt, t[:, 0], t[:, 1])) & 0xFFFF
    t[n // 2:, 2] = (prod[n // 2:] ^ 0x8000) ^ rng.integers(0, 8, n + 300 - n // 2)
    got = nx.hfma2(fmt, t[:, 0] | (t[:, 2] << 16), t[:, 1] | (t[:, 1] << 16),
                   t[:, 2] | (t[:, 0] << 16))
    for i in range(len(t)):
        x, y, z = (int(v) for v in t[i])
        want = hr.ref_fma(fmt, x, y, z) | (hr.ref_fma(fmt, z, y, x) << 16)
        assert int(got[i]) == want, (fmt, hex(x), hex(y), hex(z), hex(int(got[i])), hex(want))


def test_half_errors_name_the_problem():
    with pytest.raises(nx.NumericsError, match="unknown half format"):
        nx.half2("hadd2", "f8", 0, 0)
    with pytest.raises(nx.NumericsError, match="unknown conversion"):
        nx.hcvt("f2q", 0)
    with pytest.raises(nx.NumericsError, match="do not chain"):
        nx.mma("f16", np.zeros((2, 4), np.uint16), np.zeros((3, 2), np.uint16),
               np.zeros((2, 2), np.uint32))


def _random_tiles(fmt: str, tiles: int, m: int, n: int, k: int, seed: int):
    """Random finite operands of moderate range (and some exact cancellations)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((tiles, m, k)) * np.exp2(rng.integers(-6, 7, (tiles, m, 1)))
    b = rng.standard_normal((tiles, k, n))
    c = rng.standard_normal((tiles, m, n)) * 4
    to16 = (lambda x: x.astype(np.float16).view(np.uint16)) if fmt == "f16" else (
        lambda x: x.astype(np.float32).astype(BF16).view(np.uint16))
    return to16(a), to16(b), nx.f32_to_bits(c)


def _ref_mma(fmt: str, a, b, c) -> int:
    """One output element in the documented order, with numerics_ref's FP32 ops."""
    conv = (lambda h: int(nx.f16_to_f32(h))) if fmt == "f16" else (lambda h: int(h) << 16)
    p = [ref.ref_mul(conv(x), conv(y)) for x, y in zip(a, b, strict=True)]
    while len(p) > 1:
        p = [ref.ref_add(p[i], p[i + 1]) for i in range(0, len(p), 2)]
    return ref.ref_add(p[0], int(c))


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("shape", [(4, 4, 8), (16, 8, 16)])
def test_mma_order_and_error(fmt, shape):
    m, n, k = shape
    a, b, c = _random_tiles(fmt, 6, m, n, k, seed=m + k)
    # specials: an inf, a NaN, exact cancellation, a zero row
    inf, nan = (0x7C00, 0x7E00) if fmt == "f16" else (0x7F80, 0x7FC0)
    a[0, 0, 0], a[1, 1, 3], b[2, 0, :] = inf, nan, 0
    a[3, 0, 1], a[3, 0, 0], b[3, 0, 0], b[3, 1, 0] = a[3, 0, 0], a[3, 0, 0] ^ 0x8000, 1, 1
    d = nx.mma(fmt, a, b, c)
    bound = nx.mma_error_bound(fmt, a, b, c)
    worst = 0.0
    for t in range(a.shape[0]):
        for i in range(m):
            for j in range(n):
                want = _ref_mma(fmt, a[t, i, :], b[t, :, j], c[t, i, j])
                assert int(d[t, i, j]) == want, (t, i, j, hex(int(d[t, i, j])), hex(want))
                if ref.is_nan(want) or (want & 0x7F800000) == 0x7F800000:
                    continue
                exact = sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(
                    nx.half_to_f64(fmt, a[t, i, :]), nx.half_to_f64(fmt, b[t, :, j]),
                    strict=True)), Fraction(float(nx.bits_to_f32(c[t, i, j]))))
                err = abs(ref.to_fraction(want) - exact)
                assert err <= Fraction(float(bound[t, i, j])), (t, i, j)
                worst = max(worst, float(err / Fraction(float(bound[t, i, j]))))
    assert worst < 1.0


def test_mma_accuracy_measurement_runs():
    from simtgpu.sim.mma_accuracy import measure

    r = measure("f16", 8, 2, dist="uniform")
    assert r["outputs"] == 2 * 8 * 4 and 0 <= r["bound_ratio"] < 1 and r["max_ulp"] < 4
