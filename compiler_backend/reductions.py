"""Reductions along one axis of a 2-D tile by warp shuffles, shared memory only across warps.

Element ``f`` of the row-major flattened ``(M, N)`` tile lives in thread ``(f // v) % T``,
slot ``(f // (v * T)) * v + f % v`` (``v = Lowering.vec``; 1 is the cyclic layout): bits
``[0, log2 v)`` of ``f`` and those above the thread id are slot bits; the thread id splits
into lane (low ``log2 W`` bits) and warp. The reduced axis
is a contiguous range of bits of ``f``: the low ``log2 N`` bits for ``axis=1``, the high
``log2 M`` bits for ``axis=0``. Those bits fall into slot, lane and warp bits, and each
output element is combined in this order, which is the definition a NumPy model follows:

1. the thread's own slots, sequentially in increasing slot order;
2. a butterfly of ``shfl.xor`` over the reduced lane bits, highest bit first (afterwards
   every lane of the group holds the same value);
3. the per-warp partial results, sequentially in increasing warp order, read from shared
   memory (one store per thread and slot, one barrier).

Where no warp bit is reduced and the result already sits in its output layout (``axis=0``
in the cyclic layout: thread ``t`` owns column ``t % N`` in every slot) there is no shared
memory at all;
``axis=1`` results move to the output layout through shared memory (one load each). The
path is chosen by an instruction estimate (:func:`uses_shuffles`); the other is the
shared-memory exchange, where each output element is a sequential chain in index order.
"""

from __future__ import annotations

import builtins
import math

from . import ir
from .ir import Function, Op
from .tiles import Coords, Lowering, Tile, _log2


def _bits(shape: tuple[int, int], axis: int, T: int, W: int):
    M, N = shape
    lt, lw = _log2(T), _log2(W)
    lo, hi = (0, _log2(N)) if axis == 1 else (_log2(N), _log2(M * N))
    return lt, lw, lo, hi


def uses_shuffles(shape: tuple[int, ...], axis: int, T: int, W: int) -> bool:
    """Whether ``tl.sum``/``max``/``min`` along ``axis`` of a tile of ``shape`` on ``T``
    threads in warps of ``W`` takes the shuffle path (else: the shared-memory exchange,
    each output element a sequential chain in index order).

    The shuffle path is taken where its estimated instructions per thread are fewer: a
    butterfly costs three per step (constant, shuffle, combine) and runs once per slot
    group, while the exchange stores every slot once and loads each reduced element with
    its address (three per element). Rows spread over the lanes of a warp, several per
    thread, are cheaper to exchange; columns almost always reduce in the thread's own slots.
    """
    if len(shape) != 2 or math.prod(shape) < T:
        return False
    lt, lw, lo, hi = _bits(shape, axis, T, W)
    slots = math.prod(shape) // T
    s_bits = builtins.max(hi, lt) - builtins.max(lo, lt)
    groups = slots >> s_bits
    lane_steps = builtins.max(0, builtins.min(hi, lw) - lo)
    warps = 1 << builtins.max(0, builtins.min(hi, lt) - builtins.max(lo, lw))
    n_out = builtins.max(1, math.prod(shape) // shape[axis] // T)
    exchange = not (axis == 0 and warps == 1)
    shuffle = (slots - groups) + 3 * groups * lane_steps + (
        groups + 1 + n_out * (3 * warps - 1) if exchange else 0)
    shared = slots + 1 + n_out * (3 * shape[axis] - 1)
    return shuffle < shared


def reduce_axis_shuffle(ctx: Lowering, t: Tile, axis: int, combine) -> Tile | None:
    """``t`` (2-D, at least one element per thread) reduced along ``axis`` in the order of
    the module docstring, or None where :func:`uses_shuffles` says the shared-memory
    reduction is cheaper (the caller falls back to it). ``combine(a, b)`` emits one
    combination."""
    if not uses_shuffles(t.shape, axis, ctx.T, ctx.W):
        return None
    M, N = t.shape
    lt, lw, lo, hi = _bits(t.shape, axis, ctx.T, ctx.W)
    lv = _log2(ctx.vec(t.shape))
    slots = t.materialize().slots
    # flat-index bits: [0, lv) the slot's low bits, [lv, lv + lt) the thread id, the rest
    # the slot's high bits (from bit lv); the reduced ones are [lo, hi)
    smask = 0
    for b in builtins.range(lo, hi):
        if b < lv:
            smask |= 1 << b
        elif b >= lv + lt:
            smask |= 1 << (b - lt)
    t_lo, t_hi = builtins.max(lo, lv) - lv, builtins.max(builtins.min(hi, lv + lt) - lv, 0)
    # 1. slots: the reduced slot bits, in increasing slot order
    groups: dict[int, ir.Value] = {}
    for s in builtins.range(len(slots)):
        rep = s & ~smask
        groups[rep] = slots[s] if rep not in groups else combine(groups[rep], slots[s])
    # 2. lanes: a butterfly over the reduced lane bits, highest first
    for rep, acc in groups.items():
        for b in builtins.range(builtins.min(t_hi, lw) - 1, t_lo - 1, -1):
            acc = combine(acc, ctx.b("shfl", acc, ctx.const(1 << b), mode="xor"))
        groups[rep] = acc
    w_lo, w_hi = builtins.max(t_lo, lw), t_hi
    out_shape = (M,) if axis == 1 else (N,)
    if axis == 0 and w_lo >= w_hi and lv == 0:
        # every thread already holds the columns of its output slots (or, for a replicated
        # output, column t % N): no exchange
        return Tile(ctx, out_shape, t.type, slots=[groups[r] for r in sorted(groups)])
    # 3. per-warp partials through shared memory, combined in warp order by their readers
    ctx.scratch_barrier()
    base = ctx.shared_ptr(ctx.scratch(t.numel * 4), t.type)
    for rep, acc in groups.items():
        ctx.b.op("store", [ctx.b("gep", base, ctx.flat_index(t.shape, rep)), acc])
    ctx.barrier()
    ctx.scratch_dirty = True

    def fn(c: Coords) -> ir.Value:
        o = c.idx()[0]
        flat0 = ctx.b("shl", o, ctx.const(_log2(N))) if axis == 1 else o
        acc = None
        for k in builtins.range(1 << builtins.max(0, w_hi - w_lo)):
            idx = flat0 if k == 0 else ctx.b("add", flat0, ctx.const(k << (w_lo + lv)))
            v = ctx.b.op("load", [ctx.b("gep", base, idx)]).result
            acc = v if acc is None else combine(acc, v)
        return acc

    return Tile(ctx, out_shape, t.type, fn=fn).materialize()


def drop_repeated_barriers(fn: Function) -> Function:
    """Remove a barrier that follows another in the same block with only pure ops between.

    Guarantees: every thread of the block already waited at the first barrier and nothing
    between the two touches memory, so the second orders nothing the first did not.
    """

    def visit(block: ir.Block) -> None:
        keep: list[Op] = []
        last_barrier = False
        for op in block.ops:
            for r in op.regions:
                visit(r)
            if op.name == "barrier" and last_barrier:
                continue
            if op.name == "barrier":
                last_barrier = True
            elif not op.pure:
                last_barrier = False
            keep.append(op)
        block.ops = keep

    visit(fn.body)
    return fn
