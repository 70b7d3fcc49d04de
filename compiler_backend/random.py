"""Triton's counter-based random numbers: Philox 4x32 (``tl.rand``, ``tl.randn``, ...).

The same ``(seed, offset)`` gives Triton's numbers: Philox 4x32 with 10 rounds (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3", the Random123 constants), keyed by the seed's
low and high words, counter ``(offset, 0, 0, 0)`` for 32-bit offsets and ``(low word, high
word, 0, 0)`` for int64 offsets. Each round takes two ``mulhu`` (the exact high word of the
unsigned 32x32 product), two ``mul``, four ``xor`` and the two key additions, so
``randint4x`` costs about 100 instructions per element.

A seed is widened to 64 bits as Triton does: an int32 value sign-extends (Triton passes
Python ints in the int32 range as i32), a uint32 value zero-extends, and a constexpr seed may
be any 64-bit integer. ``rand`` is exact (int -> float conversion and one multiply, both
rounded to nearest); ``randn`` goes through this GPU's ``log2``/``sqrt``/``sin``/``cos``, so it
agrees with Triton to the special-function unit's accuracy (docs/numerics.md).
"""

from __future__ import annotations

from .errors import CompileError
from .ir import F32, I1, I32, I64, U32, Value
from .lang_base import LN2, _builtin_named, _int, constexpr
from .tiles import Coords, Lowering, Tile

N_ROUNDS_DEFAULT = 10
PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57
UNIFORM_SCALE = 4.6566127342e-10
"""The largest float32 scale with ``(2**31 - 1) * scale < 1.0`` after rounding (Triton's)."""
TWO_PI = 6.283185307179586
UNIFORM_FLOOR = 1.0e-7


def _word(ctx: Lowering, x, what: str) -> Tile:
    """``x`` as uint32 words (an int32, uint32 or bool tile, or a Python int)."""
    t = ctx.to_tile(x)
    if t.type == F32 or t.type.is_ptr:
        raise CompileError(f"{what} must be an integer, not {t.type}")
    return ctx.cast(ctx.cast(t, I32) if t.type == I1 else t, U32)


def _high_word(ctx: Lowering, t: Tile) -> Tile:
    """The high word of an int64 tile as uint32 (Triton's ``(x >> 32).to(tl.uint32)``)."""
    return ctx.cast(ctx.binary(">>", t, 32), U32)


def _rounds(x) -> int:
    n = _int(x.value if isinstance(x, constexpr) else x, "n_rounds")
    if n < 0:
        raise CompileError(f"n_rounds must not be negative, not {n}")
    return n


def _seed_words(ctx: Lowering, seed) -> tuple[Tile, Tile]:
    """(low, high) words of the seed widened to 64 bits as Triton does."""
    if isinstance(seed, constexpr):
        seed = seed.value
    if isinstance(seed, bool) or not isinstance(seed, int | Tile):
        raise CompileError(f"the seed must be an integer, not {type(seed).__name__}")
    if isinstance(seed, int):
        if not -(1 << 63) <= seed < (1 << 64):
            raise CompileError(f"seed {seed} does not fit in 64 bits")
        s = seed & ((1 << 64) - 1)
        return (ctx.scalar(ctx.const(s & 0xFFFFFFFF, U32)),
                ctx.scalar(ctx.const(s >> 32, U32)))
    lo = _word(ctx, seed, "the seed")
    if seed.type == I64:
        return lo, _high_word(ctx, seed)
    if seed.type.unsigned or seed.type == I1:
        hi = ctx.map1(lo, U32, lambda v: ctx.const(0, U32))
    else:
        hi = ctx.map1(lo, U32, lambda v: ctx.b("sra", v, ctx.const(31)))
    return lo, hi


