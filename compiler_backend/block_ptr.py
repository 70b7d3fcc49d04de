"""Block-tile access: ``tl.make_block_ptr``/``tl.advance`` and tensor descriptors.

Both describe a ``block_shape`` window of an N-D array given by a base pointer, its
``shape`` and its ``strides`` (in elements). They lower to what a hand-written kernel does:
the element at block index ``i`` is at ``base + sum_d (offset_d + i_d) * stride_d``, and a
boundary check on dimension ``d`` masks it with ``0 <= offset_d + i_d < shape_d`` (one
unsigned comparison). The addresses and masks are ordinary lazy tiles, so ``tl.load`` and
``tl.store`` emit the same IR as for a tensor of pointers: both code generators serve,
nothing is target-specific.

Semantics follow Triton: ``tl.load(block_ptr, boundary_check=dims, padding_option=...)``
reads elements outside the array on a checked dimension as ``0`` (``"zero"``, also when no
padding is named, where Triton leaves them undefined) or NaN (``"nan"``, float only); a
store does not write them; unchecked dimensions are not masked. Tensor descriptors
(``tl.make_tensor_descriptor``) check every dimension and read zeros.

A block pointer is a compile-time object holding run-time scalars. Reassigning it in a
run-time loop (``p = tl.advance(p, (0, BK))``) carries its offsets through the loop;
its base, shape and strides must stay those it entered the loop with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import CompileError
from .ir import F32, I1, I32
from .lang_base import _int, _shape, builtin
from .tiles import Lowering, Tile

PADDING_OPTIONS = ("", "zero", "nan")


def _scalar(ctx: Lowering, x, what: str) -> int | Tile:
    """A compile-time integer stays one; a run-time scalar becomes an int32 tile."""
    if hasattr(x, "value") and not isinstance(x, Tile):  # a constexpr
        x = x.value
    if isinstance(x, bool):
        raise CompileError(f"{what} must be an integer, not a bool")
    if isinstance(x, int):
        return x
    if isinstance(x, Tile):
        if not x.is_scalar:
            raise CompileError(f"{what} must be a scalar, not a tile of shape {list(x.shape)}")
        if x.type.is_ptr or x.type == F32:
            raise CompileError(f"{what} must be an integer, not {x.type}")
        return ctx.cast(x, I32)
    raise CompileError(f"{what} must be an integer, not {type(x).__name__}")


def _scalars(ctx: Lowering, xs, n: int | None, what: str) -> tuple:
    if isinstance(xs, Tile) or not isinstance(xs, tuple | list):
        raise CompileError(f"{what} must be a tuple or list (one entry per dimension)")
    if n is not None and len(xs) != n:
        raise CompileError(f"{what} has {len(xs)} entries, the block has {n} dimensions")
    return tuple(_scalar(ctx, x, f"{what}[{i}]") for i, x in enumerate(xs))


def _base(base) -> Tile:
    if not isinstance(base, Tile) or not base.type.is_ptr or not base.is_scalar:
        raise CompileError("the base of a block pointer or tensor descriptor must be a scalar "
                           "pointer (a pointer argument, possibly plus a scalar offset)")
    return base


def _same(a, b) -> bool:
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)


@dataclass(eq=False, repr=False)  # fields hold tiles: compare by identity
class _Window:
    """An array (``base``, ``shape``, ``strides`` in elements: Python ints or int32 scalar
    tiles) read and written in ``block_shape`` blocks."""

    ctx: Lowering
    base: Tile
    shape: tuple
    strides: tuple
    block_shape: tuple[int, ...]

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    def __repr__(self) -> str:
        return f"{self.kind}<{self.base.type.pointee}, {list(self.block_shape)}>"


@dataclass(eq=False, repr=False)
class BlockPointer(_Window):
    """What ``tl.make_block_ptr`` returns: a window of ``block_shape`` elements into an
    array, its first element at ``offsets``; ``tl.advance`` moves it, ``tl.load``/
    ``tl.store`` access it."""

    _simtgpu_carry = True  # the front end carries it through loops (carry_parts/with_parts)
    kind = "block_ptr"

    offsets: tuple
    order: tuple[int, ...]

    def advance(self, offsets, _ctx: Lowering | None = None) -> BlockPointer:
        """``ptr.advance(offsets)``: ``tl.advance(ptr, offsets)``, as Triton's member."""
        return advance(self.ctx, self, offsets)

    advance._simtgpu_builtin = True  # type: ignore[attr-defined]

    # --- loops carry the offsets -------------------------------------------------------------
    def carry_parts(self) -> list[Tile]:
        """The run-time state a loop carries: the offsets, as int32 scalars."""
        return [o if isinstance(o, Tile) else self.ctx.to_tile(o) for o in self.offsets]

    def with_parts(self, parts: list[Tile]) -> BlockPointer:
        return BlockPointer(self.ctx, self.base, self.shape, self.strides, self.block_shape,
                            tuple(parts), self.order)

    def check_carried(self, other, name: str, where: str = "the loop") -> None:
        """``other`` (the value at the end of a loop body, or in the other branch of an
        ``if``) must be this pointer, possibly moved."""
        if not isinstance(other, BlockPointer):
            raise CompileError(f"'{name}' is a block pointer before {where} and "
                               f"{type(other).__name__} after it")
        if other.block_shape != self.block_shape or not (
                other.base is self.base and all(map(_same, other.shape, self.shape))
                and all(map(_same, other.strides, self.strides))):
            raise CompileError(f"block pointer '{name}' gets another base, shape, strides or "
                               f"block shape in {where}; only tl.advance may change it there "
                               "(make a new one after it)")

    # --- access ------------------------------------------------------------------------------
    def _coord(self, d: int) -> Tile:
        """``offset_d + i_d`` over the block."""
        ctx = self.ctx
        idx = Tile(ctx, self.block_shape, I32, fn=lambda c: c.idx()[d])
        off = self.offsets[d]
        return idx if _same(off, 0) else ctx.binary("+", idx, off)

    def address_and_mask(self, boundary_check) -> tuple[Tile, Tile | None]:
        """The tile of element pointers and the mask of ``boundary_check``'s dimensions."""
        ctx = self.ctx
        dims = _boundary_dims(boundary_check, len(self.block_shape))
        flat = None
        mask = None
        for d in range(len(self.block_shape)):
            coord = self._coord(d)
            stride = self.strides[d]
            term = coord if _same(stride, 1) else ctx.binary("*", coord, stride)
            flat = term if flat is None else ctx.binary("+", flat, term)
            if d in dims:
                size = ctx.to_tile(self.shape[d])
                # 0 <= coord < size as one unsigned compare (a size is never negative)
                ok = ctx.mapn([coord, size], I1, lambda a, b: ctx.b.op(
                    "icmp", [a, b], {"cond": "ltu"}).result)
                mask = ok if mask is None else ctx.binary("&", mask, ok)
        return ctx.binary("+", ctx.broadcast_to(self.base, self.block_shape), flat), mask



