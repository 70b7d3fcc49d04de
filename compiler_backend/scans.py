"""Scans, reductions with a combine function, sort and histogram (``tl.reduce``,
``tl.associative_scan``, ``tl.cumsum``, ``tl.cumprod``, ``tl.sort``, ``tl.histogram``).

The order of combination is fixed so that results are reproducible bit for bit: along the
axis, strictly from the first element to the last (the last to the first with
``reverse=True``):

    reduce:  r = f(...f(f(x[0], x[1]), x[2])..., x[n-1])
    scan:    y[0] = x[0];  y[i] = f(y[i-1], x[i])
    reverse: y[n-1] = x[n-1];  y[i] = f(y[i+1], x[i])

so ``combine_fn`` need be neither commutative nor associative for the result to be
defined, and a float ``cumsum`` equals NumPy's ``np.cumsum`` (a sequential accumulation in
float32) exactly. On threads: the tile goes to shared memory, each *line* along the axis is
walked by one thread (a run-time loop of ``n - 1`` steps; lines run in parallel on the
block's threads), and the result is read back. A scan of ``n`` elements therefore takes
``n`` sequential steps per line, where a tree scan would take ``log n`` with another order.
"""

from __future__ import annotations

import builtins

from . import ir, narrow
from .errors import CompileError
from .ir import F16, F32, I1, I32, I64, U32, Type, Value
from .lang_base import _int, _shape
from .tiles import Coords, Lowering, Tile, _log2


def _operands(ctx: Lowering, input) -> tuple[list[Tile], bool]:
    """The input tiles (a tuple for multi-operand reductions), broadcast to one shape."""
    many = isinstance(input, tuple | list)
    ts = [ctx.to_tile(x) for x in (input if many else (input,))]
    if not ts:
        raise CompileError("nothing to reduce")
    shape: tuple[int, ...] = ()
    for t in ts:
        if t.type.is_ptr:
            raise CompileError("cannot scan or reduce pointers")
        shape = ctx.broadcast_shape(shape, t.shape)
    ts = [ctx.broadcast_to(ctx.cast(t, I32) if t.type == I1 else t, shape) for t in ts]
    return ts, many


def _axis(shape: tuple[int, ...], axis) -> int:
    a = _int(axis, "axis")
    if not -len(shape) <= a < len(shape):
        raise CompileError(f"axis {axis} is out of range for shape {list(shape)}")
    return a % len(shape)


def _jit_combine(ctx: Lowering, fn, types: list[Type]):
    """A user ``@jit`` combine function as a combine over IR values (inlined per call)."""
    if not getattr(fn, "_simtgpu_jit", False):
        raise CompileError("combine_fn must be a @triton.jit function")
    front = ctx.frontend

    def combine(a: list[Value], b: list[Value]) -> list[Value]:
        # halves travel through the walk as their exact float32 values (_walk_operands)
        args = [ctx.cast(ctx.scalar(v), t) for v, t in zip(a + b, types + types, strict=True)]
        r = front.inline(fn, args, {}, front.node)
        rs = list(r) if isinstance(r, tuple | list) else [r]
        if len(rs) != len(types):
            raise CompileError(f"combine_fn returns {len(rs)} value(s) for {len(types)} "
                               "operand(s)")
        out = []
        for v, t in zip(rs, types, strict=True):
            tv = ctx.to_tile(v, like=Tile(ctx, (), t, slots=[ctx.const(0, t)]))
            if not tv.is_scalar:
                raise CompileError("combine_fn must return scalars")
            out.append(ctx.cast(ctx.cast(tv, t), _walk_type(t)).scalar)
        return out

    return combine


def _walk_type(t: Type) -> Type:
    """The type an operand of a combine function has in the line walk: halves as their
    exact float32 values (32-bit shared words), the rest as they are."""
    return F32 if t.is_half else t


def _walk_operands(ctx: Lowering, ts: list[Tile]) -> list[Tile]:
    return [ctx.cast(t, _walk_type(t.type)) for t in ts]


def _is_wide(t: Type) -> bool:
    return t.kind == "i64"  # int64 and uint64


