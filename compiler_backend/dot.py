"""``tl.dot`` of fp16/bf16 tiles on the matrix unit (``mma``), fp32 accumulation.

The block's tiles are spread over its threads in the tile layout, the ``mma`` fragments in
the layout of :mod:`simtgpu.isa.mma`; shared memory joins them (one 32-bit word per
element):

1. A (M x K), B (K x N) and the accumulator (M x N, fp32) are stored to a scratch area, a
   barrier;
2. the M/m x N/n output tiles of ``mma_shape(W)`` are dealt to the warps (warp ``w`` takes
   tiles ``w, w + nwarps, ...``; with fewer tiles than warps, several warps compute the
   same tile and store the same values); each lane builds its A and B fragment registers
   (two words packed into one: ``lo | hi << 16``) and its C fragment, and runs ``K/k``
   chained ``mma``, in increasing k;
3. the D fragments go to a second area, a barrier, and the result tile is read back in the
   tile layout.

Each fragment element's place is derived from ``MmaShape.a_pos``/``b_pos``/``c_pos``: the
position is affine in the lane's group ``g`` and thread ``t`` (checked while compiling), so a
lane's addresses are a constant plus ``g`` and ``t`` times constant strides. The rounding is
the ISA's ``mma`` (numerics.mma): exact products, a tree sum per k-step, then the
accumulator add. Shapes that are not multiples of the mma shape fall back to the FP32 FMA
chain (float32 products of the half values, which are exact).
"""

from __future__ import annotations

import builtins

from simtgpu.isa.mma import MmaShape, mma_shape

from .dtypes import to_ir_type
from .errors import CompileError
from .ir import F32, I32, Value
from .tiles import Coords, Lowering, Tile

_PRECISIONS = (None, "ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")


def check(a: Tile, b: Tile, acc, input_precision, out_dtype) -> None:
    """Refuse what the matrix unit path cannot do (Triton's rules for half operands)."""
    if a.type != b.type:
        raise CompileError(f"tl.dot needs both operands of one type, got {a.dtype} and "
                           f"{b.dtype} (convert one with .to())")
    if input_precision not in _PRECISIONS:
        raise CompileError(f"tl.dot: unknown input_precision {input_precision!r}")
    if out_dtype is not None and to_ir_type(out_dtype) != F32:
        raise CompileError("tl.dot with fp16/bf16 operands accumulates in float32 here "
                           "(out_dtype=tl.float32); convert the result with .to()")
    if isinstance(acc, Tile) and acc.type != F32:
        raise CompileError(f"tl.dot: the accumulator must be float32 for {a.dtype} operands, "
                           f"not {acc.dtype}")


def fits(ctx: Lowering, a: Tile, b: Tile) -> bool:
    """Whether the tiles are whole multiples of this warp width's mma shape."""
    s = mma_shape(ctx.W)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        return False
    (m, k), n = a.shape, b.shape[1]
    return m % s.m == 0 and n % s.n == 0 and k % s.k == 0 and ctx.T % ctx.W == 0


def _affine(pos, regs: int, halves: tuple[int, ...], s: MmaShape):
    """Per (register, half): (row0, col0, row per g, col per g, row per t, col per t) of a
    fragment position function, checked against every lane."""
    out = {}
    for r in range(regs):
        for h in halves:
            def at(lane: int, r=r, h=h):
                return pos(r, h, lane) if halves != (None,) else pos(r, lane)
            r0, c0 = at(0)
            rg, cg = (x - y for x, y in zip(at(s.t), (r0, c0), strict=True)) \
                if s.groups > 1 else (0, 0)
            rt, ct = (x - y for x, y in zip(at(1), (r0, c0), strict=True)) \
                if s.t > 1 else (0, 0)
            for lane in range(s.lanes):
                g, t = divmod(lane, s.t)
                if at(lane) != (r0 + g * rg + t * rt, c0 + g * cg + t * ct):
                    raise AssertionError("mma fragment layout is not affine in (g, t)")
            out[r, h] = (r0, c0, rg, cg, rt, ct)
    return out