def _boundary_dims(boundary_check, rank: int) -> set[int]:
    if boundary_check is None:
        return set()
    if isinstance(boundary_check, int) or hasattr(boundary_check, "value"):
        boundary_check = (boundary_check,)
    if not isinstance(boundary_check, tuple | list):
        raise CompileError("boundary_check must be a tuple of dimensions, e.g. (0, 1)")
    dims = set()
    for d in boundary_check:
        d = _int(d, "a boundary_check dimension")
        if not 0 <= d < rank:
            raise CompileError(f"boundary_check dimension {d} is out of range for a "
                               f"{rank}-D block")
        dims.add(d)
    return dims


def _order(order, rank: int) -> tuple[int, ...]:
    if order is None:
        return tuple(reversed(range(rank)))
    if not isinstance(order, tuple | list):
        raise CompileError("order must be a tuple of dimensions, e.g. (1, 0)")
    out = tuple(_int(o, "an order entry") for o in order)
    if sorted(out) != list(range(rank)):
        raise CompileError(f"order {list(out)} is not a permutation of the block's "
                           f"{rank} dimensions")
    return out


def make_block_ptr(ctx: Lowering, base, shape, strides, offsets, block_shape, order=None
                   ) -> BlockPointer:
    """A pointer to a ``block_shape`` block of the array ``base[shape]`` with ``strides``
    (elements), whose first element is at ``offsets``. ``order`` (the dimensions from
    fastest- to slowest-varying in memory, as in Triton) is a layout hint: it is checked
    to be a permutation and does not change what is read."""
    b = _base(base)
    bs = _shape(block_shape)
    if not bs:
        raise CompileError("a block pointer needs at least one dimension")
    n = len(bs)
    return BlockPointer(ctx, b, _scalars(ctx, shape, n, "shape"),
                        _scalars(ctx, strides, n, "strides"), bs,
                        _scalars(ctx, offsets, n, "offsets"), _order(order, n))


def advance(ctx: Lowering, base, offsets) -> BlockPointer:
    """The block pointer ``base`` moved by ``offsets`` elements along each dimension."""
    if not isinstance(base, BlockPointer):
        raise CompileError("tl.advance takes a block pointer (from tl.make_block_ptr)")
    delta = _scalars(ctx, offsets, len(base.block_shape), "tl.advance offsets")
    new = []
    for o, d in zip(base.offsets, delta, strict=True):
        if isinstance(o, int) and isinstance(d, int):
            new.append(o + d)
        elif _same(d, 0):
            new.append(o)
        else:
            new.append(ctx.binary("+", ctx.to_tile(o), d))
    return base.with_parts(new)


