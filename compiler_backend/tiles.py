"""Tile programs lowered onto threads.

A tile value (shape ``(N,)`` or ``(M, N)``, power-of-two sizes) belongs to one *program*, and a
program runs on one block of ``T`` threads. With ``v = Lowering.vec(shape)`` contiguous
elements per thread (the blocked layout; ``v = 1`` is the cyclic one), element ``i`` of the
row-major flattened tile lives in thread ``(i // v) % T``, slot ``(i // (v * T)) * v + i % v``;
each thread owns ``max(1, numel // T)`` slots.
Tiles smaller than the block are replicated: thread ``t`` holds element ``t % numel``
(stores and atomics from replicas are masked off where duplicates would change the result).
Scalars (shape ``()``) are one value per thread.

Tiles are *lazy* until something needs their elements in registers: elementwise arithmetic,
index math from ``arange`` and broadcasting build a recipe that is evaluated per slot
(``Tile.at``) where it is consumed; loads, reductions, ``dot`` and control-flow boundaries
materialise them. Broadcasting a materialised tile to a different layout goes through
shared memory (barrier, store, barrier, load).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

from . import halfs, ir, narrow
from .dtypes import dtype_of_type, to_ir_type
from .errors import CompileError
from .ir import F32, I1, I32, I64, U32, U64, Type, Value

INT32_MAX = 2**31 - 1


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _log2(n: int) -> int:
    return n.bit_length() - 1


def int_text(x: int) -> str:
    """``x`` for a message: its digits, or its size where Python would refuse to print them
    (more than 4300 digits)."""
    return str(x) if x.bit_length() <= 128 else f"of {x.bit_length()} bits"


class Coords:
    """Where a tile element is evaluated: a shape and the canonical slot of this thread."""

    def __init__(self, ctx: Lowering, shape: tuple[int, ...], slot: int):
        self.ctx = ctx
        self.shape = shape
        self.slot = slot
        self._idx: list[Value] | None = None

    @property
    def key(self):
        return (self.shape, self.slot, id(self.ctx.b.block))

    def flat(self) -> Value:
        return self.ctx.flat_index(self.shape, self.slot)

    def idx(self) -> list[Value]:
        if self._idx is None:
            self._idx = self.ctx.coords(self.shape, self.slot)
        return self._idx


MAX_ELEMENTS_PER_THREAD = 4096
"""The most elements of one tile a thread's share may hold. Registers do not bound it
(values that do not fit spill, to local memory where the shared spill area is too small),
nor does instruction memory for an elementwise kernel (it runs as a chunk loop,
:mod:`.chunking`); but every share is first lowered unrolled, one value per element, and
beyond this the lowering alone takes tens of seconds (a vector add of 4,096 elements per
thread compiles to a chunk loop in about 6 s). Refused when the tile is made, at its line,
rather than after minutes of lowering."""


MAX_LAZY_DEPTH = 64
"""Links of lazy element functions evaluated within one another before a tile is made
concrete (Python's recursion limit is about 1,000 frames, three per link)."""

FLOAT_MOD: list[Callable[[Lowering, Value, Value], Value]] = []
"""C's fmod on float32 values, for ``%`` of floats: registered by libmath.py, which builds
on this module (its float32 sequences need the Lowering), so that this module imports
nothing of it."""


class Tile:
    """A tile (or scalar) value of one program: shape, element type, and its elements."""

    def __init__(self, ctx: Lowering, shape: tuple[int, ...], type: Type,
                 slots: list[Value] | None = None,
                 fn: Callable[[Coords], Value] | None = None, deps: tuple = ()):
        self.ctx = ctx
        self.shape = tuple(shape)
        per_thread = -(-math.prod(self.shape) // ctx.T)
        if per_thread > MAX_ELEMENTS_PER_THREAD:
            raise CompileError(
                f"a tile of shape {self.shape} is {per_thread} elements per thread on "
                f"{ctx.T} threads; at most {MAX_ELEMENTS_PER_THREAD} are lowered per thread "
                "(use a smaller block size or more warps)")
        self.type = type
        self.slots = slots
        self.fn = fn
        assert (slots is None) != (fn is None)
        # does evaluating this tile read registers of a materialised tile? Then it can only
        # be evaluated at canonical coordinates of its own shape (else: relayout first)
        self.has_mat = (slots is not None and self.shape != ()) or any(
            d.has_mat for d in deps)
        # evaluating a lazy tile recurses through its dependencies: a long chain (an
        # unrolled tl.static_range) is materialised every MAX_LAZY_DEPTH links instead
        self.depth = 0 if fn is None else 1 + max((d.depth for d in deps), default=0)
        if self.depth > MAX_LAZY_DEPTH:
            self.slots, self.fn, self.depth = self.materialize().slots, None, 0
            self.has_mat = self.shape != ()

    # --- facts -------------------------------------------------------------------------
    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def dtype(self):
        return dtype_of_type(self.type)

    def __repr__(self) -> str:
        return f"tensor({list(self.shape)}, {self.type})"

    def __bool__(self) -> bool:
        raise CompileError("a tensor has no compile-time truth value; use it in 'if' directly "
                           "or make the value a tl.constexpr")

    def __iter__(self):
        raise CompileError("a tensor cannot be iterated in Python")

    # --- element access ------------------------------------------------------------------
    @property
    def scalar(self) -> Value:
        assert self.is_scalar and self.slots is not None
        return self.slots[0]

    def at(self, c: Coords) -> Value:
        """The IR value of this tile's element at ``c`` (``c.shape == self.shape``)."""
        if self.slots is not None:
            if self.is_scalar:
                return self.slots[0]
            if c.shape != self.shape or c.slot < 0:
                raise AssertionError("a materialised tile evaluated outside its layout")
            return self.slots[c.slot]
        memo = self.ctx.memo
        key = (id(self), c.key)
        hit = memo.get(key)
        if hit is not None:
            return hit[1]
        v = self.fn(c)
        memo[key] = (self, v)
        return v

    def materialize(self) -> Tile:
        if self.slots is not None:
            return self
        ctx = self.ctx
        slots = [self.at(Coords(ctx, self.shape, s)) for s in range(ctx.nslots(self.shape))]
        return Tile(ctx, self.shape, self.type, slots=slots)

    # --- Python operators (the DSL's arithmetic) --------------------------------------------
    def __add__(self, o):
        return self.ctx.binary("+", self, o)

    def __radd__(self, o):
        return self.ctx.binary("+", o, self)

    def __sub__(self, o):
        return self.ctx.binary("-", self, o)

    def __rsub__(self, o):
        return self.ctx.binary("-", o, self)

    def __mul__(self, o):
        return self.ctx.binary("*", self, o)

    def __rmul__(self, o):
        return self.ctx.binary("*", o, self)

    def __truediv__(self, o):
        return self.ctx.binary("/", self, o)

    def __rtruediv__(self, o):
        return self.ctx.binary("/", o, self)

    def __floordiv__(self, o):
        return self.ctx.binary("//", self, o)

    def __rfloordiv__(self, o):
        return self.ctx.binary("//", o, self)

    def __mod__(self, o):
        return self.ctx.binary("%", self, o)

    def __rmod__(self, o):
        return self.ctx.binary("%", o, self)

    def __and__(self, o):
        return self.ctx.binary("&", self, o)

    def __rand__(self, o):
        return self.ctx.binary("&", o, self)

    def __or__(self, o):
        return self.ctx.binary("|", self, o)

    def __ror__(self, o):
        return self.ctx.binary("|", o, self)

    def __xor__(self, o):
        return self.ctx.binary("^", self, o)

    def __rxor__(self, o):
        return self.ctx.binary("^", o, self)

    def __lshift__(self, o):
        return self.ctx.binary("<<", self, o)

    def __rlshift__(self, o):
        return self.ctx.binary("<<", o, self)

    def __rshift__(self, o):
        return self.ctx.binary(">>", self, o)

    def __rrshift__(self, o):
        return self.ctx.binary(">>", o, self)

    def __lt__(self, o):
        return self.ctx.binary("<", self, o)

    def __le__(self, o):
        return self.ctx.binary("<=", self, o)

    def __gt__(self, o):
        return self.ctx.binary(">", self, o)

    def __ge__(self, o):
        return self.ctx.binary(">=", self, o)

    def __eq__(self, o):  # type: ignore[override]
        return self.ctx.binary("==", self, o)

    def __ne__(self, o):  # type: ignore[override]
        return self.ctx.binary("!=", self, o)

    __hash__ = object.__hash__

    def __neg__(self):
        return self.ctx.unary("-", self)

    def __invert__(self):
        return self.ctx.unary("~", self)

    def __pos__(self):
        return self

    def __getitem__(self, key):
        return self.ctx.subscript(self, key)

    def to(self, dtype, fp_downcast_rounding=None, bitcast: bool = False) -> Tile:
        t = to_ir_type(dtype)
        if bitcast:
            halfs.check_bitcast(self.type, t)
            if t.is_half or self.type.is_half:
                return halfs.bitcast(self.ctx, self, t)
            if (t.narrow or self.type.narrow) and narrow.bits(t) != narrow.bits(self.type):
                raise CompileError(f"bitcast from {self.type} to {t} changes the width "
                                   "(int8 <-> uint8 and int16 <-> uint16 bitcasts are "
                                   "supported)")
        if bitcast and (t == I64) != (self.type == I64):
            raise CompileError(f"bitcast from {self.type} to {t} changes the width (int64 <-> "
                               "uint64 bitcasts are supported)")
        if bitcast and (t == F32) != (self.type == F32):
            if I1 in (t, self.type) or t.is_ptr or self.type.is_ptr:
                raise CompileError(f"bitcast from {self.type} to {t}: only float32, int32 "
                                   "and uint32 share a width")
            to = "f32" if t == F32 else "i32"
            return self.ctx.mapn([self], t, lambda v: self.ctx.b.op("bitcast", [v],
                                                                    {"to": to}).result)
        return self.ctx.cast(self, t)


class Lowering:
    """Builds IR for one kernel: the thread layout, shared-memory scratch and tile semantics."""

    def __init__(self, fn: ir.Function, threads: int, warp_size: int, vec: int = 1):
        self.fn = fn
        self.V = vec  # contiguous elements per thread at most (1: the cyclic layout)
        self.b = ir.Builder(fn.body)
        self.T = threads
        self.W = warp_size
        self.memo: dict = {}
        self.shared_top = 0  # bytes of user shared arrays
        self.scratch_bytes = 0  # bytes of compiler scratch (after the user arrays)
        self.scratch_users: list[ir.Op] = []
        self.thread_level = False  # CUDA-style kernel: scalars are per thread
        self.loop_depth = 0  # run-time loops around the code being lowered
        self.scratch_dirty = False  # scratch may still be read by other warps

    # --- small IR helpers -------------------------------------------------------------------
    def const(self, value, type: Type = I32) -> Value:
        # a number (NumPy's bool_ is not registered as one); tl.full(shape, None, ...) is not
        if not isinstance(value, numbers.Real) and value.__class__.__name__ != "bool_":
            raise CompileError(f"expected a number, got {value.__class__.__name__}")
        if type.is_half:  # a number, as the half pattern
            value = halfs.half_bits(value, type)
        if type.narrow:  # its low bits, as the narrow type holds them
            value = narrow.wrap(int(value), type)
        return self.b.const(value, type)

    def sreg(self, name: str) -> Value:
        return self.b.op("sreg", [], {"name": name}).result

    def tid(self) -> Value:
        return self.sreg("tid")

    def scalar(self, v: Value) -> Tile:
        return Tile(self, (), v.type, slots=[v])

    # --- layout ---------------------------------------------------------------------------
    def nslots(self, shape: tuple[int, ...]) -> int:
        n = 1
        for s in shape:
            n *= s
        slots = max(1, n // self.T)
        if slots > self.fn.meta.get("slots", 1):  # elements per thread (chunking.py reads it)
            self.fn.meta["slots"] = slots
        return slots

    def vec(self, shape: tuple[int, ...]) -> int:
        """Contiguous elements per thread (Triton's ``sizePerThread``) of a tile of ``shape``:
        ``min(V, elements per thread, last dimension)``, 1 for scalars and small tiles."""
        if self.V == 1 or self.thread_level or not shape:
            return 1
        return max(1, min(self.V, math.prod(shape) // self.T, shape[-1]))

    def flat_index(self, shape: tuple[int, ...], slot: int) -> Value:
        """Row-major flat index of this thread's element in ``slot``: with ``v = vec(shape)``
        slot ``s`` is element ``(s // v) * T * v + tid * v + s % v``."""
        n = math.prod(shape)
        tid = self.tid()
        if n < self.T:
            return self.b("and", tid, self.const(n - 1))
        v = self.vec(shape)
        base = tid if v == 1 else self.b("shl", tid, self.const(_log2(v)))
        off = slot // v * self.T * v + slot % v
        return base if off == 0 else self.b("add", base, self.const(off))

    def _tid_shr(self, lv: int, sh: int) -> Value:
        """``(tid << lv) >> sh`` as one shift (or none)."""
        tid = self.tid()
        if sh == lv:
            return tid
        if sh > lv:
            return self.b("shr", tid, self.const(sh - lv))
        return self.b("shl", tid, self.const(lv - sh))

    def coords(self, shape: tuple[int, ...], slot: int) -> list[Value]:
        """Per-dimension indices of this thread's element in ``slot`` (shifts and masks).

        With ``v`` contiguous elements per thread the element of slot ``s`` is the one of
        slot ``s - s % v`` moved ``s % v`` along the last dimension (``v`` divides it), so
        the ``v`` addresses of a group differ by constants a code generator can see."""
        n = math.prod(shape)
        v = self.vec(shape)
        lv = _log2(v)
        j = slot % v
        span = self.T * v
        out: list[Value] = []
        inner = n
        tid = self.tid()
        for d, size in enumerate(shape):
            inner //= size
            sh = _log2(inner)
            if n < self.T:
                f = self.b("and", tid, self.const(n - 1))
                x = self.b("shr", f, self.const(sh)) if sh else f
                out.append(x if d == 0 else self.b("and", x, self.const(size - 1)))
                continue
            off = slot // v * span
            # the last dimension gets ``+ j``: folded into the one constant where no mask
            # follows, so the offsets of a group differ only in it
            jj = j if d == len(shape) - 1 else 0
            if off % inner == 0:
                base = self._tid_shr(lv, sh)
                c = off >> sh
                if d == 0:
                    c += jj
                    out.append(self.b("add", base, self.const(c)) if c else base)
                    continue
                if c % size == 0:
                    c = 0
                if (span >> sh) > size or c:
                    x = self.b("add", base, self.const(c)) if c else base
                    x = self.b("and", x, self.const(size - 1))
                else:
                    x = base
                out.append(self.b("add", x, self.const(jj)) if jj else x)
            else:
                f = self.flat_index(shape, slot - j)
                x = self.b("shr", f, self.const(sh)) if sh else f
                x = x if d == 0 else self.b("and", x, self.const(size - 1))
                out.append(self.b("add", x, self.const(jj)) if jj else x)
        return out

    def replica_mask(self, shape: tuple[int, ...]) -> Value | None:
        """For tiles smaller than the block: true in the one thread that owns each element."""
        n = 1
        for s in shape:
            n *= s
        if n >= self.T:
            return None
        return self.b.op("icmp", [self.tid(), self.const(n)], {"cond": "lt"}).result

    # --- conversion of Python values -------------------------------------------------------
    def to_tile(self, x, like: Tile | None = None) -> Tile:
        if isinstance(x, Tile):
            return x
        if isinstance(x, bool):
            return self.scalar(self.const(x, I1))
        if isinstance(x, int | float) and like is not None and like.type.is_half:
            return self.scalar(self.const(x, like.type))  # a Python number takes the format
        if isinstance(x, int) and like is not None and like.type.narrow:
            # a Python integer does not take part in the promotion (Triton's scalar rule)
            return self._typed_scalar(self.const(x, like.type), like.type)
        if isinstance(x, int):
            if like is not None and like.type == F32:
                return self.scalar(self.const(float(x), F32))
            if like is not None and like.type == I64 or not -(1 << 31) <= x < (1 << 32):
                # as Triton: a literal beyond 32 bits is an int64 (a uint64 above 2**63 - 1)
                if not -(1 << 63) <= x < (1 << 64):
                    raise CompileError(f"integer constant {int_text(x)} does not fit in 64 bits")
                return self._typed_scalar(self.const(x, I64), U64 if x >= 1 << 63 else I64)
            return self.scalar(self.const(x, I32))
        if isinstance(x, float):
            return self.scalar(self.const(x, F32))
        raise CompileError(f"cannot use a value of Python type {type(x).__name__} in a kernel "
                           "expression")

    # --- broadcasting -------------------------------------------------------------------------
    @staticmethod
    def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        n = max(len(a), len(b))
        a2 = (1,) * (n - len(a)) + a
        b2 = (1,) * (n - len(b)) + b
        out = []
        for x, y in zip(a2, b2, strict=True):
            if x != y and 1 not in (x, y):
                raise CompileError(f"shapes {list(a)} and {list(b)} do not broadcast")
            out.append(max(x, y))
        return tuple(out)

    def broadcast_to(self, t: Tile, shape: tuple[int, ...]) -> Tile:
        if t.shape == shape or t.is_scalar:
            if t.is_scalar and shape != ():
                v = t.scalar
                return Tile(self, shape, t.type, fn=lambda c: v)
            return t
        if len(t.shape) > len(shape):
            raise CompileError(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
        src = t.shape
        padded = (1,) * (len(shape) - len(src)) + src
        for x, y in zip(padded, shape, strict=True):
            if x != y and x != 1:
                raise CompileError(f"cannot broadcast shape {list(src)} to {list(shape)}")
        lead = len(shape) - len(src)
        return self.remap(t, shape, lambda idx: idx[lead:], padded)

    def remap(self, t: Tile, shape: tuple[int, ...], pick, padded=None) -> Tile:
        """A tile of ``shape`` whose element at index ``idx`` is ``t[pick(idx)]``."""
        if t.has_mat:
            # registers of a materialised tile in another layout: exchange through a shared
            # region of its own, read lazily where the elements are used
            return self.remap(self.relayout(t.materialize()), shape, pick)
        src_shape = t.shape
        ctx = self

        def fn(c: Coords) -> Value:
            idx = pick(c.idx())
            idx = [ctx.const(0) if s == 1 else v for v, s in zip(idx, src_shape, strict=True)]
            sub = _GivenCoords(ctx, src_shape, idx)
            if t.slots is not None:
                return t.slots[0]
            return t.fn(sub)

        return Tile(self, shape, t.type, fn=fn)

    # --- shared memory ------------------------------------------------------------------------
    def alloc_shared(self, nbytes: int) -> int:
        """User shared arrays: a fixed place at the front of the block's shared memory."""
        off = self.shared_top
        self.shared_top += (nbytes + 3) // 4 * 4
        return off

    def scratch(self, nbytes: int) -> Value:
        """Compiler scratch (reductions, relayouts, dot): one area reused after a barrier."""
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        op = self.b.op("smem", [], {"offset": 0, "scratch": True}, [ir.ptr("f32", "shared")])
        self.scratch_users.append(op)
        return op.result

    def finish_shared(self) -> None:
        for op in self.scratch_users:
            op.attrs["offset"] = self.shared_top
            del op.attrs["scratch"]
        self.fn.shared_bytes = self.shared_top + self.scratch_bytes
        if self.shared_top:  # (the pipeliner must not move user arrays: pipeline.py)
            self.fn.meta["user_shared_bytes"] = self.shared_top

    def shared_ptr(self, base: Value, elem_type: Type) -> Value:
        if elem_type.kind == "i64":  # int64 and uint64
            # (relayouts, reductions and scans move int64 values as two words)
            raise CompileError("int64 tensors cannot be exchanged between threads in "
                               "sorts and dot: convert them with .to(tl.int32) first")
        want = ir.ptr("f32" if elem_type == F32 else "i32", "shared")
        if base.type == want:
            return base
        op = self.b.op("smem", [], dict(base.owner.attrs), [want])
        if op.attrs.get("scratch"):
            self.scratch_users.append(op)
        return op.result

    def barrier(self) -> None:
        self.b.op("barrier", [])

    def scratch_barrier(self) -> None:
        """Before writing the scratch area: wait until every warp has read its last use."""
        if self.scratch_dirty:
            self.barrier()
        self.scratch_dirty = False

    def store_tile_shared(self, t: Tile, base: Value) -> None:
        """Write a materialised tile into shared memory at its flat element order."""
        if t.type == I1:
            raise CompileError("cannot relayout an i1 tensor; convert it with .to(tl.int32)")
        base = self.shared_ptr(base, t.type)
        t = t.materialize()
        for s, v in enumerate(t.slots):
            f = self.flat_index(t.shape, s)
            self.b.op("store", [self.b("gep", base, f), v])

    def via_shared(self, t: Tile, barrier_first: bool = True) -> Tile:
        """Make a materialised tile readable at any index: returns a lazy tile reading shared.

        The reads happen when the result is materialised, which callers do at once.
        """
        if t.type.is_half:
            return halfs.via_f32(self, t, lambda f: self.via_shared(f, barrier_first))
        if barrier_first:
            self.scratch_barrier()
        base = self.scratch(t.numel * 4)
        self.store_tile_shared(t, base)
        self.barrier()
        self.scratch_dirty = True
        sbase = self.shared_ptr(base, t.type)
        shape = t.shape
        ctx = self

        def fn(c: Coords) -> Value:
            flat = ctx.linearize(c.idx(), shape)
            return ctx.b.op("load", [ctx.b("gep", sbase, flat)]).result

        lazy = Tile(self, shape, t.type, fn=fn)
        return lazy

    def _relayout_wide(self, t: Tile) -> Tile:
        """``relayout`` of an int64 tile: its low and high 32-bit words move as two int32
        tiles and are joined where they are read (int64 indices loaded from an int64 array
        and broadcast, ``idx[:, None] * dim + cols[None, :]``)."""
        b = self.b
        lo = self.relayout(self.map1(t, I32, lambda v: b("trunc", v)).materialize())
        hi = self.relayout(self.map1(t, I32, lambda v: b(
            "trunc", b("shr", v, self.const(32, I64)))).materialize())
        return self.mapn([lo, hi], t.type, lambda low, high: b(
            "add", b("shl", b("zext", high), self.const(32, I64)), b("zext", low)))

    def _relayout_pointers(self, t: Tile) -> Tile:
        """A tensor of pointers in another layout (``(base + rows[:, None]) + cols[None, :]``
        broadcasts a materialised column of pointers): pointers are not exchanged, their
        offsets from the pointer parameter they share are (an address is 64-bit in PTX; a
        parameter is the same in every thread, so each thread can add it again)."""
        params = {p.value for p in self.fn.params}
        root, offsets = None, []
        for v in t.slots:
            off = None
            while isinstance(v.owner, ir.Op) and v.owner.name == "gep":
                p, i = v.owner.operands
                if i.type != I32:
                    break
                off = i if off is None else self.b("add", off, i)
                v = p
            if v not in params or (root is not None and v is not root):
                raise CompileError("cannot exchange a tensor of pointers between threads "
                                   "unless all are int32 offsets from one pointer parameter: "
                                   "broadcast the integer offsets and add them to the "
                                   "pointer after")
            root = v
            offsets.append(off if off is not None else self.const(0))
        moved = self.relayout(Tile(self, t.shape, I32, slots=offsets))
        return self.mapn([moved], t.type, lambda o: self.b("gep", root, o))

    def relayout(self, t: Tile) -> Tile:
        """Store a materialised tile in a shared region reserved for this exchange and return
        a lazy tile that reads any element of it.

        The region is written again only when this same code runs again (a loop), after a
        barrier, and values read from it never leave the loop iteration (carried values are
        materialised), so the reads may happen anywhere after the second barrier. Loads of
        one address are shared between the slots that need it.
        """
        if t.type == I1:
            t = self.cast(t, I32).materialize()
            return self.cast(self.relayout(t), I1)
        if t.type.is_half:
            return halfs.via_f32(self, t, self.relayout)
        if t.type.is_ptr:
            return self._relayout_pointers(t)
        if t.type.kind == "i64":  # int64 and uint64
            return self._relayout_wide(t)
        if self.loop_depth:
            self.barrier()  # the previous iteration's readers are done
        base = self.b.op("smem", [], {"offset": self.alloc_shared(t.numel * 4)},
                         [ir.ptr("f32" if t.type == F32 else "i32", "shared")]).result
        self.store_tile_shared(t, base)
        self.barrier()
        shape = t.shape
        ctx = self
        loads: dict = {}

        def fn(c: Coords) -> Value:
            flat = ctx.linearize(c.idx(), shape)
            key = (flat.id, id(ctx.b.block))
            if key not in loads:
                loads[key] = ctx.b.op("load", [ctx.b("gep", base, flat)]).result
            return loads[key]

        return Tile(self, shape, t.type, fn=fn)

    def linearize(self, idx: list[Value], shape: tuple[int, ...]) -> Value:
        flat = None
        stride = 1
        for v, size in reversed(list(zip(idx, shape, strict=True))):
            term = v if stride == 1 else self.b("shl", v, self.const(_log2(stride)))
            flat = term if flat is None else self.b("add", flat, term)
            stride *= size
        return flat if flat is not None else self.const(0)

    # --- arithmetic ----------------------------------------------------------------------------
    def to_type(self, v: Value, t: Type, src: Type | None = None) -> Value:
        """``v`` converted to ``t``; ``src`` is the language type ``v`` holds (its tile's
        type), which decides signed or unsigned conversion (IR values are signless)."""
        if t.narrow and not t.is_ptr:
            return narrow.convert(self, v, t, src)
        if v.type == t:
            return v
        if (v.type.is_half and t == I64) or (v.type == I64 and t.is_half):
            return self.to_type(self.to_type(v, F32, src), t, F32)  # through float32
        if v.type.is_half or t.is_half:
            return halfs.convert(self, v, t, src)
        src_unsigned = (src if src is not None else v.type).unsigned
        b = self.b
        if v.type == I1:
            it = I64 if t == I64 else I32
            one = self.const(1.0, F32) if t == F32 else self.const(1, it)
            zero = self.const(0.0, F32) if t == F32 else self.const(0, it)
            return b("select", v, one, zero)
        if t == I1:
            if v.type == F32:  # NaN is true, as bool(nan) in Python
                return self.fne(v, self.const(0.0, F32))
            return b.op("icmp", [v, self.const(0, v.type)], {"cond": "ne"}).result
        if v.type.is_int and t == F32:
            return b("u2f" if src_unsigned else "i2f", v)
        if v.type == F32 and t.is_int:
            attrs = {"bits": 64} if t == I64 else {}
            return b.op("f2u" if t.unsigned else "f2i", [v], attrs).result
        if v.type == I32 and t == I64:
            return b("zext" if src_unsigned else "sext", v)
        if v.type == I64 and t == I32:
            return b("trunc", v)
        raise CompileError(f"cannot convert {v.type} to {t}")

    def cast(self, t: Tile, to: Type) -> Tile:
        if t.type == to and t.type.narrow == to.narrow:
            if t.type.unsigned == to.unsigned:
                return t
            if not to.narrow:
                return self.map1(t, to, lambda v: v)  # int32 <-> uint32: the same bits
        if t.type.is_ptr or to.is_ptr:
            return self.pointer_cast(t, to)
        src = t.type
        return self.map1(t, to, lambda v: self.to_type(v, to, src))

    def pointer_cast(self, t: Tile, to: Type) -> Tile:
        """Integer <-> pointer casts (``x.to(tl.pointer_type(tl.float16))`` of an address
        table) and pointer -> pointer casts of global pointers. An address is 64-bit on the
        GPU through PTX; on this ISA it is the low 32 bits (the device's address space)."""
        src = t.type
        if src.is_ptr and src.space != "global" or to.is_ptr and to.space != "global":
            raise CompileError("only global pointers convert to and from integers")
        if to.is_ptr:
            if not (src.is_ptr or src.is_int):
                raise CompileError(f"cannot convert {src} to a pointer (an int64 or int32 "
                                   "address converts)")
            elem = str(to)[4:].split(",")[0]
            return self.map1(t, to, lambda v: self.b.op(
                "inttoptr", [self.b("ptrtoint", v) if src.is_ptr else v], {"elem": elem}).result)
        if not to.is_int:
            raise CompileError(f"cannot convert a pointer to {to} (to an integer: tl.int64)")
        return self.map1(t, to, lambda v: self.to_type(self.b("ptrtoint", v), to, I64))

    def _typed_scalar(self, v: Value, rtype: Type) -> Tile:
        # the tile's type carries the unsigned note, which the IR value may lack
        return Tile(self, (), rtype if rtype == v.type else v.type, slots=[v])

    def map1(self, t: Tile, rtype: Type, f: Callable[[Value], Value]) -> Tile:
        if t.is_scalar:
            return self._typed_scalar(f(t.scalar), rtype)
        return Tile(self, t.shape, rtype, fn=lambda c: f(t.at(c)), deps=(t,))

    def mapn(self, tiles: list[Tile], rtype: Type, f: Callable[..., Value]) -> Tile:
        shape: tuple[int, ...] = ()
        for t in tiles:
            shape = self.broadcast_shape(shape, t.shape)
        if shape == ():
            return self._typed_scalar(f(*[t.scalar for t in tiles]), rtype)
        bt = [self.broadcast_to(t, shape) for t in tiles]
        return Tile(self, shape, rtype, fn=lambda c: f(*[t.at(c) for t in bt]),
                    deps=tuple(bt))

    def common_type(self, a: Tile, b: Tile) -> Type:
        """The type both operands convert to: float32 over integers, and (as in C and
        Triton) uint32 over int32 and bool; the half formats as :mod:`.halfs` says."""
        if a.type.is_half or b.type.is_half:
            return halfs.common_type(a.type, b.type)
        if F32 in (a.type, b.type):
            return F32
        if a.type.narrow or b.type.narrow:
            return narrow.promote(a.type, b.type)
        if I64 in (a.type, b.type):
            # Triton's integer promotion: the wider type; at a mixed signedness the unsigned
            # type when it is at least as wide as the signed one
            wide = [x for x in (a.type, b.type) if x == I64]
            return U64 if any(x.unsigned for x in wide) else I64
        if I32 in (a.type, b.type):
            return U32 if a.type.unsigned or b.type.unsigned else I32
        return I1

    _INT_OPS = {"+": "add", "-": "sub", "*": "mul", "&": "and", "|": "or", "^": "xor",
                "<<": "shl", ">>": "sra"}
    _FLOAT_OPS = {"+": "fadd", "-": "fsub", "*": "fmul"}
    _CMP = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}

    def fne(self, x: Value, y: Value) -> Value:
        """Float ``x != y``, true when either is NaN (the ISA's and PTX's ``ne`` compares
        are ordered: false on NaN); PTX's ``setp.neu`` is this."""
        return self.b("not", self.b.op("fcmp", [x, y], {"cond": "eq"}).result)

    def binary(self, op: str, a, b) -> Tile:
        if not isinstance(a, Tile) and not isinstance(b, Tile):
            raise CompileError(f"operator {op} needs a tensor operand")
        if op in self._CMP and any(isinstance(x, Tile) and x.type.narrow for x in (a, b)):
            # a comparison is not an op whose result has the operands' type: a Python
            # integer takes part in the promotion (Triton's scalar rule skips boolean ops),
            # so ``x_int8 < 200`` compares in int32
            a, b = (self.to_tile(x) if isinstance(x, int) else x for x in (a, b))
        a = self.to_tile(a, like=b if isinstance(b, Tile) else None)
        b = self.to_tile(b, like=a)
        if a.type.is_ptr or b.type.is_ptr:
            return self.pointer_arith(op, a, b)
        sa, sb = a.type, b.type
        if sa.is_half or sb.is_half:
            return halfs.binary(self, op, a, b)
        if op in self._CMP:
            t = self.common_type(a, b)
            if t == I1:
                t = I32
            cond = self._CMP[op]
            if t.unsigned and cond not in ("eq", "ne"):
                cond += "u"
            name = "fcmp" if t == F32 else "icmp"
            if name == "fcmp" and cond == "ne":  # unordered, as Triton's and NumPy's !=
                return self.mapn([a, b], I1, lambda x, y: self.fne(
                    self.to_type(x, t, sa), self.to_type(y, t, sb)))
            return self.mapn([a, b], I1, lambda x, y: self.b.op(
                name, [self.to_type(x, t, sa), self.to_type(y, t, sb)], {"cond": cond}).result)
        if op == "/":
            return self.mapn([a, b], F32, lambda x, y: self.fdiv(
                self.to_type(x, F32, sa), self.to_type(y, F32, sb)))
        t = self.common_type(a, b)
        if op in ("&", "|", "^") and t == I1:
            name = {"&": "and", "|": "or", "^": "xor"}[op]
            return self.mapn([a, b], I1, lambda x, y: self.b(name, x, y))
        if op in ("+", "-", "*") and t == I1:
            # Triton: int1 with int1 (or a Python bool) stays int1 and wraps mod 2, as any
            # integer type does (True + True is False): + and - are xor, * is and
            name = "and" if op == "*" else "xor"
            return self.mapn([a, b], I1, lambda x, y: self.b(name, x, y))
        if t == I1:
            t = I32
        if t == F32:
            if op in self._FLOAT_OPS:
                name = self._FLOAT_OPS[op]
                return self.mapn([a, b], F32, lambda x, y: self.b(
                    name, self.to_type(x, F32, sa), self.to_type(y, F32, sb)))
            if op == "%":
                # Triton's float % is LLVM's frem: C's fmod, the sign of the dividend
                fmod = FLOAT_MOD[0]
                return self.mapn([a, b], F32, lambda x, y: fmod(
                    self, self.to_type(x, F32, sa), self.to_type(y, F32, sb)))
            raise CompileError(f"operator {op} is not defined on float32")
        if op in ("//", "%"):
            if t == I64:
                return self.mapn([a, b], t, lambda x, y: self.ldiv(
                    op, self.to_type(x, I64, sa), self.to_type(y, I64, sb), t.unsigned))
            div = self.udiv if t.unsigned else self.idiv
            return self.wrap_narrow(self.mapn([a, b], t, lambda x, y: div(
                op, self.to_type(x, I32, sa), self.to_type(y, I32, sb))), op == "//")
        name = self._INT_OPS[op]
        if name == "sra" and sa.unsigned:
            # logical for an unsigned left operand: Triton picks the shift by the shifted
            # value's own type, so int32 >> uint32 stays arithmetic (typed uint32)
            name = "shr"
        it = I64 if t == I64 else I32
        return self.wrap_narrow(self.mapn([a, b], t, lambda x, y: self.b(
            name, self.to_type(x, it, sa), self.to_type(y, it, sb))), name in narrow.WRAPPING)

    def wrap_narrow(self, r: Tile, wraps: bool = True) -> Tile:
        """``r`` re-normalised to its narrow type where the op computing it may have left
        the type's range (``narrow.WRAPPING``); other tiles unchanged."""
        t = r.type
        if not (wraps and t.narrow):
            return r
        return self.map1(r, t, lambda v: narrow.normalize(self, v, t))

    def pointer_arith(self, op: str, a: Tile, b: Tile) -> Tile:
        if op == "+" and b.type.is_ptr:
            a, b = b, a
        if op not in ("+", "-") or b.type.is_ptr:
            raise CompileError(f"operator {op} is not defined on pointers "
                               "(only pointer + integer and pointer - integer)")
        if b.type not in (I32, I64, I1):
            raise CompileError("a pointer offset must be an integer, not " + str(b.type))
        neg = op == "-"
        it = I64 if b.type == I64 else I32
        st = b.type

        def f(p: Value, i: Value) -> Value:
            i = self.to_type(i, it, st)
            if neg:
                i = self.b("sub", self.const(0, it), i)
            return self.b("gep", p, i)

        return self.mapn([a, b], a.type, f)

    def fdiv(self, x: Value, y: Value) -> Value:
        c = ir.const_value(y)
        if c is not None:
            m, e = math.frexp(c) if c else (0, 0)
            if c and abs(m) == 0.5 and -120 < e < 120:
                return self.b("fmul", x, self.const(1.0 / c, F32))
        return self.b("fmul", x, self.b("rcp", y))

    def is_nonneg(self, v: Value) -> bool:
        """A conservative proof that ``v`` (i32) is never negative."""
        return self.nonneg_bound(v) is not None

    def nonneg_bound(self, v: Value, depth: int = 0) -> int | None:
        """An inclusive upper bound of ``v`` (i32) when it is provably in [0, INT32_MAX].

        Bounds, not signs, are propagated so that ``add`` and ``mul`` of non-negative values
        are proved non-negative only when they cannot wrap past 2**31 - 1.
        """
        op = v.owner
        if depth > 12 or not isinstance(op, ir.Op):
            return None
        n = op.name
        bounds = [self.nonneg_bound(o, depth + 1) for o in op.operands] if n != "const" else []
        known = [b for b in bounds if b is not None]
        if n == "const":
            bound = op.attrs["value"] if op.attrs["value"] >= 0 else None
        elif n == "sreg":
            # every special register but the clock is a 16-bit count or index (MAX_GRID_DIM)
            bound = None if op.attrs["name"].startswith("clock") else 0xFFFF
        elif n in ("add", "mul", "min", "max", "or", "xor", "select"):
            if n == "select":
                bounds, known = bounds[1:], [b for b in bounds[1:] if b is not None]
            if len(known) != len(bounds):
                return None
            if n == "add":
                bound = sum(known)
            elif n == "mul":
                bound = math.prod(known)
            elif n == "min":
                bound = min(known)
            elif n in ("or", "xor"):
                bound = (1 << max(known).bit_length()) - 1
            else:
                bound = max(known)
        elif n in ("shr", "sra"):
            k = ir.const_value(op.operands[1])
            if bounds[0] is not None:
                bound = bounds[0] >> k if k is not None and 0 <= k <= 31 else bounds[0]
            elif n == "shr" and k is not None and 1 <= k <= 31:
                bound = 0xFFFFFFFF >> k
            else:
                return None
        elif n == "and":
            bound = min(known) if known else None
        else:
            return None
        return bound if bound is not None and bound <= INT32_MAX else None

    def idiv(self, op: str, x: Value, y: Value) -> Value:
        d = ir.const_value(y)
        nonneg = self.is_nonneg(x)
        if d is None or d <= 0 or not (_is_pow2(d) or nonneg):
            # no cheaper exact sequence for this constant: the general one is exact for all
            return self.idiv_runtime(op, x, y)
        b = self.b
        if _is_pow2(d):
            k = _log2(d)
            if op == "%" and nonneg:
                return b("and", x, self.const(d - 1))
            if k == 0:
                return x if op == "//" else self.const(0)
            if nonneg:
                q = b("shr", x, self.const(k))
            else:
                bias = b("shr", b("sra", x, self.const(31)), self.const(32 - k))
                q = b("sra", b("add", x, bias), self.const(k))
        else:
            # x < 2**31: q = mulhu(x, ceil(2**(31+l) / d)) >> (l - 1) is exact
            ell = (d - 1).bit_length()
            m = -(-(1 << (31 + ell)) // d)
            q = b("mulhu", x, self.const(m))
            q = b("shr", q, self.const(ell - 1)) if ell > 1 else q
        if op == "//":
            return q
        return b("sub", x, b("mul", q, self.const(d)))

    def ldiv(self, op: str, x: Value, y: Value, unsigned: bool) -> Value:
        """int64 ``//`` and ``%`` (truncation toward zero; by zero as the 32-bit ops: ``x //
        0`` is -1 for ``x >= 0`` and 1 for ``x < 0``, all ones unsigned, ``x % 0`` is ``x``):
        by a constant power of two shifts; otherwise restoring division of the magnitudes,
        one quotient bit per trip of a 64-trip loop, the same sequence on both targets (one
        loop serves ``a // b`` and ``a % b`` of the same operands in the same block)."""
        b = self.b

        def c(v: int) -> Value:
            return self.const(v, I64)

        d = ir.const_value(y)
        if d is not None and d > 0 and _is_pow2(d):
            k = _log2(d)
            if unsigned:
                return b("shr", x, c(k)) if op == "//" else b("and", x, c(d - 1))
            if k == 0:
                return x if op == "//" else c(0)
            bias = b("shr", b("sra", x, c(63)), c(64 - k))
            q = b("sra", b("add", x, bias), c(k))
            return q if op == "//" else b("sub", x, b("shl", q, c(k)))
        key = ("ldiv", id(b.block), x.id, y.id, unsigned)  # a // b and a % b: one loop
        if key in self.memo:
            return self.memo[key][op == "%"]
        ux, uy = x, y
        if not unsigned:
            nx = b.op("icmp", [x, c(0)], {"cond": "lt"}).result
            ny = b.op("icmp", [y, c(0)], {"cond": "lt"}).result
            ux = b("select", nx, b("sub", c(0), x), x)
            uy = b("select", ny, b("sub", c(0), y), y)
        body = ir.Block([I32, I64, I64, I64])  # trip, dividend bits left, quotient, remainder
        _, xs, q, r = body.args
        outer, b.block = b.block, body
        r2 = b("or", b("shl", r, c(1)), b("shr", xs, c(63)))
        ge = b.op("icmp", [r2, uy], {"cond": "geu"}).result
        q2 = b("or", b("shl", q, c(1)), b("select", ge, c(1), c(0)))
        body.append(ir.Op("yield", [b("shl", xs, c(1)), q2,
                                    b("select", ge, b("sub", r2, uy), r2)], []))
        b.block = outer
        loop = b.op("for", [self.const(0), self.const(64), self.const(1), ux, c(0), c(0)],
                    types=[I64, I64, I64], regions=[body])
        _, q, r = loop.results
        if not unsigned:
            q = b("select", b("xor", nx, ny), b("sub", c(0), q), q)
            r = b("select", nx, b("sub", c(0), r), r)
        self.memo[key] = (q, r)
        return q if op == "//" else r

    def udiv_runtime(self, x: Value, y: Value) -> Value:
        """floor(x / y) for 0 <= x < 2**31, 0 < y: a float estimate, a second estimate on
        the remainder (now small enough to be exact in float), then a final +-1 fix."""
        b = self.b
        ry = b("rcp", b("i2f", y))
        q = b("f2i", b("fmul", b("i2f", x), ry))
        r = b("sub", x, b("mul", q, y))
        q = b("add", q, b("f2i", b("fmul", b("i2f", r), ry)))
        r = b("sub", x, b("mul", q, y))
        neg = b.op("icmp", [r, self.const(0)], {"cond": "lt"}).result
        q = b("select", neg, b("sub", q, self.const(1)), q)
        r = b("select", neg, b("add", r, y), r)
        big = b.op("icmp", [r, y], {"cond": "ge"}).result
        return b("select", big, b("add", q, self.const(1)), q)

    def idiv_runtime(self, op: str, x: Value, y: Value) -> Value:
        """Integer // and % by a run-time divisor, truncating (as C and Triton do), exact for
        every pair of 32-bit operands: ``INT_MIN // -1`` wraps to ``INT_MIN``, and a zero
        divisor gives what NVIDIA GPUs give (``x // 0`` is -1 for x >= 0 and 1 for x < 0,
        ``x % 0`` is x). This GPU has no divide instruction: :meth:`udiv_runtime` divides the
        magnitudes, which must stay below 2**31."""
        b = self.b
        zero, one = self.const(0), self.const(1)

        def cmp(cond: str, u: Value, v: Value) -> Value:
            return b.op("icmp", [u, v], {"cond": cond}).result

        if self.is_nonneg(x) and self.is_nonneg(y):
            q = self.udiv_runtime(x, y)
        else:
            int_min = self.const(-(1 << 31))
            ay = b("max", y, b("sub", zero, y))  # |y|; INT_MIN stays INT_MIN (handled below)
            # INT_MIN has no positive twin: divide INT_MIN + |y| instead, then take sign(y)
            # off the quotient (trunc((x' - |y|) / y) = trunc(x' / y) - sign(y) for x' <= 0)
            x_min = cmp("eq", x, int_min)
            xs = b("select", x_min, b("add", x, ay), x)
            q = self.udiv_runtime(b("max", xs, b("sub", zero, xs)), ay)
            q = b("select", cmp("lt", b("xor", x, y), zero), b("sub", zero, q), q)
            sign_y = b("select", cmp("lt", y, zero), self.const(-1), one)
            q = b("select", x_min, b("sub", q, sign_y), q)
            # |y| = 2**31 exceeds every other magnitude: the quotient is 0, or 1 for INT_MIN
            q = b("select", cmp("eq", y, int_min), b("select", x_min, one, zero), q)
        q = b("select", cmp("eq", y, zero), b("select", cmp("lt", x, zero), one,
                                               self.const(-1)), q)
        if op == "//":
            return q
        return b("sub", x, b("mul", q, y))

    def udiv(self, op: str, x: Value, y: Value) -> Value:
        """Unsigned ``//`` and ``%`` (uint32), exact for every pair of operands; a zero
        divisor gives what NVIDIA GPUs give (``x // 0`` is 0xffffffff, ``x % 0`` is x).

        By a constant: a shift or mask for powers of two, a compare for divisors of 2**31
        and more, else the multiply-high sequence of Granlund and Montgomery (1994) for all
        32-bit dividends. By a run-time value: :meth:`udiv_runtime` on ``x >> 1`` (below
        2**31), doubled and corrected by one step."""
        b = self.b

        def cmp(cond: str, u: Value, v: Value) -> Value:
            return b.op("icmp", [u, v], {"cond": cond}).result

        d = ir.const_value(y)
        if d is not None and d != 0:
            d &= 0xFFFFFFFF
            if _is_pow2(d):
                k = _log2(d)
                if op == "%":
                    return b("and", x, self.const(d - 1))
                return b("shr", x, self.const(k)) if k else x
            if d >= 1 << 31:
                q = b("select", cmp("geu", x, y), self.const(1), self.const(0))
            else:
                ell = (d - 1).bit_length()  # 2**(ell-1) < d < 2**ell
                m = ((1 << 32) * ((1 << ell) - d)) // d + 1
                t1 = b("mulhu", x, self.const(m))
                q = b("shr", b("add", t1, b("shr", b("sub", x, t1), self.const(1))),
                      self.const(ell - 1))
        else:
            zero, one = self.const(0), self.const(1)
            big = cmp("lt", y, zero)  # y >= 2**31: the quotient is 0 or 1
            ys = b("select", b("or", big, cmp("eq", y, zero)), one, y)
            q = b("shl", self.udiv_runtime(b("shr", x, one), ys), one)
            r = b("sub", x, b("mul", q, ys))
            q = b("select", cmp("geu", r, ys), b("add", q, one), q)
            q = b("select", big, b("select", cmp("geu", x, y), one, zero), q)
            q = b("select", cmp("eq", y, zero), self.const(-1), q)
        if op == "//":
            return q
        return b("sub", x, b("mul", q, y))

    def unary(self, op: str, a: Tile) -> Tile:
        if op == "-":
            if a.type.is_half:
                return halfs.negate(self, a)
            if a.type == F32:
                return self.map1(a, F32, lambda v: self.b("fneg", v))
            if a.type == I1:  # Triton's 0 - x in int1: wraps mod 2 to x itself
                return a
            return self.wrap_narrow(self.map1(a, a.type, lambda v: self.b(
                "sub", self.const(0, v.type.plain), v)))
        if op == "~":
            if a.type == I1:
                return self.map1(a, I1, lambda v: self.b("not", v))
            if a.type.is_int:
                # (a uint8's ~ sets the bits above its width: re-normalised)
                return self.wrap_narrow(self.map1(a, a.type, lambda v: self.b(
                    "xor", v, self.const(-1, v.type.plain))), a.type.unsigned)
            raise CompileError(f"~ is not defined on {a.type}")
        if op == "not":
            return self.map1(self.cast(a, I1), I1, lambda v: self.b("not", v))
        raise CompileError(f"unary {op} is not supported")

    # --- indexing ----------------------------------------------------------------------------
    def subscript(self, t: Tile, key) -> Tile:
        if not isinstance(key, tuple):
            key = (key,)
        # Triton's rule: entry ``d`` being None inserts an axis at position d of the result
        # so far, and ':' changes nothing (so a scalar's ``p[None, None, :]`` is 1x1); for
        # NumPy-style keys this is NumPy's result
        kept: list[int | None] = list(range(len(t.shape)))  # per output dim: source or None
        for d, k in enumerate(key):
            if k is None:
                if d > len(kept):
                    raise CompileError("too many indices for the tensor")
                kept.insert(d, None)
            elif not (isinstance(k, slice) and k == slice(None)):
                raise CompileError("tensors support only [:, None]-style indexing "
                                   "(':' and None)")
        shape = tuple(1 if s is None else t.shape[s] for s in kept)
        if t.is_scalar:
            return self.broadcast_to(t, shape)
        if t.slots is not None:
            # inserting size-1 axes keeps the flat order: same layout, same registers
            return Tile(self, shape, t.type, slots=t.slots)
        return self.remap(t, shape, lambda idx: [idx[i] for i, s in enumerate(kept)
                                                 if s is not None])


class _GivenCoords(Coords):
    """Coordinates handed down by a remap (not a canonical slot: no memo across them)."""

    def __init__(self, ctx: Lowering, shape: tuple[int, ...], idx: list[Value]):
        super().__init__(ctx, shape, -1)
        self._idx = idx
        self._key = ("given", tuple(v.id for v in idx), id(ctx.b.block))

    @property
    def key(self):
        return self._key

    def flat(self) -> Value:
        return self.ctx.linearize(self._idx, self.shape)


__all__ = ["Coords", "Lowering", "Tile", "I1", "I32", "F32"]
