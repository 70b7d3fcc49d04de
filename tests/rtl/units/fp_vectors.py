"""FP32 operand generators for the FPU and compare tests: seeded random patterns plus the
edge cases of the numerics contract (zeros, infinities, NaNs, subnormals, extremes, ties,
cancellation, huge exponent differences, underflow and overflow boundaries)."""

import numpy as np
from simtgpu.sim import numerics as nx

EDGES = np.array([
    0x00000000, 0x80000000,  # +-0
    0x7F800000, 0xFF800000,  # +-inf
    0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FFFFFFF,  # NaNs
    0x00000001, 0x807FFFFF, 0x00400000, 0x80000003,  # subnormals (read as zero)
    0x00800000, 0x80800000, 0x00800001, 0x00FFFFFF,  # smallest normals
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7EFFFFFF,  # largest normals
    0x3F800000, 0xBF800000, 0x3F800001, 0x3F7FFFFF,  # around 1
    0x40000000, 0x3F000000, 0x4B800000, 0x4F000000,  # 2, 0.5, 2^24, 2^31
    0xCF000000, 0x4F800000, 0x4F7FFFFF, 0xCF000001,  # int boundaries
    0x3FC00000, 0x33800000, 0x1F800000, 0x5F800000,  # 1.5, 2^-24, 2^-64, 2^64
], dtype=np.uint32)


def _bits(sign, exp, frac) -> np.ndarray:
    return ((np.asarray(sign, np.uint64) << 31) | (np.asarray(exp, np.uint64) << 23)
            | np.asarray(frac, np.uint64)).astype(np.uint32)


def random_floats(gen: np.random.Generator, n: int) -> np.ndarray:
    """Patterns from several families: uniform bits, moderate exponents, short mantissas
    (exact products and ties), extreme exponents and edge values."""
    fam = gen.integers(0, 6, n)
    sign = gen.integers(0, 2, n)
    frac = gen.integers(0, 1 << 23, n)
    short = (gen.integers(0, 1 << 6, n) << 17)  # 6-bit mantissas: many exact ties
    exp_mid = gen.integers(100, 162, n)  # up to 2^34: float -> int range
    exp_ext = np.where(gen.integers(0, 2, n) == 1, gen.integers(0, 12, n),
                       gen.integers(243, 256, n))
    out = np.where(fam == 0, gen.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32),
                   _bits(sign, exp_mid, frac))
    out = np.where(fam == 2, _bits(sign, exp_mid, short), out)
    out = np.where(fam == 3, _bits(sign, exp_ext, frac), out)
    out = np.where(fam == 4, EDGES[gen.integers(0, len(EDGES), n)], out)
    return out.astype(np.uint32)


def near(gen: np.random.Generator, a: np.ndarray, spread: int) -> np.ndarray:
    """Values whose exponent lies within ``spread`` of ``a``'s, random sign and mantissa
    (cancellation when the signs differ, ties and near-ties at distance 24..25)."""
    n = len(a)
    ea = (a.astype(np.int64) >> 23) & 0xFF
    e = np.clip(ea + gen.integers(-spread, spread + 1, n), 0, 255)
    frac = np.where(gen.integers(0, 2, n) == 1, gen.integers(0, 1 << 23, n),
                    (a & 0x7FFFFF).astype(np.int64) ^ gen.integers(0, 4, n))
    return _bits(gen.integers(0, 2, n), e, frac)


def operands(gen: np.random.Generator, n: int, arity: int) -> list[np.ndarray]:
    """``arity`` operand arrays: the edge cross product, then ``n`` random mixed vectors."""
    grids = np.meshgrid(*([EDGES] * min(arity, 2)), indexing="ij")  # EDGES alone if unary
    cross = [g.ravel() for g in grids]
    if arity == 3:  # edge pairs with a random edge or random value as the addend
        k = len(cross[0])
        cross.append(np.where(gen.integers(0, 2, k) == 1, EDGES[gen.integers(0, len(EDGES), k)],
                              random_floats(gen, k)))
    a = random_floats(gen, n)
    kind = gen.integers(0, 4, n)
    b = np.where(kind == 0, random_floats(gen, n), near(gen, a, 2))
    b = np.where(kind == 2, near(gen, a, 30), b)
    b = np.where(kind == 3, a ^ np.uint32(0x80000000), b).astype(np.uint32)  # x - x, x + -x
    rand = [a, b]
    if arity == 3:
        p = nx.fmul(a, b)
        c = np.where(kind == 0, random_floats(gen, n), p ^ np.uint32(0x80000000))  # fma residual
        c = np.where(kind == 2, near(gen, p, 30), c)
        c = np.where(kind == 3, near(gen, p, 2), c).astype(np.uint32)
        rand.append(c)
    return [np.concatenate([x, y]).astype(np.uint32)
            for x, y in zip(cross, rand[:arity], strict=True)]
