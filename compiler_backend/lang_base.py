"""What the language's modules share: the ``builtin`` marker, ``constexpr``, and helpers of
the builtins that several modules use (language.py, libmath.py, debug_ops.py, stdlib.py,
shapes.py, scans.py, atomics.py and random.py import from here, never from each other, so the
import graph has no cycle)."""

from __future__ import annotations

import builtins

from .errors import CompileError
from .ir import F32, I1, I32
from .tiles import Coords, Lowering, Tile


class constexpr:  # noqa: N801
    """Annotation for compile-time parameters (``BLOCK: tl.constexpr``)."""

    def __init__(self, value=None):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


def builtin(fn):
    """Mark a language function: the front end calls it with ``_ctx`` set."""

    def wrapper(*args, _ctx: Lowering | None = None, **kwargs):
        if _ctx is None:
            raise CompileError(f"tl.{fn.__name__} can only be called inside a @jit kernel")
        return fn(_ctx, *args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    wrapper._simtgpu_builtin = True
    return wrapper


def _builtin_named(name: str, doc: str, fn):
    """``fn`` as the builtin ``tl.<name>``: for families of builtins made by one factory."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


def _int(x, what: str) -> int:
    if isinstance(x, constexpr):
        x = x.value
    if isinstance(x, bool) or not isinstance(x, int):
        raise CompileError(f"{what} must be a compile-time integer (tl.constexpr), "
                           f"not {type(x).__name__ if not isinstance(x, Tile) else 'a tensor'}")
    return x


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int | constexpr):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise CompileError("a shape must be a tuple of compile-time integers")
    out = tuple(_int(s, "a shape dimension") for s in shape)
    for s in out:
        if s <= 0 or s & (s - 1):
            raise CompileError(f"tile dimensions must be powers of two, not {s}")
    return out


def _each(ctx: Lowering, tiles: list[Tile], emit) -> list:
    """Run ``emit`` once per slot of the broadcast shape of ``tiles`` (side effects)."""
    shape: tuple[int, ...] = ()
    for t in tiles:
        shape = ctx.broadcast_shape(shape, t.shape)
    bt = [ctx.broadcast_to(t, shape) for t in tiles]
    out = []
    for s in builtins.range(ctx.nslots(shape)):
        c = Coords(ctx, shape, s)
        out.append(emit([t.at(c) for t in bt]))
    return out


LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _minmax(ctx: Lowering, name: str, x, y) -> Tile:
    xt = ctx.to_tile(x, like=y if isinstance(y, Tile) else None)
    yt = ctx.to_tile(y, like=xt)
    t = ctx.common_type(xt, yt)
    if t.is_half:  # on the exact float32 values; the result is one of them, exact back
        return ctx.cast(_minmax(ctx, name, ctx.cast(xt, F32), ctx.cast(yt, F32)), t)
    if t == I1:
        t = I32
    op = ("f" + name) if t == F32 else name + ("u" if t.unsigned else "")
    return ctx.mapn([xt, yt], t, lambda a, b: ctx.b(op, ctx.to_type(a, t, xt.type),
                                                     ctx.to_type(b, t, yt.type)))


def _ptr_tile(pointer) -> Tile:
    if not isinstance(pointer, Tile) or not pointer.type.is_ptr:
        raise CompileError("expected a pointer (a pointer argument plus offsets)")
    return pointer


def _mask_tile(ctx: Lowering, mask, shape) -> Tile | None:
    if mask is None:
        return None
    m = ctx.cast(ctx.to_tile(mask), I1)
    shp = ctx.broadcast_shape(shape, m.shape)
    if shp != shape:
        raise CompileError(f"mask of shape {list(m.shape)} does not fit the pointer shape "
                           f"{list(shape)}")
    return m