def block_access(ctx: Lowering, bp: BlockPointer, kind: str, mask, other, boundary_check,
                 padding_option) -> tuple[Tile, Tile | None, object]:
    """``tl.load``/``tl.store`` of a block pointer as (pointers, mask, other) for the
    pointer-tensor path."""
    if mask is not None or other is not None:
        raise CompileError(f"tl.{kind} of a block pointer takes boundary_check (and "
                           "padding_option), not mask or other")
    ptr, m = bp.address_and_mask(boundary_check)
    pad = getattr(padding_option, "value", padding_option) or ""
    if pad not in PADDING_OPTIONS:
        raise CompileError(f"padding_option must be 'zero' or 'nan', not {pad!r}")
    if kind == "store":
        if pad:
            raise CompileError("tl.store takes no padding_option")
        return ptr, m, None
    elem = bp.base.type.pointee
    if pad == "nan" and elem != F32:
        raise CompileError(f"padding_option='nan' needs a float block, this one is {elem}")
    if m is None:
        return ptr, None, None
    return ptr, m, float("nan") if pad == "nan" else (0.0 if elem == F32 else 0)


def check_plain_access(kind: str, boundary_check, padding_option) -> None:
    """``boundary_check``/``padding_option`` belong to block pointers only (as in Triton)."""
    if boundary_check not in ((), None, []) or padding_option not in ("", None):
        raise CompileError(f"tl.{kind}: boundary_check and padding_option are for block "
                           "pointers (tl.make_block_ptr); a tensor of pointers takes a mask")


# --- tensor descriptors ---------------------------------------------------------------------
@dataclass(eq=False, repr=False)
class tensor_descriptor(_Window):  # noqa: N801 - Triton's name for the type
    """What ``tl.make_tensor_descriptor`` returns: ``desc.load(offsets)`` reads a
    ``block_shape`` block at ``offsets`` (elements outside the array read as 0) and
    ``desc.store(offsets, value)`` writes one (elements outside are not written)."""

    kind = "tensor_descriptor"

    def _block(self, offsets) -> BlockPointer:
        n = len(self.block_shape)
        return BlockPointer(self.ctx, self.base, self.shape, self.strides, self.block_shape,
                            _scalars(self.ctx, offsets, n, "descriptor offsets"),
                            tuple(reversed(range(n))))

    def load(self, offsets, _ctx: Lowering | None = None) -> Tile:
        return load_tensor_descriptor.__wrapped__(self.ctx, self, offsets)

    def store(self, offsets, value, _ctx: Lowering | None = None) -> None:
        store_tensor_descriptor.__wrapped__(self.ctx, self, offsets, value)

    load._simtgpu_builtin = True  # type: ignore[attr-defined]
    store._simtgpu_builtin = True  # type: ignore[attr-defined]


def make_tensor_descriptor(ctx: Lowering, base, shape, strides, block_shape
                           ) -> tensor_descriptor:
    """A descriptor of the array ``base[shape]`` (``strides`` in elements, the last one
    the literal 1 as Triton requires) read and written in ``block_shape`` blocks."""
    b = _base(base)
    bs = _shape(block_shape)
    n = len(bs)
    if not 1 <= n <= 5:
        raise CompileError(f"a tensor descriptor has 1 to 5 dimensions, not {n}")
    st = _scalars(ctx, strides, n, "strides")
    if not _same(st[-1], 1):
        raise CompileError("the last stride of a tensor descriptor must be the literal 1 "
                           "(contiguous rows), as in Triton")
    nbytes = bs[-1] * 4
    if nbytes < 16:
        raise CompileError(f"a descriptor block must span at least 16 bytes in its last "
                           f"dimension, got {bs[-1]} * 4 = {nbytes} bytes (as in Triton)")
    return tensor_descriptor(ctx, b, _scalars(ctx, shape, n, "shape"), st, bs)


def _desc(desc) -> tensor_descriptor:
    if not isinstance(desc, tensor_descriptor):
        raise CompileError("expected a tensor descriptor (from tl.make_tensor_descriptor)")
    return desc


MEMORY_OPS: dict[str, Callable] = {}
"""``tl.load`` and ``tl.store`` (unwrapped), registered by language.py: it imports this
module, so this module cannot import it."""


@builtin
def load_tensor_descriptor(ctx: Lowering, desc, offsets) -> Tile:
    """``desc.load(offsets)``: the block at ``offsets``, zeros outside the array."""
    d = _desc(desc)
    n = len(d.block_shape)
    return MEMORY_OPS["load"](ctx, d._block(offsets), boundary_check=tuple(range(n)),
                              padding_option="zero")


@builtin
def store_tensor_descriptor(ctx: Lowering, desc, offsets, value) -> None:
    """``desc.store(offsets, value)``: write the block at ``offsets`` (inside the array)."""
    d = _desc(desc)
    n = len(d.block_shape)
    v = value
    if isinstance(v, Tile) and v.shape != d.block_shape:
        raise CompileError(f"storing a value of shape {list(v.shape)} through a descriptor "
                           f"of block shape {list(d.block_shape)}")
    MEMORY_OPS["store"](ctx, d._block(offsets), v, boundary_check=tuple(range(n)))


__all__ = ["BlockPointer", "advance", "block_access", "check_plain_access",
           "load_tensor_descriptor", "make_block_ptr", "make_tensor_descriptor",
           "store_tensor_descriptor", "tensor_descriptor"]
