"""Shape operations of the kernel language (``tl.trans``, ``permute``, ``reshape``, ``view``,
``ravel``, ``broadcast``, ``join``, ``split``, ``interleave``, ``cat``, ``flip``, ``gather``).

Every one is an index remapping: the result is a lazy tile whose element at index ``idx``
is an element of the input at an index computed from ``idx`` with shifts, masks and xors
(tile dimensions are powers of two). A lazy input costs nothing extra; an input already in
registers in another layout goes through shared memory once (``Lowering.remap``). Two
cases keep the registers as they are: ``reshape`` of a materialised tile (the layout
follows the row-major flat index, which a reshape keeps) and size-1 axes.
"""

from __future__ import annotations

import builtins

from .errors import CompileError
from .ir import I1, I32, Value
from .lang_base import _int, _shape
from .tiles import Coords, Lowering, Tile, _GivenCoords, _log2


def _tile(ctx: Lowering, x) -> Tile:
    t = ctx.to_tile(x)
    if t.type.is_ptr:
        raise CompileError("shape operations on pointer tensors are not supported; apply "
                           "them to the offsets")
    return t


def _dims(t: Tile, dims, what: str) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], tuple | list):
        dims = tuple(dims[0])
    out = tuple(_int(d, what) % builtins.max(1, len(t.shape)) for d in dims)
    if sorted(out) != list(range(len(t.shape))):
        raise CompileError(f"{what} {list(dims)} is not a permutation of the "
                           f"{len(t.shape)} axes of a tile of shape {list(t.shape)}")
    return out


def permute(ctx: Lowering, input, *dims) -> Tile:
    """Reorder the axes: result axis ``k`` is input axis ``dims[k]``."""
    t = _tile(ctx, input)
    order = _dims(t, dims, "permute order")
    if order == tuple(range(len(t.shape))):
        return t
    shape = tuple(t.shape[d] for d in order)

    def pick(idx: list[Value]) -> list[Value]:
        src: list[Value | None] = [None] * len(order)
        for k, d in enumerate(order):
            src[d] = idx[k]
        return src

    return ctx.remap(t, shape, pick)


def trans(ctx: Lowering, input, *dims) -> Tile:
    """``permute``; without ``dims`` the two axes of a 2-D tile swap (Triton's default)."""
    t = _tile(ctx, input)
    if not dims:
        if len(t.shape) != 2:
            raise CompileError(f"tl.trans without dims needs a 2-D tile, not shape "
                               f"{list(t.shape)}")
        dims = (1, 0)
    return permute(ctx, t, *dims)


def _split_flat(ctx: Lowering, flat: Value, shape: tuple[int, ...]) -> list[Value]:
    """The row-major coordinates of flat index ``flat`` in ``shape``."""
    out = []
    inner = 1
    for s in shape:
        inner *= s
    for s in shape:
        inner //= s
        v = ctx.b("shr", flat, ctx.const(_log2(inner))) if inner > 1 else flat
        out.append(ctx.b("and", v, ctx.const(s - 1)) if out else v)
    return out


def reshape(ctx: Lowering, input, *shape, can_reorder: bool = False) -> Tile:
    """The same elements in row-major order under a new shape (``can_reorder`` is
    accepted; the order is always kept)."""
    t = _tile(ctx, input)
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    new = _shape(tuple(shape)) if shape else ()
    n = 1
    for s in new:
        n *= s
    if n != t.numel:
        raise CompileError(f"cannot reshape a tile of shape {list(t.shape)} ({t.numel} "
                           f"elements) to {list(new)} ({n} elements)")
    if new == t.shape:
        return t
    if t.is_scalar or not new:
        return ctx.broadcast_to(t, new) if t.is_scalar else _first(ctx, t)
    if t.slots is not None:
        return Tile(ctx, new, t.type, slots=t.slots)  # same flat layout, same registers

    def pick(idx: list[Value]) -> list[Value]:
        return _split_flat(ctx, ctx.linearize(idx, new), t.shape)

    return ctx.remap(t, new, pick)


def _first(ctx: Lowering, t: Tile) -> Tile:
    """A one-element tile as a scalar."""
    zero = [ctx.const(0) for _ in t.shape]
    if t.has_mat:
        t = ctx.relayout(t.materialize())
    return ctx.scalar(t.fn(_GivenCoords(ctx, t.shape, zero)) if t.slots is None
                      else t.slots[0])


def view(ctx: Lowering, input, *shape) -> Tile:
    """``reshape`` (Triton allows ``view`` to reorder; this one keeps the order)."""
    return reshape(ctx, input, *shape)


def ravel(ctx: Lowering, input, can_reorder: bool = False) -> Tile:
    """The tile as 1-D, row-major."""
    t = _tile(ctx, input)
    return reshape(ctx, t, (t.numel,))


def broadcast(ctx: Lowering, input, other) -> tuple[Tile, Tile]:
    """Both tiles broadcast to their common shape (NumPy rules)."""
    a, b = _tile(ctx, input), _tile(ctx, other)
    shape = ctx.broadcast_shape(a.shape, b.shape)
    return ctx.broadcast_to(a, shape), ctx.broadcast_to(b, shape)


def _coord(ctx: Lowering, shape: tuple[int, ...], axis: int) -> Tile:
    """A tile of ``shape`` whose elements are their own index along ``axis``."""
    return Tile(ctx, shape, I32, fn=lambda c: c.idx()[axis])


