"""Operand generators for every FP32 and integer test: the unit benches on Verilator and in
Amaranth's simulator, the numerics tests and the random programs' input data (the one set of
vectors; the references they are checked against are the tests' own).

Random operands are drawn from classes that stress what a rounding datapath gets wrong: the
special values (NaN payloads, infinities, signed zeros, denormals that must flush), the
extremes (largest finite, smallest normal), operands whose exponents are close (cancellation),
far apart (alignment past the sticky bit), near overflow and near underflow, and operands
built so that the exact result lies exactly halfway between two floats (ties to even).
``fp_operands(..., edges=True)`` puts every pair of :data:`FP_EDGES` first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FP_EDGES", "FP_SPECIALS", "HALF_SPECIALS", "INT_EDGES", "fp_operands",
           "int_operands", "mma_fragments", "mma_tiles"]

FP_SPECIALS = np.array([
    0x00000000, 0x80000000,  # +-0
    0x7F800000, 0xFF800000,  # +-inf
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFBFFFFF,  # NaNs (quiet, signalling)
    0x00000001, 0x807FFFFF, 0x00400000, 0x80000001,  # denormals (flushed)
    0x00800000, 0x80800000, 0x00800001,  # smallest normals
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE,  # largest finite
    0x3F800000, 0xBF800000, 0x40000000, 0x3F000000,  # 1, -1, 2, 0.5
    0x34000000, 0x33800000, 0x33000000,  # 2^-23, 2^-24, 2^-25 (half ulp of 1 and below)
    0x4B000000, 0x4B7FFFFF, 0xCF000000, 0x4F800000, 0x4F000000,  # integer boundaries
], dtype=np.uint32)

FP_EDGES = np.concatenate([FP_SPECIALS, np.array([
    0xFFFFFFFF, 0x80000003, 0x00FFFFFF,  # NaN with every bit set, denormal, below 2^-125
    0x7F000000, 0x7EFFFFFF, 0x3F800001, 0x3F7FFFFF,  # around 2^127 and around 1
    0x4B800000, 0x4F7FFFFF, 0xCF000001,  # 2^24, just below 2^32, just past -2^31
    0x3FC00000, 0x1F800000, 0x5F800000,  # 1.5, 2^-64, 2^64
], dtype=np.uint32)])
"""The specials plus the values around rounding and conversion boundaries: the operands whose
every pair ``fp_operands(..., edges=True)`` includes. (:data:`FP_SPECIALS` alone seeds the
random classes, so the random programs' data stays what it was.)"""

INT_EDGES = np.array([
    0, 1, 2, 31, 32, 33, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001,
    0xFFFFFFFF, 0xFFFFFFFE, 0xFFFF0000, 0xFFFF8000, 0x55555555, 0xAAAAAAAA,
], dtype=np.uint32)


def _pack(sign: np.ndarray, exp: np.ndarray, mant: np.ndarray) -> np.ndarray:
    return ((sign.astype(np.uint32) << 31) | (exp.astype(np.uint32) << 23)
            | (mant.astype(np.uint32) & 0x7FFFFF)).astype(np.uint32)


def fp_operands(rng: np.random.Generator, n: int, arity: int, *, edges: bool = False
                ) -> list[np.ndarray]:
    """``arity`` operand columns of ``n`` FP32 bit patterns, mixed from the classes above;
    with ``edges``, preceded by every pair of :data:`FP_EDGES` (each edge alone when unary; a
    random edge as the third operand), and followed by a quarter more whose operands are
    built from each other (:func:`_related`)."""
    if edges:
        pairs = np.array(np.meshgrid(*[FP_EDGES] * min(arity, 2), indexing="ij"))
        cross = [p.ravel() for p in pairs.reshape(min(arity, 2), -1)]
        cross += [FP_EDGES[rng.integers(0, len(FP_EDGES), len(cross[0]))]] * (arity - 2)
        rand = fp_operands(rng, n, arity)
        return [np.concatenate(parts).astype(np.uint32)
                for parts in zip(cross, rand, _related(rand, n // 4), strict=True)]
    cols = [rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) for _ in range(arity)]
    sign = [rng.integers(0, 2, n) for _ in range(arity)]
    cls = rng.integers(0, 8, n)
    base_exp = rng.integers(1, 255, n)
    for k in range(arity):
        mant = rng.integers(0, 1 << 23, n)
        # 1: specials; 2: close exponents; 3: far exponents; 4: near overflow;
        # 5: near underflow; 6: ties; 7 and 0: uniform bit patterns.
        spec = FP_SPECIALS[rng.integers(0, len(FP_SPECIALS), n)]
        close = _pack(sign[k], np.clip(base_exp + rng.integers(-2, 3, n), 1, 254), mant)
        far = _pack(sign[k], np.clip(base_exp + rng.integers(-60, 61, n), 1, 254), mant)
        high = _pack(sign[k], rng.integers(240, 255, n), mant)
        low = _pack(sign[k], rng.integers(0, 16, n), mant)
        cols[k] = np.select([cls == 1, cls == 2, cls == 3, cls == 4, cls == 5],
                            [spec, close, far, high, low], cols[k]).astype(np.uint32)
    ties = cls == 6
    if arity >= 2 and ties.any():
        # a = (1 + i 2^-12) 2^ea, b = (1 + j 2^-12) 2^eb: the product has ij at 2^-24, so odd
        # ij makes a halfway case for fmul; b = half an ulp of a makes one for fadd.
        i = rng.integers(1, 64, n)
        j = rng.integers(1, 64, n)
        ea = rng.integers(100, 150, n)
        a = _pack(sign[0], ea, i << 11)
        b_mul = _pack(sign[1], rng.integers(100, 150, n), j << 11)
        b_add = _pack(sign[1], np.clip(ea - 24, 1, 254), np.zeros(n, dtype=np.int64))
        use_add = rng.integers(0, 2, n).astype(bool)
        cols[0] = np.where(ties, a, cols[0]).astype(np.uint32)
        cols[1] = np.where(ties, np.where(use_add, b_add, b_mul), cols[1]).astype(np.uint32)
    return cols


def _related(cols: list[np.ndarray], n: int) -> list[np.ndarray]:
    """``n`` vectors whose operands are built from each other (none for one operand):
    ``b = -a`` (``a + b`` cancels exactly), or with three operands ``c = -(a*b rounded)``, so
    that ``fma(a, b, c)`` is the product's rounding error: nonzero only where the datapath
    rounds once."""
    from simtgpu.sim.numerics import fmul

    a = cols[0][:n]
    if len(cols) == 1:
        return [a[:0]]
    if len(cols) == 2:
        return [a, a ^ np.uint32(0x80000000)]
    b = cols[1][:n]
    return [a, b, fmul(a, b) ^ np.uint32(0x80000000)]


def int_operands(rng: np.random.Generator, n: int, arity: int) -> list[np.ndarray]:
    """``arity`` columns of 32-bit integers: uniform, small signed, edge values, shifts."""
    cols = []
    for _ in range(arity):
        uniform = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        small = (rng.integers(-40, 40, n) & 0xFFFFFFFF).astype(np.uint32)
        edge = INT_EDGES[rng.integers(0, len(INT_EDGES), n)]
        pick = rng.integers(0, 4, n)
        cols.append(np.select([pick == 1, pick == 2], [small, edge], uniform).astype(np.uint32))
    return cols


HALF_SPECIALS = {
    "f16": np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF,  # 0, inf, NaN
                     0x0001, 0x83FF, 0x0200, 0x0400, 0x8400, 0x7BFF, 0xFBFF,  # sub, min, max
                     0x3C00, 0xBC00, 0x3C01, 0x1400], dtype=np.uint16),
    "bf16": np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF,
                      0x0001, 0x807F, 0x0040, 0x0080, 0x8080, 0x7F7F, 0xFF7F,
                      0x3F80, 0xBF80, 0x3F81, 0x3380], dtype=np.uint16),
}
"""Half patterns that every mma tile generator mixes in: signed zeros, infinities, NaNs,
subnormals (kept by fp16, read as zero by bf16's FP32 products), the extremes, 1 and its
neighbours."""


