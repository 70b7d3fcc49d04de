"""Measure the mma's error against exact rational arithmetic: ``python -m
simtgpu.sim.mma_accuracy``.

Random tiles (A, B standard normal, rounded to fp16/bf16; C standard normal FP32) go through
:func:`simtgpu.sim.numerics.mma`; every output element is compared with the exact
``sum A B + C`` computed in ``fractions.Fraction``. The printed markdown table is the one in
docs/numerics.md and docs/tensor-core.md.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np
from simtgpu.isa.mma import mma_shape

from . import numerics as nx


def random_tiles(fmt: str, lanes: int, tiles: int, seed: int, dist: str = "normal"):
    """(a, b, c) patterns for ``tiles`` mma tiles of the shape at ``lanes``."""
    s = mma_shape(lanes)
    rng = np.random.default_rng(seed)
    draw = rng.standard_normal if dist == "normal" else rng.random
    a32 = nx.f32_to_bits(draw((tiles, s.m, s.k)).astype(np.float32))
    b32 = nx.f32_to_bits(draw((tiles, s.k, s.n)).astype(np.float32))
    c = nx.f32_to_bits(draw((tiles, s.m, s.n)).astype(np.float32))
    narrow = nx.f32_to_f16 if fmt == "f16" else nx.f32_to_bf16
    return narrow(a32), narrow(b32), c


def measure(fmt: str, lanes: int, tiles: int, seed: int = 1, dist: str = "normal") -> dict:
    """Largest error in FP32 ulps of the exact result, mean error in ulps, and the largest
    ratio of the error to :func:`numerics.mma_error_bound`."""
    a, b, c = random_tiles(fmt, lanes, tiles, seed, dist)
    d = nx.bits_to_f32(nx.mma(fmt, a, b, c))
    bound = nx.mma_error_bound(fmt, a, b, c)
    av, bv = nx.half_to_f64(fmt, a), nx.half_to_f64(fmt, b)
    cv = nx.bits_to_f32(c).astype(np.float64)
    ulps, ratio = [], 0.0
    for t in range(a.shape[0]):
        for i in range(a.shape[1]):
            for j in range(b.shape[2]):
                exact = sum((Fraction(x) * Fraction(y) for x, y in
                             zip(av[t, i], bv[t, :, j], strict=True)), Fraction(cv[t, i, j]))
                err = abs(Fraction(float(d[t, i, j])) - exact)
                ulp = 2.0 ** (max(int(np.floor(np.log2(abs(float(exact)) or 1.0))), -126) - 23)
                ulps.append(float(err) / ulp)
                ratio = max(ratio, float(err / Fraction(float(bound[t, i, j]))))
    return {"max_ulp": max(ulps), "mean_ulp": float(np.mean(ulps)), "bound_ratio": ratio,
            "outputs": len(ulps)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiles", type=int, default=200)
    args = p.parse_args()
    print("| format | warp | shape | inputs | outputs | max error (ulp) | mean (ulp) | "
          "max error / bound |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for fmt in ("f16", "bf16"):
        for lanes in (4, 8, 32):
            for dist in ("normal", "uniform"):
                r = measure(fmt, lanes, args.tiles, dist=dist)
                print(f"| {fmt} | {lanes} | {mma_shape(lanes).name} | {dist} | {r['outputs']} | "
                      f"{r['max_ulp']:.2f} | {r['mean_ulp']:.3f} | {r['bound_ratio']:.3f} |")


if __name__ == "__main__":
    main()