def lower(ctx: Lowering, a: Tile, b: Tile, acc: Tile | None) -> Tile:
    """``acc + a @ b`` on the matrix unit (fp32 result); the shapes must fit (:func:`fits`)."""
    s = mma_shape(ctx.W)
    fmt = a.type.kind
    M, K = a.shape
    N = b.shape[1]
    bi = ctx.b
    ctx.scratch_barrier()
    na, nb, nc = M * K, K * N, M * N
    base = ctx.scratch((na + nb + 2 * nc) * 4)
    words = ctx.shared_ptr(base, I32)
    fwords = ctx.shared_ptr(base, F32)
    zero_h = ctx.const(0, a.type)

    def store(t: Tile, off: int) -> None:  # one element per word, at its flat index
        t = t.materialize()
        for slot, v in enumerate(t.slots):
            f = ctx.flat_index(t.shape, slot)
            if t.type.is_half:
                ptr, v = words, bi("hpack", v, zero_h)
            else:
                ptr = fwords
            bi.op("store", [bi("gep", bi("gep", ptr, ctx.const(off)), f), v])

    store(a, 0)
    store(b, na)
    if acc is not None:
        store(acc, na + nb)
    ctx.barrier()

    tid = ctx.tid()
    lane = bi("and", tid, ctx.const(s.lanes - 1))
    warp = bi("shr", tid, ctx.const(s.lanes.bit_length() - 1))
    g = bi("shr", lane, ctx.const(s.t.bit_length() - 1))
    t = bi("and", lane, ctx.const(s.t - 1))
    fa = _affine(s.a_pos, s.regs_a, (0, 1), s)
    fb = _affine(s.b_pos, s.regs_b, (0, 1), s)
    fc = _affine(s.c_pos, s.regs_c, (None,), s)

    def lin(coef: int, v: Value) -> Value | None:
        if coef == 0:
            return None
        if coef & (coef - 1) == 0:
            return bi("shl", v, ctx.const(coef.bit_length() - 1))
        return bi("mul", v, ctx.const(coef))

    def index(row0: Value, col0: Value, aff, ld: int, off: int) -> tuple[Value, int]:
        """(run-time word index, constant word offset) of an element of a row-major
        (ld columns) area at ``off``."""
        r0, c0, rg, cg, rt, ct = aff
        terms = [lin(rg * ld + cg, g), lin(rt * ld + ct, t), lin(ld, row0), col0]
        v = None
        for x in terms:
            if x is not None:
                v = x if v is None else bi("add", v, x)
        return v, off + r0 * ld + c0

    def load_word(ptr: Value, idx: Value, const: int) -> Value:
        return bi.op("load", [bi("gep", bi("gep", ptr, idx), ctx.const(const))]).result

    tiles_n = N // s.n
    ntiles = (M // s.m) * tiles_n
    nwarps = max(1, ctx.T // s.lanes)
    for rnd in builtins.range(-(-ntiles // nwarps)):
        tile = bi("and", bi("add", warp, ctx.const(rnd * nwarps)), ctx.const(ntiles - 1))
        tm = bi("shr", tile, ctx.const(tiles_n.bit_length() - 1))
        tn = bi("and", tile, ctx.const(tiles_n - 1))
        row_c = bi("shl", tm, ctx.const(s.m.bit_length() - 1))
        col_c = bi("shl", tn, ctx.const(s.n.bit_length() - 1))
        if acc is not None:
            c = [load_word(fwords, *index(row_c, col_c, fc[r, None], N, na + nb))
                 for r in builtins.range(s.regs_c)]
        else:
            c = [ctx.const(0.0, F32)] * s.regs_c
        for kk in builtins.range(K // s.k):
            kcol = ctx.const(kk * s.k)
            regs_a = []
            for r in builtins.range(s.regs_a):
                lo, hi = (load_word(words, *index(row_c, kcol, fa[r, h], K, 0))
                          for h in (0, 1))
                regs_a.append(bi("or", lo, bi("shl", hi, ctx.const(16))))
            regs_b = []
            for r in builtins.range(s.regs_b):
                lo, hi = (load_word(words, *index(kcol, col_c, fb[r, h], N, na))
                          for h in (0, 1))
                regs_b.append(bi("or", lo, bi("shl", hi, ctx.const(16))))
            op = bi.op("mma", regs_a + regs_b + c, {"fmt": fmt, "nb": s.regs_b})
            c = list(op.results)
        for r in builtins.range(s.regs_c):
            idx, const = index(row_c, col_c, fc[r, None], N, na + nb + nc)
            bi.op("store", [bi("gep", bi("gep", fwords, idx), ctx.const(const)), c[r]])
    ctx.barrier()
    dbase = na + nb + nc

    def fn(co: Coords) -> Value:
        m, n = co.idx()
        flat = bi("add", bi("shl", m, ctx.const(N.bit_length() - 1)), n)
        return bi.op("load", [bi("gep", bi("gep", fwords, flat), ctx.const(dbase))]).result

    out = Tile(ctx, (M, N), F32, fn=fn).materialize()
    ctx.scratch_dirty = True
    return out


def dot(ctx: Lowering, a: Tile, b: Tile, acc, input_precision, out_dtype) -> Tile | None:
    """The matrix-unit ``tl.dot`` for half operands, or None where the shapes do not fit
    the mma shape (the caller then takes the FP32 path)."""
    check(a, b, acc, input_precision, out_dtype)
    if not fits(ctx, a, b):
        return None
    M, N = a.shape[0], b.shape[1]
    if acc is not None:
        acc = ctx.to_tile(acc)
        check(a, b, acc, input_precision, out_dtype)
        if ctx.broadcast_shape(acc.shape, (M, N)) != (M, N):
            raise CompileError(f"tl.dot accumulator of shape {list(acc.shape)} does not fit "
                               f"({M}, {N})")
        acc = ctx.broadcast_to(acc, (M, N))
    return lower(ctx, a, b, acc)


__all__ = ["check", "fits", "lower", "dot"]
