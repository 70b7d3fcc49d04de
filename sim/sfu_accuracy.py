"""Measure the SFU error against float64 NumPy math: ``python -m simtgpu.sim.sfu_accuracy``.

rcp, rsqrt and sqrt depend only on the mantissa and the exponent parity, so every mantissa in
two adjacent binades is every case the exponent does not just shift; log2 is swept over every
mantissa of the binades around 1 (where the result is small) and sampled elsewhere; exp2 is
swept over whole binades and sampled over every exponent of its finite range; sin and cos are
sampled on [-pi, pi] (absolute error) and on wider ranges.  The printed markdown table is the
one in docs/numerics.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from . import numerics as nx

REFERENCE = {
    "rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sqrt": np.sqrt,
    "exp2": np.exp2, "log2": np.log2, "sin": np.sin, "cos": np.cos,
}


def ulp_of(ref: np.ndarray) -> np.ndarray:
    """binary32 ulp at the exact value ``ref`` (float64), normal range."""
    mag = np.abs(ref)
    e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    return np.exp2(np.maximum(e, -126) - 23)


def errors(op: str, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(error in ulps of the exact result, absolute error) for operands ``bits``."""
    got = nx.bits_to_f32(nx.sfu(op, bits)).astype(np.float64)
    x = nx.bits_to_f32(bits).astype(np.float64)
    with np.errstate(all="ignore"):
        ref = REFERENCE[op](x)
    diff = np.abs(got - ref)
    # Exact results outside the normal range are flushed or overflow by definition (FTZ);
    # tests check those separately, the error table covers the normal range.
    normal = (np.abs(ref) >= 2.0**-126) & (np.abs(ref) < 2.0**128)
    if op in ("sin", "cos"):
        normal = np.isfinite(ref)
    diff = np.where(normal, diff, 0.0)
    return diff / ulp_of(ref), diff


def _binades(exps: range | list[int], sign: int = 0) -> np.ndarray:
    m = np.arange(1 << 23, dtype=np.uint32)
    return np.concatenate([np.uint32(sign << 31) | np.uint32(e << 23) | m for e in exps])


def _random_bits(rng: np.random.Generator, n: int, e_lo: int, e_hi: int, signs: bool):
    e = rng.integers(e_lo, e_hi + 1, n, dtype=np.uint32)
    m = rng.integers(0, 1 << 23, n, dtype=np.uint32)
    s = rng.integers(0, 2, n, dtype=np.uint32) if signs else np.zeros(n, np.uint32)
    return (s << 31) | (e << 23) | m


def _chunked_max(op: str, bits: np.ndarray, chunk: int = 1 << 21) -> tuple[float, float]:
    ulp_max = abs_max = 0.0
    for i in range(0, bits.size, chunk):
        u, d = errors(op, bits[i:i + chunk])
        ulp_max, abs_max = max(ulp_max, float(u.max())), max(abs_max, float(d.max()))
    return ulp_max, abs_max


def _in_range(bits: np.ndarray, limit: float) -> np.ndarray:
    return bits[np.abs(nx.bits_to_f32(bits)) <= np.float32(limit)]


def measure(samples: int, seed: int = 1) -> list[tuple[str, str, int, float, float]]:
    """Rows of (op, domain, count, max ulp error, max absolute error)."""
    rng = np.random.default_rng(seed)
    rows = []

    def row(op: str, domain: str, bits: np.ndarray) -> None:
        u, d = _chunked_max(op, bits)
        rows.append((op, domain, int(bits.size), u, d))

    for op in ("rcp", "rsqrt", "sqrt"):
        row(op, "all mantissas, 2 binades [1, 4)", _binades([127, 128]))
        row(op, "random, every exponent", _random_bits(rng, samples, 1, 254, op == "rcp"))
    row("exp2", "all of [-2, -1) [-1, -0.5) [0.5, 1) [1, 2)",
        np.concatenate([_binades([127], 1), _binades([126], 1), _binades([126, 127])]))
    row("exp2", "random, abs(x) < 126, every exponent",
        _in_range(_random_bits(rng, samples, 1, 133, True), 125.99))
    row("log2", "all of [0.5, 1) [1, 2) [2, 4)", _binades([126, 127, 128]))
    row("log2", "random, every exponent", _random_bits(rng, samples, 1, 254, False))
    for op in ("sin", "cos"):
        vals = rng.uniform(-np.pi, np.pi, samples).astype(np.float32)
        bits = np.concatenate([nx.f32_to_bits(vals),
                               _in_range(_random_bits(rng, samples, 1, 128, True), np.pi)])
        row(op, "[-pi, pi]", bits)
        for lim in (2.0**8, 2.0**16, 2.0**24):
            vals = rng.uniform(-lim, lim, samples // 4).astype(np.float32)
            row(op, f"abs(x) <= 2^{int(np.log2(lim))}", nx.f32_to_bits(vals))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1 << 22,
                    help="random operands per sampled domain (default 2^22)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.time()
    rows = measure(args.samples, args.seed)
    print("| op | operands | count | max error |")
    print("| --- | --- | ---: | ---: |")
    for op, dom, n, u, d in rows:
        err = f"{d:.3g} = 2^{np.log2(d):.1f} absolute" if op in ("sin", "cos") else f"{u:.3f} ulp"
        print(f"| {op} | {dom} | {n:,} | {err} |")
    print(f"\n{sum(r[2] for r in rows):,} operands in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