def philox_impl(ctx: Lowering, c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """Philox 4x32 rounds on counter ``(c0, c1, c2, c3)`` and key ``(k0, k1)``.

    Element by element (all rounds of one element, then the next), so only one element's
    state is live at a time: a tile with several elements per thread does not spill."""
    n = _rounds(n_rounds)
    ins = [_word(ctx, x, "a Philox counter") for x in (c0, c1, c2, c3)]
    ins += [_word(ctx, x, "a Philox key") for x in (k0, k1)]
    shape: tuple[int, ...] = ()
    for t in ins:
        shape = ctx.broadcast_shape(shape, t.shape)
    ins = [ctx.broadcast_to(t, shape) for t in ins]
    b = ctx.b
    ra, rb = ctx.const(PHILOX_ROUND_A, U32), ctx.const(PHILOX_ROUND_B, U32)
    ka, kb = ctx.const(PHILOX_KEY_A, U32), ctx.const(PHILOX_KEY_B, U32)
    outs: list[list[Value]] = [[], [], [], []]
    for slot in range(ctx.nslots(shape)):
        x0, x1, x2, x3, y0, y1 = (t.at(Coords(ctx, shape, slot)) for t in ins)
        for _ in range(n):
            x0, x1, x2, x3 = (b("xor", b("xor", b("mulhu", rb, x2), x1), y0), b("mul", rb, x2),
                              b("xor", b("xor", b("mulhu", ra, x0), x3), y1), b("mul", ra, x0))
            y0, y1 = b("add", y0, ka), b("add", y1, kb)
        for o, v in zip(outs, (x0, x1, x2, x3), strict=True):
            o.append(v)
    return tuple(Tile(ctx, shape, U32, slots=o) for o in outs)


def philox(ctx: Lowering, seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox 4x32 of counter ``(c0, c1, c2, c3)`` keyed by ``seed`` (64-bit, see above)."""
    lo, hi = _seed_words(ctx, seed)
    return philox_impl(ctx, c0, c1, c2, c3, lo, hi, n_rounds)


def randint4x(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four uint32 random words for each ``offset`` (counter ``(offset, 0, 0, 0)``)."""
    t = ctx.to_tile(offset)
    off = _word(ctx, t, "the offset")
    zero = ctx.map1(off, U32, lambda v: ctx.const(0, U32))
    hi = _high_word(ctx, t) if t.type == I64 else zero  # a 64-bit offset: (lo, hi, 0, 0)
    return philox(ctx, seed, off, hi, zero, zero, n_rounds)


def randint(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> Tile:
    """One uint32 random word for each ``offset`` (the first of :func:`randint4x`)."""
    return randint4x(ctx, seed, offset, n_rounds)[0]


def uint_to_uniform_float(ctx: Lowering, x) -> Tile:
    """A random 32-bit word to a float32 in [0, 1): the word as int32, negatives folded onto
    ``-x - 1``, times :data:`UNIFORM_SCALE`."""
    w = ctx.cast(_word(ctx, x, "uint_to_uniform_float's input"), I32)
    b = ctx.b

    def f(v: Value) -> Value:
        neg = b.op("icmp", [v, ctx.const(0)], {"cond": "lt"}).result
        folded = b("select", neg, b("xor", v, ctx.const(-1)), v)  # -v - 1 == ~v
        return b("fmul", b("i2f", folded), ctx.const(UNIFORM_SCALE, F32))

    return ctx.map1(w, F32, f)


def rand(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> Tile:
    """A float32 uniform in [0, 1) for each ``offset``."""
    return uint_to_uniform_float(ctx, randint(ctx, seed, offset, n_rounds))


def rand4x(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four float32 uniforms in [0, 1) for each ``offset``."""
    return tuple(uint_to_uniform_float(ctx, w) for w in randint4x(ctx, seed, offset, n_rounds))


def pair_uniform_to_normal(ctx: Lowering, u1, u2):
    """Box-Muller: two uniforms to two standard normals, ``r cos(th)`` and ``r sin(th)``."""
    like = Tile(ctx, (), F32, slots=[ctx.const(0.0, F32)])
    t1, t2 = (ctx.cast(ctx.to_tile(u, like=like), F32) for u in (u1, u2))
    b = ctx.b

    def radius(u: Value) -> Value:
        u = b("fmax", u, ctx.const(UNIFORM_FLOOR, F32))
        log_u = b("fmul", b("log2", u), ctx.const(LN2, F32))  # tl.log's lowering
        return b("sqrt", b("fmul", log_u, ctx.const(-2.0, F32)))

    r = ctx.map1(t1, F32, radius).materialize() if t1.shape else ctx.map1(t1, F32, radius)
    th = ctx.map1(t2, F32, lambda u: b("fmul", u, ctx.const(TWO_PI, F32)))
    return (ctx.mapn([r, th], F32, lambda rv, t: b("fmul", rv, b("cos", t))),
            ctx.mapn([r, th], F32, lambda rv, t: b("fmul", rv, b("sin", t))))


def randn(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> Tile:
    """A float32 standard normal for each ``offset`` (Box-Muller of the first two words)."""
    i1, i2, _, _ = randint4x(ctx, seed, offset, n_rounds)
    return pair_uniform_to_normal(ctx, uint_to_uniform_float(ctx, i1),
                                  uint_to_uniform_float(ctx, i2))[0]


def randn4x(ctx: Lowering, seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four float32 standard normals for each ``offset``."""
    u1, u2, u3, u4 = rand4x(ctx, seed, offset, n_rounds)
    return pair_uniform_to_normal(ctx, u1, u2) + pair_uniform_to_normal(ctx, u3, u4)


_DOCS = {f.__name__: f for f in (philox_impl, philox, randint4x, randint, uint_to_uniform_float,
                                  rand, rand4x, pair_uniform_to_normal, randn, randn4x)}
BUILTINS = {name: _builtin_named(name, f.__doc__ or "", f)
            for name, f in _DOCS.items()}
"""The language names of this module (language.py exports them as ``tl.<name>``)."""