def mma_tiles(rng: np.random.Generator, n: int, m: int, nn: int, k: int, fmt: str
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` random ``mma`` tiles: A (n, m, k) and B (n, k, nn) ``fmt`` patterns (uint16),
    C (n, m, nn) FP32 patterns (uint32). Most elements are moderate normals (so most sums
    stay finite and cancel or round); each tile also mixes in :data:`HALF_SPECIALS` and
    arbitrary patterns at a rate of 0, 2 % or 20 %, and C is either moderate or drawn from
    :func:`fp_operands` (FP32 specials, extremes, ties)."""
    mbits, bias = (10, 15) if fmt == "f16" else (7, 127)

    def halves(shape: tuple[int, ...]) -> np.ndarray:
        size = int(np.prod(shape))
        sign = rng.integers(0, 2, size)
        exp = rng.integers(bias - 6, bias + 6, size)
        out = (sign << 15) | (exp << mbits) | rng.integers(0, 1 << mbits, size)
        rate = np.repeat(rng.choice([0.0, 0.02, 0.2], n), size // n)
        pick = rng.random(size) < rate
        spec = HALF_SPECIALS[fmt][rng.integers(0, len(HALF_SPECIALS[fmt]), size)]
        out = np.where(pick & (rng.random(size) < 0.5), spec, out)
        out = np.where(pick & (rng.random(size) < 0.5), rng.integers(0, 1 << 16, size), out)
        return out.astype(np.uint16).reshape(shape)

    a, b = halves((n, m, k)), halves((n, k, nn))
    (wild,) = fp_operands(rng, n * m * nn, 1)
    tame = _pack(rng.integers(0, 2, n * m * nn), rng.integers(120, 134, n * m * nn),
                 rng.integers(0, 1 << 23, n * m * nn))
    c = np.where(np.repeat(rng.random(n) < 0.3, m * nn), wild, tame).reshape(n, m, nn)
    return a, b, c.astype(np.uint32)


def mma_fragments(shape, a: np.ndarray, b: np.ndarray, c: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The register fragments of tiles ``a``, ``b``, ``c`` (leading tile axis) in the
    layout of ``shape`` (an ``isa.mma.MmaShape``): arrays (tiles, registers, lanes) of
    uint32, element for element from ``shape.a_pos``/``b_pos``/``c_pos``."""
    t, lanes = a.shape[0], shape.lanes
    fa = np.zeros((t, shape.regs_a, lanes), np.uint32)
    fb = np.zeros((t, shape.regs_b, lanes), np.uint32)
    fc = np.zeros((t, shape.regs_c, lanes), np.uint32)
    for ln in range(lanes):
        for h in (0, 1):
            for r in range(shape.regs_a):
                va = a[(slice(None), *shape.a_pos(r, h, ln))]
                fa[:, r, ln] |= va.astype(np.uint32) << 16 * h
            for r in range(shape.regs_b):
                vb = b[(slice(None), *shape.b_pos(r, h, ln))]
                fb[:, r, ln] |= vb.astype(np.uint32) << 16 * h
        for r in range(shape.regs_c):
            fc[:, r, ln] = c[(slice(None), *shape.c_pos(r, ln))]
    return fa, fb, fc