def _pick_at(ctx: Lowering, t: Tile, shape, axis: int, value: int) -> Tile:
    """``t`` indexed with ``value`` inserted at ``axis`` (a dimension of ``shape`` that
    ``t`` has and the result does not)."""
    def pick(idx: list[Value]) -> list[Value]:
        return idx[:axis] + [ctx.const(value)] + idx[axis:]

    return ctx.remap(t, shape, pick)


def _select(ctx: Lowering, cond: Tile, a: Tile, b: Tile) -> Tile:
    return ctx.mapn([cond, a, b], a.type, lambda c, x, y: ctx.b("select", c, x, y))


def join(ctx: Lowering, a, b) -> Tile:
    """A new minor axis of size 2: ``join(a, b)[..., 0] == a``, ``[..., 1] == b``."""
    ta, tb = _tile(ctx, a), _tile(ctx, b)
    shape = ctx.broadcast_shape(ta.shape, tb.shape)
    ty = ctx.common_type(ta, tb)
    ta, tb = ctx.broadcast_to(ctx.cast(ta, ty), shape), ctx.broadcast_to(ctx.cast(tb, ty),
                                                                           shape)
    out = shape + (2,)
    n = len(shape)

    def drop(idx: list[Value]) -> list[Value]:
        return idx[:n]

    first = ctx.binary("==", _coord(ctx, out, n), 0)
    return _select(ctx, first, ctx.remap(ta, out, drop), ctx.remap(tb, out, drop))


def split(ctx: Lowering, a) -> tuple[Tile, Tile]:
    """The inverse of ``join``: the two halves of a minor axis of size 2."""
    t = _tile(ctx, a)
    if not t.shape or t.shape[-1] != 2:
        raise CompileError(f"tl.split needs a tile whose last axis has size 2, not shape "
                           f"{list(t.shape)}")
    shape = t.shape[:-1]
    n = len(shape)
    if not shape:  # a pair: two scalars
        return tuple(_first(ctx, ctx.remap(t, (1,), lambda idx, k=k: [ctx.const(k)]))
                     for k in (0, 1))
    return _pick_at(ctx, t, shape, n, 0), _pick_at(ctx, t, shape, n, 1)


def interleave(ctx: Lowering, a, b) -> Tile:
    """``a`` and ``b`` interleaved along their last axis (``join`` then merge)."""
    j = join(ctx, a, b)
    if len(j.shape) == 1:  # two scalars: their pair, as Triton's
        return j
    return reshape(ctx, j, j.shape[:-2] + (j.shape[-2] * 2,))


def cat(ctx: Lowering, input, other, can_reorder: bool = False, dim: int = 0) -> Tile:
    """``input`` followed by ``other`` along axis ``dim`` (0 by default, as Triton's); both
    must have the same shape so that the result's length stays a power of two. Triton
    requires ``can_reorder=True`` and may reorder; this one never does."""
    ta, tb = _tile(ctx, input), _tile(ctx, other)
    if ta.shape != tb.shape or not ta.shape:
        raise CompileError(f"tl.cat needs two tiles of one shape, got {list(ta.shape)} and "
                           f"{list(tb.shape)}")
    ty = ctx.common_type(ta, tb)
    ta, tb = ctx.cast(ta, ty), ctx.cast(tb, ty)
    d = _int(dim, "dim") % len(ta.shape)
    half = ta.shape[d]
    shape = ta.shape[:d] + (2 * half,) + ta.shape[d + 1:]

    def low(idx: list[Value]) -> list[Value]:
        return idx[:d] + [ctx.b("and", idx[d], ctx.const(half - 1))] + idx[d + 1:]

    second = ctx.binary(">=", _coord(ctx, shape, d), half)
    return _select(ctx, second, ctx.remap(tb, shape, low), ctx.remap(ta, shape, low))


def flip(ctx: Lowering, x, dim=None) -> Tile:
    """``x`` reversed along ``dim`` (the last axis by default, as Triton's)."""
    t = _tile(ctx, x)
    if t.is_scalar:
        return t
    d = len(t.shape) - 1 if dim is None else _int(dim, "dim") % len(t.shape)
    size = t.shape[d]
    if size == 1:
        return t

    def pick(idx: list[Value]) -> list[Value]:
        return idx[:d] + [ctx.b("xor", idx[d], ctx.const(size - 1))] + idx[d + 1:]

    return ctx.remap(t, t.shape, pick)


def gather(ctx: Lowering, src, index, axis) -> Tile:
    """``out[i, j] = src[index[i, j], j]`` for ``axis=0`` (and likewise for other axes): the
    result has ``index``'s shape, which equals ``src``'s except along ``axis``. Index
    values are taken modulo the axis length (Triton leaves out-of-range indices
    undefined)."""
    s, ix = _tile(ctx, src), ctx.cast(_tile(ctx, index), I32)
    a = _int(axis, "axis") % builtins.max(1, len(s.shape))
    if len(ix.shape) != len(s.shape) or any(
            x != y for k, (x, y) in enumerate(zip(ix.shape, s.shape, strict=True)) if k != a):
        raise CompileError(f"tl.gather needs an index of the source's shape except along axis "
                           f"{a}: source {list(s.shape)}, index {list(ix.shape)}")
    mat = s.materialize()
    if s.type == I1:
        mat = ctx.cast(mat, I32).materialize()
    table = ctx.relayout(mat) if mat.shape else mat
    size = s.shape[a]

    def fn(c: Coords) -> Value:
        idx = list(c.idx())
        k = ctx.b("and", ix.at(c), ctx.const(size - 1))
        idx[a] = k
        return table.fn(_GivenCoords(ctx, s.shape, idx))

    out = Tile(ctx, ix.shape, table.type, fn=fn, deps=(ix,))
    return ctx.cast(out, I1) if s.type == I1 else out
