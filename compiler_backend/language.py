"""The kernel language: names follow ``triton.language`` so Triton kernels port by import.

``import simtgpu.compiler_backend.language as tl``. Every function here is a *builtin*: the
front end calls it while lowering a ``@jit`` kernel and passes the lowering context as
``_ctx``. Calling one from ordinary Python raises an error.

Thread-level intrinsics for CUDA-style kernels (``thread_id``, ``block_id``, ``barrier``,
``shared_array``, shuffles, votes) live here as well; a kernel that uses them runs one
scalar per thread instead of one tile per program.
"""

from __future__ import annotations

import builtins
import math as _pymath
import sys

from . import block_ptr as _block_ptr
from . import dot as dot_mma
from . import dtypes, ir
from .dtypes import (  # noqa: F401 - tl.float32, tl.pointer_type ... are language names
    _DTYPES,
    bf16,
    bfloat16,
    dtype_of_type,
    float16,
    float32,
    fp16,
    fp32,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    to_ir_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .errors import CompileError
from .ir import F32, I1, I32, I64, Type, Value
from .lang_base import (  # noqa: F401 - constexpr and the helpers are language names too
    LN2,
    LOG2E,
    _builtin_named,
    _each,
    _int,
    _mask_tile,
    _minmax,
    _ptr_tile,
    _shape,
    builtin,
    constexpr,
)
from .reductions import reduce_axis_shuffle
from .tiles import Coords, Lowering, Tile, _GivenCoords

tensor = Tile
dtype = dtypes.dtype  # an assignment: builtins below take a parameter of the same name




# --- program and thread ids --------------------------------------------------------------
_AXES = "xyz"


def _axis(axis) -> str:
    a = _int(axis, "axis")
    if a not in (0, 1, 2):
        raise CompileError(f"axis must be 0, 1 or 2, not {a}")
    return _AXES[a]


def _sreg_builtin(name: str, sreg: str, doc: str):
    """A builtin that reads special register ``sreg``; one with ``{axis}`` in its name
    takes an axis argument (0, 1, 2 for x, y, z)."""
    if "{axis}" in sreg:
        def read(ctx: Lowering, axis) -> Tile:
            return ctx.scalar(ctx.sreg(sreg.format(axis=_axis(axis))))
    else:
        def read(ctx: Lowering) -> Tile:
            return ctx.scalar(ctx.sreg(sreg))
    return _builtin_named(name, doc, read)


program_id = _sreg_builtin("program_id", "ctaid.{axis}",
                           "Index of this program (block) in the launch grid along ``axis``.")
num_programs = _sreg_builtin("num_programs", "nctaid.{axis}",
                             "Number of programs in the launch grid along ``axis``.")
thread_id = _sreg_builtin("thread_id", "tid.{axis}",
                          "This thread's index in its block (CUDA threadIdx).")
block_id = _sreg_builtin("block_id", "ctaid.{axis}", "This block's index (CUDA blockIdx).")
block_dim = _sreg_builtin("block_dim", "ntid.{axis}", "Threads per block (CUDA blockDim).")
grid_dim = _sreg_builtin("grid_dim", "nctaid.{axis}", "Blocks in the grid (CUDA gridDim).")
lane_id = _sreg_builtin("lane_id", "laneid", "This thread's lane in its warp.")
warp_id = _sreg_builtin("warp_id", "warpid", "This thread's warp in its block.")
linear_thread_id = _sreg_builtin("linear_thread_id", "tid",
                                 "This thread's index in its block, x fastest.")


@builtin
def warp_size(ctx: Lowering) -> int:
    """Lanes per warp of the compile target (a compile-time constant)."""
    return ctx.W


@builtin
def barrier(ctx: Lowering) -> None:
    """Block-wide barrier (CUDA __syncthreads); must not be reached by divergent code."""
    ctx.barrier()


debug_barrier = barrier


# --- tile construction ------------------------------------------------------------------------
@builtin
def arange(ctx: Lowering, start, end) -> Tile:
    """``[start, end)`` as a 1-D tile; the length must be a power of two."""
    s, e = _int(start, "arange start"), _int(end, "arange end")
    n = e - s
    _shape((n,))

    def fn(c: Coords) -> Value:
        i = c.idx()[0]
        return ctx.b("add", i, ctx.const(s)) if s else i

    return Tile(ctx, (n,), I32, fn=fn)


@builtin
def full(ctx: Lowering, shape, value, dtype) -> Tile:
    t = to_ir_type(dtype)
    shp = _shape(shape)
    if isinstance(value, Tile):
        if not value.is_scalar:
            raise CompileError("tl.full needs a scalar value")
        return ctx.broadcast_to(ctx.cast(value, t), shp)
    v = ctx.const(value, t)
    return Tile(ctx, shp, t, fn=lambda c: v) if shp else ctx.scalar(v)


@builtin
def zeros(ctx: Lowering, shape, dtype) -> Tile:
    return full.__wrapped__(ctx, shape, 0, dtype)


@builtin
def zeros_like(ctx: Lowering, x: Tile) -> Tile:
    return full.__wrapped__(ctx, x.shape, 0, dtype_of_type(x.type))


@builtin
def broadcast_to(ctx: Lowering, x, *shape) -> Tile:
    """``x`` broadcast to ``shape``, given as one tuple or as separate sizes (Triton's
    ``broadcast_to(x, M, N)``)."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    return ctx.broadcast_to(ctx.to_tile(x), _shape(tuple(shape)))


@builtin
def expand_dims(ctx: Lowering, x: Tile, axis) -> Tile:
    """A size-1 axis inserted at ``axis`` (a negative axis counts from the end of the
    result; a tuple inserts several)."""
    x = ctx.to_tile(x)
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    n = len(x.shape) + len(axes)
    key: list = [slice(None)] * len(x.shape)
    for a in sorted(_int(a, "axis") % n for a in axes):
        key.insert(a, None)
    return ctx.subscript(x, tuple(key))


@builtin
def multiple_of(ctx: Lowering, x, values):
    return x


@builtin
def max_contiguous(ctx: Lowering, x, values):
    return x


# --- memory -------------------------------------------------------------------------------------
@builtin
def load(ctx: Lowering, pointer, mask=None, other=None, cache_modifier="",
         eviction_policy="", volatile=False, boundary_check=(), padding_option="") -> Tile:
    """Masked load: lanes where ``mask`` is false get ``other`` (0 if not given); a block
    pointer is read with ``boundary_check`` and ``padding_option`` (block_ptr.py)."""
    if isinstance(pointer, _block_ptr.BlockPointer):
        pointer, mask, other = _block_ptr.block_access(ctx, pointer, "load", mask, other,
                                                       boundary_check, padding_option)
    else:
        _block_ptr.check_plain_access("load", boundary_check, padding_option)
    p = _ptr_tile(pointer)
    elem = p.type.pointee
    boolean = p.type.elem == "i1"  # bytes of 0 or 1: loaded as uint8, read as byte != 0
    m = _mask_tile(ctx, mask, p.shape)
    tiles = [p]
    if m is not None:
        tiles.append(m)
        if other is not None:  # without 'other', masked-off elements are undefined
            o = ctx.to_tile(other, like=Tile(ctx, (), I1 if boolean else elem,
                                             slots=[ctx.const(0, I1 if boolean else elem)]))
            tiles.append(ctx.cast(ctx.cast(o, I1) if boolean else o, elem))
    elif other is not None:
        raise CompileError("tl.load: 'other' needs a 'mask'")

    def f(*vs: Value) -> Value:
        return ctx.b.op("load", list(vs)).result

    r = ctx.mapn(tiles, elem, f).materialize()
    return ctx.cast(r, I1) if boolean else r


@builtin
def store(ctx: Lowering, pointer, value, mask=None, cache_modifier="", eviction_policy="",
          boundary_check=()) -> None:
    """Masked store: only lanes where ``mask`` is true write; a block pointer is written
    with ``boundary_check`` (block_ptr.py)."""
    if isinstance(pointer, _block_ptr.BlockPointer):
        pointer, mask, _ = _block_ptr.block_access(ctx, pointer, "store", mask, None,
                                                   boundary_check, "")
    else:
        _block_ptr.check_plain_access("store", boundary_check, "")
    p = _ptr_tile(pointer)
    elem = p.type.pointee
    v = ctx.to_tile(value, like=Tile(ctx, (), elem, slots=[ctx.const(0, elem)]))
    if p.type.elem == "i1":  # a bool pointer: the value as int1, stored as a 0 or 1 byte
        v = ctx.cast(v, I1)
    v = ctx.cast(v, elem)
    if ctx.broadcast_shape(p.shape, v.shape) != p.shape:
        raise CompileError(f"cannot store a value of shape {list(v.shape)} through pointers "
                           f"of shape {list(p.shape)}")
    m = _mask_tile(ctx, mask, p.shape)
    tiles = [p, v] + ([m] if m is not None else [])
    # a tile smaller than the block (or a scalar) is held by several threads: the first
    # ``owners`` threads hold one copy each, and a code generator may mask off the rest
    n = _pymath.prod(p.shape)
    attrs = {"owners": n} if not ctx.thread_level and n < ctx.T else {}
    _each(ctx, tiles, lambda vs: ctx.b.op("store", list(vs), dict(attrs)))


from .atomics import (  # noqa: E402, F401 - language names (own module)
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
)


# --- elementwise -------------------------------------------------------------------------------
@builtin
def where(ctx: Lowering, condition, x, y) -> Tile:
    c = ctx.cast(ctx.to_tile(condition), I1)
    xt = ctx.to_tile(x, like=y if isinstance(y, Tile) else None)
    yt = ctx.to_tile(y, like=xt)
    t = ctx.common_type(xt, yt)
    if xt.type.is_ptr or yt.type.is_ptr:
        if xt.type != yt.type:
            raise CompileError("tl.where on pointers needs two pointers of the same type")
        t = xt.type
    return ctx.mapn([c, xt, yt], t, lambda cv, a, b: ctx.b(
        "select", cv, ctx.to_type(a, t, xt.type), ctx.to_type(b, t, yt.type)))


def _float_unary(ctx: Lowering, x, f) -> Tile:
    t = ctx.cast(ctx.to_tile(x, like=Tile(ctx, (), F32, slots=[ctx.const(0.0, F32)])), F32)
    return ctx.map1(t, F32, f)




@builtin
def exp(ctx: Lowering, x) -> Tile:
    """e**x as exp2(x * log2(e)) on the special-function unit."""
    return _float_unary(ctx, x, lambda v: ctx.b("exp2", ctx.b("fmul", v, ctx.const(LOG2E, F32))))


@builtin
def log(ctx: Lowering, x) -> Tile:
    return _float_unary(ctx, x, lambda v: ctx.b("fmul", ctx.b("log2", v), ctx.const(LN2, F32)))


def _sfu_builtin(name: str):
    """``tl.<name>``: the special-function unit's op of the same name, elementwise."""
    def sfu(ctx: Lowering, x) -> Tile:
        return _float_unary(ctx, x, lambda v: ctx.b(name, v))

    return _builtin_named(name, f"{name}(x) on the special-function unit (float32).", sfu)


exp2 = _sfu_builtin("exp2")
log2 = _sfu_builtin("log2")
sqrt = _sfu_builtin("sqrt")
rsqrt = _sfu_builtin("rsqrt")
sin = _sfu_builtin("sin")
cos = _sfu_builtin("cos")


@builtin
def sigmoid(ctx: Lowering, x) -> Tile:
    """1 / (1 + exp(-x))."""
    def f(v: Value) -> Value:
        e = ctx.b("exp2", ctx.b("fmul", v, ctx.const(-LOG2E, F32)))
        return ctx.b("rcp", ctx.b("fadd", e, ctx.const(1.0, F32)))

    return _float_unary(ctx, x, f)


@builtin
def abs(ctx: Lowering, x) -> Tile:  # noqa: A001 - the Triton name
    t = ctx.to_tile(x)
    if t.type.is_half:
        return ctx.cast(ctx.map1(ctx.cast(t, F32), F32, lambda v: ctx.b("fabs", v)), t.type)
    if t.type == F32:
        return ctx.map1(t, F32, lambda v: ctx.b("fabs", v))
    if t.type.unsigned:
        return t
    if t.type.narrow:  # in the type (abs(-128) of an int8 wraps to -128, as Triton's)
        return ctx.wrap_narrow(ctx.map1(t, t.type, lambda v: ctx.b(
            "max", v, ctx.b("sub", ctx.const(0), v))))
    it = ir.I64 if t.type == ir.I64 else I32
    t = ctx.cast(t, it)
    return ctx.map1(t, it, lambda v: ctx.b("max", v, ctx.b("sub", ctx.const(0, it), v)))


@builtin
def maximum(ctx: Lowering, x, y, propagate_nan=None) -> Tile:
    """The larger of x and y; a NaN loses (IEEE maxNum) unless ``propagate_nan`` is
    ``tl.PropagateNan.ALL``, where a NaN in either operand is the result (Triton's
    ``maximumf``)."""
    return _nan_wins(ctx, _minmax(ctx, "max", x, y), x, y, propagate_nan)


@builtin
def minimum(ctx: Lowering, x, y, propagate_nan=None) -> Tile:
    """The smaller of x and y, NaNs as in :func:`maximum`."""
    return _nan_wins(ctx, _minmax(ctx, "min", x, y), x, y, propagate_nan)


def _nan_wins(ctx: Lowering, r: Tile, x, y, propagate_nan) -> Tile:
    """``r`` with NaN where x or y is NaN, when ``propagate_nan`` asks for it."""
    if propagate_nan != PropagateNan.ALL or not (r.type == F32 or r.type.is_half):
        return r
    xs = ctx.cast(ctx.to_tile(x, like=r), F32)
    ys = ctx.cast(ctx.to_tile(y, like=r), F32)

    def pick(a: Value, b: Value, v: Value) -> Value:
        ordered = ctx.b("and", ctx.b.op("fcmp", [a, a], {"cond": "eq"}).result,
                        ctx.b.op("fcmp", [b, b], {"cond": "eq"}).result)
        return ctx.b("select", ordered, v, ctx.b("fadd", a, b))  # a + b is NaN here

    return ctx.cast(ctx.mapn([xs, ys, ctx.cast(r, F32)], F32, pick), r.type)


@builtin
def fma(ctx: Lowering, x, y, z) -> Tile:
    ts = [ctx.cast(ctx.to_tile(v, like=Tile(ctx, (), F32, slots=[ctx.const(0.0, F32)])), F32)
          for v in (x, y, z)]
    return ctx.mapn(ts, F32, lambda a, b, c: ctx.b("ffma", a, b, c))


@builtin
def cdiv(ctx: Lowering, x, div) -> Tile | int:
    if isinstance(x, int) and isinstance(div, int):
        return -(-x // div)
    return ctx.binary("//", ctx.binary("+", x, ctx.binary("-", div, 1)
                                       if isinstance(div, Tile) else div - 1), div)


# --- reductions ----------------------------------------------------------------------------------
_IDENTITY = {("sum", F32): 0.0, ("sum", I32): 0, ("max", F32): -_pymath.inf,
             ("max", I32): -(1 << 31), ("min", F32): _pymath.inf, ("min", I32): (1 << 31) - 1}


def _combine(ctx: Lowering, kind: str, t: Type, a: Value, b: Value) -> Value:
    name = {"sum": "add", "max": "max", "min": "min"}[kind]
    if t == F32:
        name = "f" + name
    elif t.unsigned and kind != "sum":
        name += "u"
    return ctx.b(name, a, b)


def _reduce(ctx: Lowering, x, axis, kind: str, with_index: bool = False):
    t = ctx.to_tile(x)
    if t.type == I1:
        t = ctx.cast(t, I32)
    if t.type.narrow and kind == "sum":  # Triton sums 8- and 16-bit integers in 32 bits
        t = ctx.cast(t, ir.U32 if t.type.unsigned else I32)
    if t.type.is_half:  # on the exact float32 values (Triton sums halves in float32 too)
        t = ctx.cast(t, F32)
    if t.type.is_ptr:
        raise CompileError("cannot reduce pointers")
    if axis is not None:
        # checked first: tl.max(m, x) (meant as tl.maximum) passes a tensor as the axis
        _int(axis, "axis")
    if t.is_scalar:
        return t
    if axis is not None:
        a = _int(axis, "axis")
        if a < 0:
            a += len(t.shape)
        if not 0 <= a < len(t.shape):
            raise CompileError(f"axis {axis} is out of range for shape {list(t.shape)}")
        if len(t.shape) > 1:
            return _reduce_axis(ctx, t, a, kind, with_index)
    return _reduce_all(ctx, t, kind, with_index)


def _argcombine(ctx: Lowering, kind: str, t: Type, av: Value, ai: Value, bv: Value,
                bi: Value) -> tuple[Value, Value]:
    """Pick (value, index): the larger (smaller) value, the lower index on a tie."""
    cmp = "fcmp" if t == F32 else "icmp"
    u = "u" if t.unsigned else ""
    better = ctx.b.op(cmp, [bv, av], {"cond": ("gt" if kind == "max" else "lt") + u}).result
    tie = ctx.b.op(cmp, [bv, av], {"cond": "eq"}).result
    lower = ctx.b.op("icmp", [bi, ai], {"cond": "lt"}).result
    take = ctx.b("or", better, ctx.b("and", tie, lower))
    return ctx.b("select", take, bv, av), ctx.b("select", take, bi, ai)


def _put_slot(ctx: Lowering, words: Value, w: Value, v: Value, vw: int) -> None:
    """Store warp ``w``'s partial result ``v`` in its slot of ``vw`` 32-bit words."""
    if vw == 1:
        ctx.b.op("store", [ctx.b("gep", words, w), v])
        return
    at = ctx.b("shl", w, ctx.const(1))
    hi = ctx.b("trunc", ctx.b("shr", v, ctx.const(32, I64)))
    ctx.b.op("store", [ctx.b("gep", words, at), ctx.b("trunc", v)])
    ctx.b.op("store", [ctx.b("gep", words, ctx.b("add", at, ctx.const(1))), hi])


def _get_slot(ctx: Lowering, words: Value, w: int, vw: int) -> Value:
    """Warp ``w``'s partial result from its slot (an int64 joined from its two words)."""
    if vw == 1:
        return ctx.b.op("load", [ctx.b("gep", words, ctx.const(w))]).result
    lo, hi = (ctx.b.op("load", [ctx.b("gep", words, ctx.const(2 * w + k))]).result
              for k in (0, 1))
    return ctx.b("add", ctx.b("shl", ctx.b("zext", hi), ctx.const(32, I64)),
                 ctx.b("zext", lo))


def _reduce_all(ctx: Lowering, t: Tile, kind: str, with_index: bool):
    """Whole-tile reduction: slots in registers, lanes by xor shuffles, warps via shared."""
    t = t.materialize()
    n = t.numel
    ty = t.type
    vals = t.slots
    acc = vals[0]
    idx = ctx.flat_index(t.shape, 0) if with_index else None
    for s in builtins.range(1, len(vals)):
        if with_index:
            acc, idx = _argcombine(ctx, kind, ty, acc, idx, vals[s], ctx.flat_index(t.shape, s))
        else:
            acc = _combine(ctx, kind, ty, acc, vals[s])
    lanes = builtins.min(n, ctx.W)  # distinct elements within one warp
    off = lanes // 2
    while off >= 1:
        o = ctx.const(off)
        other = ctx.b("shfl", acc, o, mode="xor")
        if with_index:
            oi = ctx.b("shfl", idx, o, mode="xor")
            acc, idx = _argcombine(ctx, kind, ty, acc, idx, other, oi)
        else:
            acc = _combine(ctx, kind, ty, acc, other)
        off //= 2
    warps = builtins.min(n, ctx.T) // ctx.W
    if warps <= 1 and lanes > 1:
        # after a full butterfly every lane holds the result: tell the code generator
        for v in (acc, idx):
            if v is not None and isinstance(v.owner, ir.Op):
                v.owner.attrs["uniform"] = True
    if warps > 1:
        # one slot per warp for its value (two words for an int64), then one for its index
        vw = 2 if ty == I64 else 1
        base = ctx.scratch(warps * 4 * (vw + 1))
        ctx.scratch_barrier()
        wid = ctx.sreg("warpid")
        if ctx.T // ctx.W > warps:
            # a tile smaller than the block: warps past `warps` hold replicas of the first
            # ones' elements and write the same values to the same slots (the index slots
            # follow the value slots, so their own warp ids would run past the scratch)
            wid = ctx.b("and", wid, ctx.const(warps - 1))
        sv = ctx.shared_ptr(base, I32 if vw == 2 else ty)
        _put_slot(ctx, sv, wid, acc, vw)
        if with_index:
            si = ctx.shared_ptr(base, I32)
            ctx.b.op("store", [ctx.b("gep", si, ctx.b("add", wid, ctx.const(warps * vw))),
                               idx])
        ctx.barrier()
        acc = _get_slot(ctx, sv, 0, vw)
        if with_index:
            idx = ctx.b.op("load", [ctx.b("gep", si, ctx.const(warps * vw))]).result
        for w in builtins.range(1, warps):
            v = _get_slot(ctx, sv, w, vw)
            if with_index:
                i = ctx.b.op("load", [ctx.b("gep", si, ctx.const(warps * vw + w))]).result
                acc, idx = _argcombine(ctx, kind, ty, acc, idx, v, i)
            else:
                acc = _combine(ctx, kind, ty, acc, v)
        ctx.scratch_dirty = True
    if with_index:
        return ctx.scalar(idx)
    return Tile(ctx, (), ty, slots=[acc])


def _reduce_axis(ctx: Lowering, t: Tile, axis: int, kind: str, with_index: bool) -> Tile:
    """Reduction along one axis of a 2-D (or larger) tile: by warp shuffles where the layout
    allows (reductions.py, which defines the order), else through shared memory."""
    if t.type.kind == "i64":
        return _reduce_axis_wide(ctx, t, axis, kind, with_index)
    if not with_index:
        r = reduce_axis_shuffle(ctx, t, axis,
                                lambda a, b: _combine(ctx, kind, t.type, a, b))
        if r is not None:
            return r
    ctx.scratch_barrier()
    src = ctx.via_shared(t.materialize(), barrier_first=False)
    out_shape = t.shape[:axis] + t.shape[axis + 1:]
    ty = t.type

    def fn(c: Coords) -> Value:
        idx = list(c.idx())
        acc = ai = None
        for k in builtins.range(t.shape[axis]):
            full_idx = idx[:axis] + [ctx.const(k)] + idx[axis:]
            v = src.fn(_GivenCoords(ctx, t.shape, full_idx))
            if acc is None:
                acc, ai = v, ctx.const(k)
            elif with_index:
                acc, ai = _argcombine(ctx, kind, ty, acc, ai, v, ctx.const(k))
            else:
                acc = _combine(ctx, kind, ty, acc, v)
        return ai if with_index else acc

    out = Tile(ctx, out_shape, I32 if with_index else ty, fn=fn).materialize()
    ctx.scratch_dirty = True
    return out


def _reduce_axis_wide(ctx: Lowering, t: Tile, axis: int, kind: str, with_index: bool
                      ) -> Tile:
    """An axis reduction of an int64 (uint64) tile: the line walk of scans.py, which moves
    each value as its two words, combining in the same first-to-last order."""
    ty = t.type

    def fold(a: list[Value], b: list[Value]) -> list[Value]:
        return [_combine(ctx, kind, ty, a[0], b[0])]

    def pick(a: list[Value], b: list[Value]) -> list[Value]:
        return list(_argcombine(ctx, kind, ty, a[0], a[1], b[0], b[1]))

    if not with_index:
        return _scans.walk_lines(ctx, [t], axis, fold, scan=False, reverse=False)[0]
    index = Tile(ctx, t.shape, I32, fn=lambda c: c.idx()[axis])  # the position along axis
    return _scans.walk_lines(ctx, [t, index], axis, pick, scan=False, reverse=False)[1]


@builtin
def sum(ctx: Lowering, input, axis=None, keep_dims=False, dtype=None) -> Tile:  # noqa: A001
    """The sum along ``axis``; with ``dtype`` the elements are converted to it first (as
    Triton does: ``dtype=tl.float32`` sums int32 values without wrapping)."""
    if dtype is not None:
        ty = dtypes.to_ir_type(dtype)
        input = ctx.cast(ctx.to_tile(input), ty)
        if ty == I1:  # a sum in int1 wraps: the parity of the count
            count = _reduce_keep(ctx, input, axis, keep_dims, "sum")
            return ctx.cast(ctx.binary("&", count, 1), I1)
        if ty.narrow:  # a sum in int8 wraps: the 32-bit sum's low bits
            return ctx.cast(_reduce_keep(ctx, input, axis, keep_dims, "sum"), ty)
    return _reduce_keep(ctx, input, axis, keep_dims, "sum")


# Triton's ``tie_break_left`` flags: True asks for the lowest index among equal values;
# False leaves the choice open, and the lowest index is a valid answer to that too.
@builtin
def max(ctx: Lowering, input, axis=None, return_indices=False,  # noqa: A001
        return_indices_tie_break_left=True, keep_dims=False):
    r = _reduce_keep(ctx, input, axis, keep_dims, "max")
    return (r, _reduce_keep(ctx, input, axis, keep_dims, "max", True)) if return_indices else r


@builtin
def min(ctx: Lowering, input, axis=None, return_indices=False,  # noqa: A001
        return_indices_tie_break_left=True, keep_dims=False):
    r = _reduce_keep(ctx, input, axis, keep_dims, "min")
    return (r, _reduce_keep(ctx, input, axis, keep_dims, "min", True)) if return_indices else r


@builtin
def argmax(ctx: Lowering, input, axis, tie_break_left=True, keep_dims=False) -> Tile:
    return _reduce_keep(ctx, input, axis, keep_dims, "max", True)


@builtin
def argmin(ctx: Lowering, input, axis, tie_break_left=True, keep_dims=False) -> Tile:
    return _reduce_keep(ctx, input, axis, keep_dims, "min", True)


def _reduce_keep(ctx: Lowering, x, axis, keep: bool, kind: str, with_index: bool = False
                 ) -> Tile:
    """A reduction, with the reduced axes kept as size 1 when ``keep`` (``keep_dims``)."""
    r = _reduce(ctx, x, axis, kind, with_index)
    if not keep or not isinstance(x, Tile):
        return r
    if axis is None:
        return ctx.broadcast_to(r, (1,) * len(x.shape))
    key = [slice(None)] * len(r.shape)
    key.insert(_int(axis, "axis"), None)
    return ctx.subscript(r, tuple(key))


# --- dot -------------------------------------------------------------------------------------
@builtin
def dot(ctx: Lowering, input, other, acc=None, input_precision=None, allow_tf32=None,
        max_num_imprecise_acc=None, out_dtype=None) -> Tile:
    """(M, K) @ (K, N): both tiles go to shared memory, each thread computes its (m, n)
    elements with a K-step chain of fused multiply-adds (same order on every target);
    fp16/bf16 operands go to the matrix unit (:mod:`.dot`); int8/uint8 operands multiply
    and add in int32 and give int32, as Triton's integer dot."""
    a, b = ctx.to_tile(input), ctx.to_tile(other)
    if a.type.is_half or b.type.is_half:
        r = dot_mma.dot(ctx, a, b, acc, input_precision, out_dtype)
        if r is not None:
            return r
    et = I32 if a.type.narrow == 8 and b.type.narrow == 8 else F32  # the accumulator's
    if (len(a.shape) == 3 and len(b.shape) == 3 and a.shape[0] == b.shape[0]
            and a.shape[2] == b.shape[1]):
        return _dot_batched(ctx, ctx.cast(a, et), ctx.cast(b, et), acc)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise CompileError(f"tl.dot needs (M, K) and (K, N) tiles, or (B, M, K) and (B, K, N), "
                           f"got {list(a.shape)} and {list(b.shape)}")
    a, b = ctx.cast(a, et), ctx.cast(b, et)
    M, K = a.shape
    N = b.shape[1]
    if acc is not None:
        acc = ctx.cast(ctx.to_tile(acc), et)
        if ctx.broadcast_shape(acc.shape, (M, N)) != (M, N):
            raise CompileError(f"tl.dot accumulator of shape {list(acc.shape)} does not fit "
                               f"({M}, {N})")
        acc = ctx.broadcast_to(acc, (M, N)).materialize()
    base, bbase = _operands_to_shared(ctx, a, b)

    if M * N >= ctx.T:
        out = _dot_outer(ctx, base, bbase, acc, M, N, K)
        ctx.scratch_dirty = True
        return out

    def fn(c: Coords) -> Value:
        m, n = c.idx()
        arow = ctx.b("gep", base, ctx.b("shl", m, ctx.const(K.bit_length() - 1)))
        return _fma_chain(ctx, arow, ctx.b("gep", bbase, n), acc, c, K, N, et)

    out = Tile(ctx, (M, N), et, fn=fn).materialize()
    ctx.scratch_dirty = True
    return out


def _mac(ctx: Lowering, x: Value, y: Value, s: Value) -> Value:
    """``x * y + s``: one fused multiply-add of float32, a multiply and an add of int32."""
    if s.type == F32:
        return ctx.b("ffma", x, y, s)
    return ctx.b("add", ctx.b("mul", x, y), s)


def _operands_to_shared(ctx: Lowering, a: Tile, b: Tile) -> tuple[Value, Value]:
    """Both dot operands (float32 or int32) into the scratch area, row-major, A first: (A's
    base, B's base)."""
    ctx.scratch_barrier()
    base = ctx.shared_ptr(ctx.scratch((a.numel + b.numel) * 4), a.type)
    ctx.store_tile_shared(a.materialize(), base)
    bbase = ctx.b("gep", base, ctx.const(a.numel))
    ctx.store_tile_shared(b.materialize(), bbase)
    ctx.barrier()
    return base, bbase


def _fma_chain(ctx: Lowering, arow: Value, bcol: Value, acc: Tile | None, c: Coords, K: int,
               N: int, et: Type = F32) -> Value:
    """One output element: ``acc + a0*b0``, then ``+ a1*b1`` ... as fused multiply-adds (in
    ``et``: float32, or int32 multiplies and adds), A's row at ``arow`` (contiguous) and B's
    column at ``bcol`` (stride N)."""
    s = acc.at(c) if acc is not None else ctx.const(0, et)
    for k in builtins.range(K):
        av = ctx.b.op("load", [ctx.b("gep", arow, ctx.const(k))]).result
        bv = ctx.b.op("load", [ctx.b("gep", bcol, ctx.const(k * N))]).result
        s = _mac(ctx, av, bv, s)
    return s


def _dot_batched(ctx: Lowering, a: Tile, b: Tile, acc) -> Tile:
    """(B, M, K) @ (B, K, N), Triton's batched dot: each (batch, m, n) element is the same
    K-step fused multiply-add chain from ``acc`` (or 0) as a 2-D dot's, on operands in shared
    memory."""
    nb, M, K = a.shape
    N = b.shape[2]
    et = a.type
    if acc is not None:
        acc = ctx.broadcast_to(ctx.cast(ctx.to_tile(acc), et), (nb, M, N)).materialize()
    base, bbase = _operands_to_shared(ctx, a, b)

    def fn(c: Coords) -> Value:
        bi, m, n = c.idx()
        arow = ctx.b("gep", base, ctx.linearize([bi, m, ctx.const(0)], (nb, M, K)))
        bcol = ctx.b("gep", bbase, ctx.linearize([bi, ctx.const(0), n], (nb, K, N)))
        return _fma_chain(ctx, arow, bcol, acc, c, K, N, et)

    out = Tile(ctx, (nb, M, N), et, fn=fn).materialize()
    ctx.scratch_dirty = True
    return out


def _dot_outer(ctx: Lowering, abase: Value, bbase: Value, acc: Tile | None, M: int, N: int,
               K: int) -> Tile:
    """The thread's elements of ``A @ B (+ acc)`` as an outer product per k step: A (row-major
    M x K) and B (K x N) sit in shared memory at ``abase``/``bbase``.

    The thread's output elements form a 2-D tile of rows ``m0 + dm`` and columns
    ``n0 + dn`` (``dm``, ``dn`` constants of the layout: with ``U = T * vec`` elements per
    slot group, slot ``s`` is ``dm = (s // vec) * U // N``, ``dn = (s // vec) * U % N +
    s % vec``, since one of ``U`` and ``N`` divides the other); each k step loads each of
    its A rows' and B columns' elements once and does one fused multiply-add per output
    element, so every element is still the chain ``acc + a0*b0``, then ``+ a1*b1``, ... in
    k order (the same bits as the per-element chain). ``vec`` k steps are loaded at a
    time, so a row's A elements are adjacent loads (a vector load in PTX)."""
    shape = (M, N)
    v = ctx.vec(shape)
    U = ctx.T * v
    nslots = ctx.nslots(shape)
    m0, n0 = Coords(ctx, shape, 0).idx()
    arow = ctx.b("gep", abase, ctx.b("shl", m0, ctx.const(K.bit_length() - 1)))
    bcol = ctx.b("gep", bbase, n0)
    place = [((s // v) * U // N, (s // v) * U % N + s % v) for s in builtins.range(nslots)]
    rows = sorted({dm for dm, _ in place})
    cols = sorted({dn for _, dn in place})
    et = ir.I32 if abase.type.elem == "i32" else F32
    accs = [acc.at(Coords(ctx, shape, s)) if acc is not None else ctx.const(0, et)
            for s in builtins.range(nslots)]
    chunk = builtins.min(ctx.V, K)
    for k0 in builtins.range(0, K, chunk):
        a = {(dm, k): ctx.b.op("load", [ctx.b("gep", arow, ctx.const(dm * K + k))]).result
             for dm in rows for k in builtins.range(k0, k0 + chunk)}
        for k in builtins.range(k0, k0 + chunk):
            b = {dn: ctx.b.op("load", [ctx.b("gep", bcol, ctx.const(k * N + dn))]).result
                 for dn in cols}
            accs = [_mac(ctx, a[dm, k], b[dn], x)
                    for (dm, dn), x in zip(place, accs, strict=True)]
    return Tile(ctx, shape, et, slots=accs)


# --- shared memory (thread level) -------------------------------------------------------------
class SharedArray:
    """A block-shared array from :func:`shared_array`; index it like a NumPy array."""

    def __init__(self, ctx: Lowering, shape: tuple[int, ...], type: Type, offset: int):
        self.ctx = ctx
        self.shape = shape
        self.type = type
        self.offset = offset

    def _ptr(self, key) -> Tile:
        ctx = self.ctx
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape):
            raise CompileError(f"a shared array of shape {list(self.shape)} needs "
                               f"{len(self.shape)} indices")
        base = ctx.b.op("smem", [], {"offset": self.offset},
                        [ir.ptr("f32" if self.type == F32 else "i32", "shared")]).result
        flat = None
        stride = 1
        for k, size in reversed(list(zip(key, self.shape, strict=True))):
            if isinstance(k, int) and not 0 <= k < size:
                raise CompileError(f"index {k} out of range 0..{size - 1}")
            term = ctx.binary("*", k, stride) if stride != 1 else ctx.to_tile(k)
            flat = term if flat is None else ctx.binary("+", flat, term)
            stride *= size
        return ctx.binary("+", ctx.scalar(base), ctx.cast(flat, I32))

    def __getitem__(self, key) -> Tile:
        return load.__wrapped__(self.ctx, self._ptr(key))

    def __setitem__(self, key, value) -> None:
        store.__wrapped__(self.ctx, self._ptr(key), value)


@builtin
def shared_array(ctx: Lowering, shape, dtype) -> SharedArray:
    """A block-shared array (CUDA __shared__); its size is fixed at compile time."""
    shp = tuple(_int(s, "a shape dimension") for s in (
        shape if isinstance(shape, tuple | list) else (shape,)))
    n = 1
    for s in shp:
        if s <= 0:
            raise CompileError(f"shared array dimensions must be positive, not {s}")
        n *= s
    return SharedArray(ctx, shp, to_ir_type(dtype), ctx.alloc_shared(4 * n))


# --- warp-level ------------------------------------------------------------------------------
def _shfl(ctx: Lowering, mode: str, x, src) -> Tile:
    t = ctx.to_tile(x)
    if not t.is_scalar:
        raise CompileError(f"shfl_{mode} takes a per-thread scalar, not a tile")
    if t.type == I1:
        raise CompileError(f"shfl_{mode} takes an int32 or float32 value")
    s = ctx.cast(ctx.to_tile(src), I32)
    return ctx.scalar(ctx.b("shfl", t.scalar, s.scalar, mode=mode))


@builtin
def shfl_down(ctx: Lowering, x, delta) -> Tile:
    return _shfl(ctx, "down", x, delta)


@builtin
def shfl_up(ctx: Lowering, x, delta) -> Tile:
    return _shfl(ctx, "up", x, delta)


@builtin
def shfl_xor(ctx: Lowering, x, mask) -> Tile:
    return _shfl(ctx, "xor", x, mask)


@builtin
def shfl_idx(ctx: Lowering, x, lane) -> Tile:
    return _shfl(ctx, "idx", x, lane)


def _vote(ctx: Lowering, mode: str, p) -> Tile:
    t = ctx.cast(ctx.to_tile(p), I1)
    if not t.is_scalar:
        raise CompileError(f"vote_{mode} takes a per-thread scalar condition")
    return ctx.scalar(ctx.b("vote", t.scalar, mode=mode))


def _vote_builtin(mode: str, doc: str):
    def vote(ctx: Lowering, pred) -> Tile:
        return _vote(ctx, mode, pred)

    return _builtin_named(f"vote_{mode}", doc, vote)


vote_any = _vote_builtin("any", "True in every lane when ``pred`` holds in any active lane.")
vote_all = _vote_builtin("all", "True in every lane when ``pred`` holds in all active lanes.")
vote_ballot = _vote_builtin("ballot", "The active lanes where ``pred`` holds, as a bit mask.")


# --- loops (the front end handles these in 'for' statements) ---------------------------------
class static_range:  # noqa: N801
    """``for i in tl.static_range(...)``: unrolled at compile time (constexpr bounds)."""

    def __init__(self, *args, **kwargs):
        self.args = args


class range:  # noqa: N801, A001
    """``for i in tl.range(...)``: a loop in the kernel (``num_stages`` etc. are accepted)."""

    def __init__(self, *args, **kwargs):
        self.args = args


# --- shape operations, scans and the reductions with a combine function (own modules) -------
from . import shapes as _shapes  # noqa: E402 - they use the helpers above

trans = builtin(_shapes.trans)
permute = builtin(_shapes.permute)
reshape = builtin(_shapes.reshape)
view = builtin(_shapes.view)
ravel = builtin(_shapes.ravel)
broadcast = builtin(_shapes.broadcast)
join = builtin(_shapes.join)
split = builtin(_shapes.split)
interleave = builtin(_shapes.interleave)
cat = builtin(_shapes.cat)
flip = builtin(_shapes.flip)
gather = builtin(_shapes.gather)

from . import scans as _scans  # noqa: E402

reduce = builtin(_scans.reduce)
associative_scan = builtin(_scans.associative_scan)
cumsum = builtin(_scans.cumsum)
cumprod = builtin(_scans.cumprod)
sort = builtin(_scans.sort)
histogram = builtin(_scans.histogram)
xor_sum = builtin(_scans.xor_sum)
reduce_or = builtin(_scans.reduce_or)
topk = builtin(_scans.topk)
bitonic_merge = builtin(_scans.bitonic_merge)


THREAD_LEVEL_NAMES = frozenset({"thread_id", "block_dim", "lane_id", "warp_id", "shfl_down",
                                "shfl_up", "shfl_xor", "shfl_idx", "vote_any", "vote_all",
                                "vote_ballot", "linear_thread_id", "shared_array"})

# tl.math, the checks and the functions that need the builtins above (modules of their own)
from .debug_ops import (  # noqa: E402, F401 - language names
    assume,
    device_assert,
    device_print,
    static_assert,
    static_print,
)
from .libmath import (  # noqa: E402, F401 - language names
    LIBDEVICE_ALIASES,
    LIBDEVICE_NAMES,
    MATH_NAMES,
    Namespace,
    PropagateNan,
    acos,
    asin,
    atan,
    atan2,
    ceil,
    clamp,
    copysign,
    cosh,
    div_rn,
    erf,
    exp10,
    expm1,
    fdiv,
    floor,
    fmod,
    hypot,
    isinf,
    isnan,
    llrint,
    log1p,
    log10,
    nearbyint,
    pow,
    rint,
    round,
    signbit,
    sinh,
    sqrt_rn,
    tan,
    tanh,
    trunc,
    umulhi,
)

_block_ptr.MEMORY_OPS.update(load=load.__wrapped__, store=store.__wrapped__)
tensor_descriptor = _block_ptr.tensor_descriptor
make_block_ptr = builtin(_block_ptr.make_block_ptr)
advance = builtin(_block_ptr.advance)
make_tensor_descriptor = builtin(_block_ptr.make_tensor_descriptor)
load_tensor_descriptor = _block_ptr.load_tensor_descriptor
store_tensor_descriptor = _block_ptr.store_tensor_descriptor

from .random import BUILTINS as _RANDOM  # noqa: E402

philox_impl = _RANDOM["philox_impl"]
philox = _RANDOM["philox"]
randint4x = _RANDOM["randint4x"]
randint = _RANDOM["randint"]
uint_to_uniform_float = _RANDOM["uint_to_uniform_float"]
rand = _RANDOM["rand"]
rand4x = _RANDOM["rand4x"]
pair_uniform_to_normal = _RANDOM["pair_uniform_to_normal"]
randn = _RANDOM["randn"]
randn4x = _RANDOM["randn4x"]
from .stdlib import (  # noqa: E402, F401 - language names
    _is_power_of_two,
    _log2,
    add,
    cast,
    constexpr_function,
    get_int_dtype,
    max_constancy,
    swizzle2d,
)


@builtin
def softmax(ctx: Lowering, x, dim=None, keep_dims: bool = False, ieee_rounding: bool = False
            ) -> Tile:
    """Triton's ``tl.softmax``: ``exp(x - max(x, dim)) / sum(exp(...), dim)`` along ``dim``
    (axis 0 for None), the quotient by ``tl.fdiv`` (``ieee_rounding``: correctly rounded).
    As in Triton, with ``keep_dims=False`` the reduced result broadcasts against ``x`` from
    the right, which fits ``dim=0`` (or a 1-D ``x``); along the last axis of a 2-D tile
    pass ``keep_dims=True``."""
    d = 0 if dim is None else dim
    z = ctx.binary("-", x, max(x, d, keep_dims=keep_dims, _ctx=ctx))
    num = exp(z, _ctx=ctx)
    return fdiv(num, sum(num, d, keep_dims=keep_dims, _ctx=ctx), ieee_rounding, _ctx=ctx)

math = Namespace("tl.math", {n: globals()[n] for n in MATH_NAMES + LIBDEVICE_NAMES})
"""Triton's ``tl.math`` namespace (an unknown name is a compile error at its place)."""
_libdevice = Namespace("tl.extra.libdevice", {
    **{n: globals()[n] for n in MATH_NAMES + LIBDEVICE_NAMES},
    **{a: globals()[n] for a, n in LIBDEVICE_ALIASES.items()}})
_cuda = Namespace("tl.extra.cuda", {"libdevice": _libdevice})
libdevice = _libdevice
"""``tl.libdevice``: where Triton 2.x kept libdevice (``tl.libdevice.llrint(x)``)."""
extra = Namespace("tl.extra", {"libdevice": _libdevice, "cuda": _cuda})


def _register_submodules() -> None:
    """Make Triton's import paths work with the imports swapped: ``from
    triton.language.extra.libdevice import tanh``, ``from triton.language.extra.cuda import
    libdevice``, ``from triton.language.math import tanh`` (``language`` is one module here,
    so its namespaces are entered into ``sys.modules`` under those names)."""
    for sub, ns in (("math", math), ("extra", extra), ("extra.libdevice", _libdevice),
                    ("extra.cuda", _cuda), ("extra.cuda.libdevice", _libdevice)):
        sys.modules.setdefault(f"{__name__}.{sub}", ns)
    # Triton defines the language in triton/language/core.py and standard.py; kernels
    # that import those (``import triton.language.core as core``) get the whole language
    for sub in ("core", "standard"):
        sys.modules.setdefault(f"{__name__}.{sub}", sys.modules[__name__])


_register_submodules()
core = standard = sys.modules[__name__]
"""``tl.core.reshape(...)``, ``tl.standard.sum(...)``: Triton's modules of the language."""

__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "core", "standard", "sys", "I64", "get_int_dtype",
    "annotations", "builtins", "dataclass", "ir", "builtin", "dtype_of_type", "to_ir_type",
    "Lowering", "Coords", "LN2", "LOG2E", "CompileError", "Type", "Value", "F32", "I1", "I32",
    "THREAD_LEVEL_NAMES", "SharedArray", "dtypes", "Namespace", "MATH_NAMES",
    "LIBDEVICE_NAMES", "LIBDEVICE_ALIASES")]