def _words(ctx: Lowering, v: Value) -> list[Value]:
    """An int64 value's low and high 32-bit words."""
    return [ctx.b("trunc", v), ctx.b("trunc", ctx.b("shr", v, ctx.const(32, I64)))]


def _joined(ctx: Lowering, lo: Value, hi: Value) -> Value:
    return ctx.b("add", ctx.b("shl", ctx.b("zext", hi), ctx.const(32, I64)), ctx.b("zext", lo))


def _join_values(ctx: Lowering, words: list[Value], types: list[Type]) -> list[Value]:
    out, it = [], iter(words)
    for t in types:
        out.append(_joined(ctx, next(it), next(it)) if _is_wide(t) else next(it))
    return out


def _split_values(ctx: Lowering, vals: list[Value], types: list[Type]) -> list[Value]:
    out: list[Value] = []
    for v, t in zip(vals, types, strict=True):
        out.extend(_words(ctx, v) if _is_wide(t) else [v])
    return out


def walk_lines(ctx: Lowering, ts: list[Tile], axis: int, combine, scan: bool,
               reverse: bool) -> list[Tile]:
    """:func:`_walk_lines` for operands of any type: an int64 (uint64) operand travels as
    its two 32-bit words (shared memory holds words), joined again for ``combine`` (which
    sees and returns whole values, as for the other types) and in the results."""
    types = [t.type for t in ts]
    if not any(_is_wide(t) for t in types):
        return _walk_lines(ctx, ts, axis, combine, scan, reverse)
    words: list[Tile] = []
    for t in ts:
        if _is_wide(t.type):
            words += [ctx.map1(t, I32, lambda v, k=k: _words(ctx, v)[k]) for k in (0, 1)]
        else:
            words.append(t)

    def combine_words(a: list[Value], b: list[Value]) -> list[Value]:
        r = combine(_join_values(ctx, a, types), _join_values(ctx, b, types))
        return _split_values(ctx, r, types)

    rs = iter(_walk_lines(ctx, words, axis, combine_words, scan, reverse))
    return [ctx.mapn([next(rs), next(rs)], t, lambda lo, hi: _joined(ctx, lo, hi))
            if _is_wide(t) else next(rs) for t in types]


def _walk_lines(ctx: Lowering, ts: list[Tile], axis: int, combine, scan: bool,
                reverse: bool) -> list[Tile]:
    """The shared-memory line walk behind every scan and reduction here."""
    shape = ts[0].shape
    n = shape[axis]
    numel = ts[0].numel
    inner = 1
    for s in shape[axis + 1:]:
        inner *= s
    lines = numel // n
    k = len(ts)
    out_shape = shape if scan else shape[:axis] + shape[axis + 1:]
    ctx.scratch_barrier()
    base = ctx.scratch(4 * k * (numel + (0 if scan else lines)))
    bases = []
    for j, t in enumerate(ts):
        b = ctx.shared_ptr(base, t.type)
        b = ctx.b("gep", b, ctx.const(j * numel)) if j else b
        ctx.store_tile_shared(t.materialize(), b)
        bases.append(b)
    outs = bases if scan else [ctx.b("gep", ctx.shared_ptr(base, t.type),
                                      ctx.const(k * numel + j * lines))
                               for j, t in enumerate(ts)]
    ctx.barrier()
    tid = ctx.tid()
    for g in builtins.range(-(-lines // ctx.T)):
        line = ctx.b("add", tid, ctx.const(g * ctx.T)) if g else tid
        parent = ctx.b.block
        region = None
        if lines % ctx.T:
            region = ir.Block()
            ctx.b.block = region
        sh = _log2(inner)
        outer = ctx.b("shr", line, ctx.const(sh)) if sh else line
        off = ctx.b("shl", outer, ctx.const(_log2(n * inner))) if n * inner > 1 else outer
        if inner > 1:
            off = ctx.b("add", off, ctx.b("and", line, ctx.const(inner - 1)))
        first = (n - 1) * inner if reverse else 0
        start = ctx.b("add", off, ctx.const(first)) if first else off
        acc = [ctx.b.op("load", [ctx.b("gep", b, start)]).result for b in bases]
        if n > 1:
            types = [t.type for t in ts]
            body = ir.Block([I32] + types)
            outer_block = ctx.b.block
            ctx.b.block = body
            kk = body.args[0]
            step = ctx.b("mul", kk, ctx.const(-inner if reverse else inner))
            pos = ctx.b("add", start, step)
            vals = [ctx.b.op("load", [ctx.b("gep", b, pos)]).result for b in bases]
            new = combine(list(body.args[1:]), vals)
            if scan:
                for b, v in zip(bases, new, strict=True):
                    ctx.b.op("store", [ctx.b("gep", b, pos), v])
            body.append(ir.Op("yield", new, []))
            ctx.b.block = outer_block
            loop = ctx.b.op("for", [ctx.const(1), ctx.const(n), ctx.const(1)] + acc,
                            types=types, regions=[body])
            acc = loop.results
        if not scan:
            for o, v in zip(outs, acc, strict=True):
                ctx.b.op("store", [ctx.b("gep", o, line), v])
        if region is not None:
            region.append(ir.Op("yield", [], []))
            ctx.b.block = parent
            cond = ctx.b.op("icmp", [line, ctx.const(lines)], {"cond": "lt"}).result
            empty = ir.Block()
            empty.append(ir.Op("yield", [], []))
            ctx.b.op("if", [cond], types=[], regions=[region, empty])
    ctx.barrier()
    results = []
    for o, t in zip(outs, ts, strict=True):
        def fn(c: Coords, o=o) -> Value:
            return ctx.b.op("load", [ctx.b("gep", o, ctx.linearize(c.idx(), out_shape))]
                            ).result

        if out_shape:
            results.append(Tile(ctx, out_shape, t.type, fn=fn).materialize())
        else:
            results.append(ctx.scalar(ctx.b.op("load", [o]).result))
    ctx.scratch_dirty = True
    return results


def _flat_axis(ctx: Lowering, ts: list[Tile], axis):
    """``axis=None`` reduces the whole tile: the row-major flattening, along axis 0."""
    from .shapes import ravel

    if axis is None:
        return [ravel(ctx, t) for t in ts], 0
    return ts, _axis(ts[0].shape, axis)


def _keep_dims(ctx: Lowering, r: Tile, shape: tuple[int, ...], axis, a: int) -> Tile:
    """A reduction result with the reduced axis (all axes for ``axis=None``) kept as 1."""
    if axis is None:
        return ctx.broadcast_to(r, (1,) * len(shape))
    key: list = [slice(None)] * len(r.shape)
    key.insert(a, None)
    return ctx.subscript(r, tuple(key))


def reduce(ctx: Lowering, input, axis, combine_fn, keep_dims: bool = False):
    """Reduce along ``axis`` (all axes for None) with the ``@jit`` function ``combine_fn``,
    from the first element to the last (see the module docstring)."""
    ts, many = _operands(ctx, input)
    if ts[0].is_scalar:
        return tuple(ts) if many else ts[0]
    shape = ts[0].shape
    types = [t.type for t in ts]
    flat, a = _flat_axis(ctx, _walk_operands(ctx, ts), axis)
    rs = walk_lines(ctx, flat, a, _jit_combine(ctx, combine_fn, types),
                    scan=False, reverse=False)
    rs = [ctx.cast(r, t) for r, t in zip(rs, types, strict=True)]
    if keep_dims:
        rs = [_keep_dims(ctx, r, shape, axis, a) for r in rs]
    return tuple(rs) if many else rs[0]


def associative_scan(ctx: Lowering, input, axis, combine_fn, reverse: bool = False):
    """Inclusive scan along ``axis`` with the ``@jit`` function ``combine_fn``."""
    ts, many = _operands(ctx, input)
    if ts[0].is_scalar:
        return tuple(ts) if many else ts[0]
    a = _axis(ts[0].shape, axis)
    types = [t.type for t in ts]
    rs = walk_lines(ctx, _walk_operands(ctx, ts), a, _jit_combine(ctx, combine_fn, types),
                    scan=True, reverse=bool(reverse))
    rs = [ctx.cast(r, t) for r, t in zip(rs, types, strict=True)]
    return tuple(rs) if many else rs[0]


def _builtin_scan(ctx: Lowering, input, axis, reverse, op: str):
    ts, _ = _operands(ctx, input)
    t = ts[0]
    if t.is_scalar:
        return t
    half = t.type if t.type.is_half else None
    if half is not None:  # on the exact float32 values, as the half reductions
        t = ctx.cast(t, F32)
    if t.type.narrow and op == "add":  # Triton's cumsum of 8/16-bit integers: 32 bits
        t = ctx.cast(t, U32 if t.type.unsigned else I32)
    name = ("f" + op) if t.type == F32 else op
    ty = t.type

    def combine(a: list[Value], b: list[Value]) -> list[Value]:
        v = ctx.b(name, a[0], b[0])
        return [narrow.normalize(ctx, v, ty) if ty.narrow else v]  # cumprod wraps

    r = walk_lines(ctx, [t], _axis(t.shape, axis), combine, scan=True,
                   reverse=bool(reverse))[0]
    # Triton keeps float16 (each prefix rounded once here) and promotes bfloat16 to float32
    return ctx.cast(r, half) if half == F16 else r


def cumsum(ctx: Lowering, input, axis=0, reverse: bool = False, dtype=None):
    """Inclusive prefix sum along ``axis`` (first to last element, float32 or int32)."""
    from .dtypes import to_ir_type

    if dtype is not None:
        ty = to_ir_type(dtype)
        input = ctx.cast(ctx.to_tile(input), ty)
        if ty.narrow:  # prefix sums in int8 wrap: the 32-bit sums' low bits
            return ctx.cast(_builtin_scan(ctx, input, axis, reverse, "add"), ty)
    return _builtin_scan(ctx, input, axis, reverse, "add")


def cumprod(ctx: Lowering, input, axis=0, reverse: bool = False):
    """Inclusive prefix product along ``axis``."""
    return _builtin_scan(ctx, input, axis, reverse, "mul")


def _bitwise_reduce(ctx: Lowering, input, axis, keep_dims: bool, op: str, name: str):
    """The ``op`` (``xor``, ``or``) of the integer elements along ``axis`` (all for None)."""
    ts, _ = _operands(ctx, input)
    t = ts[0]
    if t.type not in (I32, U32):
        raise CompileError(f"tl.{name} needs integers")
    if t.is_scalar:
        return t
    flat, a = _flat_axis(ctx, [t], axis)

    def combine(x: list[Value], y: list[Value]) -> list[Value]:
        return [ctx.b(op, x[0], y[0])]

    r = _walk_lines(ctx, flat, a, combine, scan=False, reverse=False)[0]
    return _keep_dims(ctx, r, t.shape, axis, a) if keep_dims else r


def xor_sum(ctx: Lowering, input, axis=None, keep_dims: bool = False):
    """The xor of the (integer) elements along ``axis`` (all axes for None)."""
    return _bitwise_reduce(ctx, input, axis, keep_dims, "xor", "xor_sum")


def reduce_or(ctx: Lowering, input, axis, keep_dims: bool = False):
    """The bitwise or of the (integer) elements along ``axis`` (all axes for None)."""
    return _bitwise_reduce(ctx, input, axis, keep_dims, "or", "reduce_or")


def _ordering(ctx: Lowering, x, what: str, dim) -> tuple[Tile, Type]:
    """The tile that ``what`` (sort, topk, bitonic_merge) orders along its last axis, and
    the type to give the result back in: booleans are ordered as int32 and halves as
    their exact float32 values."""
    t = ctx.to_tile(x)
    ty = t.type
    if ty == I1:
        t = ctx.cast(t, I32)
    elif ty.is_half:
        t = ctx.cast(t, F32)
    if t.type.is_ptr:
        raise CompileError(f"tl.{what} cannot order pointers")
    if not t.is_scalar:
        d = len(t.shape) - 1 if dim is None else _axis(t.shape, dim)
        if d != len(t.shape) - 1:
            raise CompileError(f"tl.{what} works along the last axis only (as Triton)")
    return t, ty


def _compare(ctx: Lowering, ty: Type, cond: str, a: Value, b: Value) -> Value:
    """``a cond b`` in the order of ``ty``: unsigned for uint32, false for a NaN."""
    if ty == F32:
        return ctx.b.op("fcmp", [a, b], {"cond": cond}).result
    if ty.unsigned and cond not in ("eq", "ne"):
        cond += "u"
    return ctx.b.op("icmp", [a, b], {"cond": cond}).result


def _sorted_rows(ctx: Lowering, t: Tile, descending: bool) -> Value:
    """Sort each line of ``t`` along its last axis into shared memory: the returned pointer
    holds the sorted tile in row-major order. Each element's place is the number of
    elements before it in the order, ties kept in index order (a stable sort)."""
    shape, n, numel = t.shape, t.shape[-1], t.numel
    mt = t.materialize()
    ctx.scratch_barrier()
    base = ctx.scratch(8 * numel)
    src = ctx.shared_ptr(base, mt.type)
    dst = ctx.b("gep", src, ctx.const(numel))
    ctx.store_tile_shared(mt, src)
    ctx.barrier()
    before = "gt" if descending else "lt"
    for s, v in enumerate(mt.slots):
        flat = ctx.flat_index(shape, s)
        i = ctx.b("and", flat, ctx.const(n - 1))
        row = ctx.b("sub", flat, i)
        body = ir.Block([I32, I32])
        parent = ctx.b.block
        ctx.b.block = body
        j, rank = body.args
        u = ctx.b.op("load", [ctx.b("gep", src, ctx.b("add", row, j))]).result
        ahead = _compare(ctx, mt.type, before, u, v)
        tie = ctx.b("and", _compare(ctx, mt.type, "eq", u, v),
                    ctx.b.op("icmp", [j, i], {"cond": "lt"}).result)
        one = ctx.b("select", ctx.b("or", ahead, tie), ctx.const(1), ctx.const(0))
        body.append(ir.Op("yield", [ctx.b("add", rank, one)], []))
        ctx.b.block = parent
        loop = ctx.b.op("for", [ctx.const(0), ctx.const(n), ctx.const(1), ctx.const(0)],
                        types=[I32], regions=[body])
        dest = ctx.b("gep", dst, ctx.b("add", row, loop.result))
        rep = ctx.replica_mask(shape)
        ctx.b.op("store", [dest, v] + ([rep] if rep is not None else []))
    ctx.barrier()
    ctx.scratch_dirty = True
    return dst


def _read_rows(ctx: Lowering, base: Value, shape: tuple[int, ...], out_shape: tuple[int, ...],
               ty: Type, back: Type) -> Tile:
    """The tile of ``out_shape`` whose element ``[..., j]`` is element ``[..., j]`` of the
    row-major ``shape`` tile at ``base`` (the first columns when ``out_shape`` is narrower),
    in the type ``back``."""
    def fn(c: Coords) -> Value:
        return ctx.b.op("load", [ctx.b("gep", base, ctx.linearize(c.idx(), shape))]).result

    out = Tile(ctx, out_shape, ty, fn=fn).materialize()
    return out if back == ty else ctx.cast(out, back)


def sort(ctx: Lowering, x, dim=None, descending: bool = False) -> Tile:
    """Sort along ``dim`` (the last axis; Triton supports only that one), stable (ties in
    index order, as ``np.sort(kind="stable")``; NaNs are not ordered); uint32 in unsigned
    order, halves by value."""
    t, ty = _ordering(ctx, x, "sort", dim)
    if t.is_scalar:
        return ctx.to_tile(x)
    dst = _sorted_rows(ctx, t, bool(descending))
    return _read_rows(ctx, dst, t.shape, t.shape, t.type, ty)


def topk(ctx: Lowering, x, k, dim=None, descending: bool = True) -> Tile:
    """The ``k`` largest elements along the last axis, largest first (the ``k`` smallest,
    smallest first, with ``descending=False``): the first ``k`` of :func:`sort`. As in
    Triton, ``k`` is a power of two no larger than the axis."""
    t, ty = _ordering(ctx, x, "topk", dim)
    kk = _int(k, "k")
    if t.is_scalar:
        raise CompileError("tl.topk needs a tensor")
    n = t.shape[-1]
    if kk < 1 or kk & (kk - 1) or kk > n:
        raise CompileError(f"tl.topk: k must be a power of two from 1 to {n} (the size of "
                           f"the last axis), not {kk}")
    dst = _sorted_rows(ctx, t, bool(descending))
    return _read_rows(ctx, dst, t.shape, t.shape[:-1] + (kk,), t.type, ty)


def bitonic_merge(ctx: Lowering, x, dim=None, descending: bool = False) -> Tile:
    """Triton's bitonic merge along the last axis: compare-and-swap rounds at strides
    ``n/2, n/4, ..., 1``, each pair put in ascending order (descending with
    ``descending``). A bitonic line comes out sorted; any other line comes out as the same
    network leaves it in Triton (a pair is swapped when ``(left > right) != descending``,
    so a NaN pair is swapped only when descending)."""
    t, ty = _ordering(ctx, x, "bitonic_merge", dim)
    if t.is_scalar:
        return ctx.to_tile(x)
    shape, n, numel = t.shape, t.shape[-1], t.numel
    desc = bool(descending)
    ctx.scratch_barrier()
    base = ctx.scratch(8 * numel)
    bufs = [ctx.shared_ptr(base, t.type)]
    bufs.append(ctx.b("gep", bufs[0], ctx.const(numel)))
    stride, k = n // 2, 0
    while stride >= 1:
        # one barrier per round: the two buffers alternate, so a round's writes never meet
        # the previous round's reads
        mt = t.materialize()
        buf = bufs[k % 2]
        ctx.store_tile_shared(mt, buf)
        ctx.barrier()

        def fn(c: Coords, mt=mt, buf=buf, stride=stride) -> Value:
            flat = ctx.linearize(c.idx(), shape)
            me = mt.at(c)
            other = ctx.b.op("load", [ctx.b("gep", buf, ctx.b("xor", flat, ctx.const(stride)))]
                             ).result
            left = ctx.b.op("icmp", [ctx.b("and", flat, ctx.const(stride)), ctx.const(0)],
                            {"cond": "eq"}).result
            lo, hi = ctx.b("select", left, me, other), ctx.b("select", left, other, me)
            gt = _compare(ctx, mt.type, "gt", lo, hi)
            swap = ctx.b("xor", gt, ctx.const(True, I1)) if desc else gt
            return ctx.b("select", swap, other, me)

        t = Tile(ctx, shape, t.type, fn=fn).materialize()
        stride, k = stride // 2, k + 1
    ctx.scratch_dirty = True
    return t if ty == t.type else ctx.cast(t, ty)


def histogram(ctx: Lowering, input, num_bins, mask=None) -> Tile:
    """Counts of the values ``0 .. num_bins - 1`` in ``input`` (int32); values outside that
    range, and elements where ``mask`` is false, are not counted. Shared-memory atomics."""
    nb = _int(num_bins, "num_bins")
    _shape((nb,))
    t = ctx.cast(ctx.to_tile(input), I32)
    if t.type != I32:
        raise CompileError("tl.histogram counts integer values")
    shape = t.shape
    ctx.scratch_barrier()
    base = ctx.shared_ptr(ctx.scratch(4 * nb), I32)
    zero = Tile(ctx, (nb,), I32, fn=lambda c: ctx.const(0))
    ctx.store_tile_shared(zero.materialize(), base)
    ctx.barrier()
    m = None
    if mask is not None:
        m = ctx.broadcast_to(ctx.cast(ctx.to_tile(mask), I1), shape) if shape else ctx.cast(
            ctx.to_tile(mask), I1)
    rep = ctx.replica_mask(shape) if shape else ctx.b.op(
        "icmp", [ctx.tid(), ctx.const(0)], {"cond": "eq"}).result
    mt = t.materialize()
    for s in builtins.range(ctx.nslots(shape)):
        c = Coords(ctx, shape, s)
        v = mt.at(c)
        ok = ctx.b.op("icmp", [v, ctx.const(nb)], {"cond": "ltu"}).result
        if m is not None:
            ok = ctx.b("and", ok, m.at(c))
        if rep is not None:
            ok = ctx.b("and", ok, rep)
        ctx.b.op("atomic", [ctx.b("gep", base, v), ctx.const(1), ok], {"op": "add"})
    ctx.barrier()

    def fn(c: Coords) -> Value:
        return ctx.b.op("load", [ctx.b("gep", base, c.idx()[0])]).result

    out = Tile(ctx, (nb,), I32, fn=fn).materialize()
    ctx.scratch_dirty = True
    return out
