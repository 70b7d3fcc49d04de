"""Triton's atomics: ``tl.atomic_add/max/min/xchg/and/or/xor/cas``.

Each returns the old values and, except ``atomic_cas``, takes a ``mask``. They map one to one
onto the ISA's ``atom.*`` (global) and ``atoms.*`` (shared) instructions; float
``atomic_max``/``atomic_min`` are ``atom.fmax``/``atom.fmin``, which order floats by their bits
exactly as Triton's lowering does (docs/isa.md). ``sem`` and ``scope`` take Triton's values
and are checked: every atomic here is performed at the memory, one at a time in program order
(docs/execution-model.md), which is what each combination asks for.
"""

from __future__ import annotations

import math

from .dtypes import dtype_of_type
from .errors import CompileError
from .ir import F16, F32, U64, Type, Value
from .lang_base import _builtin_named, _each, _mask_tile, _ptr_tile
from .tiles import Lowering, Tile

SEMS = ("acquire", "release", "acq_rel", "relaxed")
"""Triton's memory orders for atomics (``None`` means ``acq_rel``)."""
SCOPES = ("gpu", "cta", "sys")
"""Triton's scopes for atomics (``None`` means ``gpu``)."""

_INT_ONLY = ("and", "or", "xor")


def check_order(name: str, sem, scope) -> None:
    """Refuse a ``sem`` or ``scope`` that Triton does not know, naming the valid ones."""
    for what, v, ok in (("sem", sem, SEMS), ("scope", scope, SCOPES)):
        if v is not None and v not in ok:
            raise CompileError(f"{name}: {what}={v!r} is not one of "
                               + ", ".join(repr(o) for o in ok))


def atomic_rmw(ctx: Lowering, name: str, op: str, pointer, operands: list, mask) -> Tile:
    """``op`` of the ``operands`` (the value, or compare and value for cas) at ``pointer``
    where ``mask``; the old values, shaped like the broadcast of pointer and operands."""
    unused = getattr(ctx, "result_unused", False)  # set by the front end for this call
    p = _ptr_tile(pointer)
    elem = p.type.pointee
    if elem.is_half:  # two to a word: an atom on the word would change its neighbour
        half = "float16" if elem == F16 else "bfloat16"
        raise CompileError(f"{name} on {half} is not supported: this ISA's atomics act on "
                           "32-bit words (use a float32 array)")
    if p.type.elem_size < 4:  # int8, uint8, int16, uint16, bool: neighbours in the word
        what = "bool" if p.type.elem == "i1" else dtype_of_type(elem).name
        raise CompileError(f"{name} on {what} is not supported: this ISA's atomics act on "
                           "32-bit words (Triton has no 8-bit atomics either; use an int32 "
                           "array)")
    like = Tile(ctx, (), elem, slots=[ctx.const(0, elem)])
    vs = [ctx.cast(ctx.to_tile(v, like=like), elem) for v in operands]
    if elem == F32 and op in _INT_ONLY:
        raise CompileError(f"{name} needs an integer pointer, not a float32 one")
    if elem == F32 and op in ("min", "max"):
        op = "f" + op
    if elem.unsigned and op in ("min", "max"):
        raise CompileError(f"{name} on {'uint64' if elem == U64 else 'uint32'} is not "
                           f"supported: this ISA's atomic {op} compares signed 32-bit words "
                           "(use an int32 array)")
    if elem == F32 and op == "add":
        op = "fadd"
    shape = p.shape
    for v in vs:
        shape = ctx.broadcast_shape(shape, v.shape)
    m = _mask_tile(ctx, mask, shape)
    # duplicates of a tile smaller than the block, or of a program-level scalar, must not
    # apply the operation twice
    rep = None
    if not ctx.thread_level:
        rep = ctx.replica_mask(shape) if shape else ctx.b.op(
            "icmp", [ctx.tid(), ctx.const(0)], {"cond": "eq"}).result
    if rep is not None:
        r = ctx.scalar(rep)
        m = r if m is None else ctx.binary("&", m, r)
    tiles = [p, *vs] + ([m] if m is not None else [])

    def emit(values: list[Value]) -> Value:
        return ctx.b.op("atomic", list(values), {"op": op}).result

    old = _each(ctx, tiles, emit)
    if rep is None or unused:
        return Tile(ctx, shape, elem, slots=old)
    return _from_owners(ctx, shape, elem, old, rep)


def _from_owners(ctx: Lowering, shape: tuple[int, ...], elem: Type, vals: list[Value],
                 owner: Value) -> Tile:
    """The old values of an atomic that only the owner threads performed (a scalar, or a tile
    smaller than the block) in every thread, as Triton returns them: through shared scratch.
    Skipped where the call's result is dropped, so such code is as before."""
    ctx.scratch_barrier()
    n = max(1, math.prod(shape))
    base = ctx.shared_ptr(ctx.scratch(4 * n), elem)
    where = [ctx.b("gep", base, ctx.flat_index(shape, s)) for s in range(len(vals))]
    for w, v in zip(where, vals, strict=True):
        ctx.b.op("store", [w, v, owner])
    ctx.barrier()
    out = [ctx.b.op("load", [w]).result for w in where]
    ctx.scratch_dirty = True
    return Tile(ctx, shape, elem, slots=out)


def _rmw_builtin(name: str, op: str, doc: str):
    def atomic(ctx: Lowering, pointer, val, mask=None, sem=None, scope=None) -> Tile:
        check_order(name, sem, scope)
        return atomic_rmw(ctx, name, op, pointer, [val], mask)

    return _builtin_named(name, doc + " Returns the old values.", atomic)


atomic_add = _rmw_builtin("atomic_add", "add", "``*pointer += val`` where ``mask`` "
                          "(int32 wraps; float32 rounds to nearest even, FTZ).")
atomic_max = _rmw_builtin("atomic_max", "max", "``*pointer = max(*pointer, val)`` where "
                          "``mask`` (int32 signed; float32 in Triton's bit order).")
atomic_min = _rmw_builtin("atomic_min", "min", "``*pointer = min(*pointer, val)`` where "
                          "``mask`` (int32 signed; float32 in Triton's bit order).")
atomic_xchg = _rmw_builtin("atomic_xchg", "exch", "``*pointer = val`` where ``mask``.")
atomic_and = _rmw_builtin("atomic_and", "and", "``*pointer &= val`` where ``mask`` (integers).")
atomic_or = _rmw_builtin("atomic_or", "or", "``*pointer |= val`` where ``mask`` (integers).")
atomic_xor = _rmw_builtin("atomic_xor", "xor", "``*pointer ^= val`` where ``mask`` (integers).")


def _atomic_cas(ctx: Lowering, pointer, cmp, val, sem=None, scope=None) -> Tile:
    check_order("atomic_cas", sem, scope)
    return atomic_rmw(ctx, "atomic_cas", "cas", pointer, [cmp, val], None)


atomic_cas = _builtin_named(
    "atomic_cas", "``*pointer = val`` where ``*pointer == cmp`` (bitwise); returns the old "
    "values.", _atomic_cas)

__all__ = ["SEMS", "SCOPES", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
           "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "check_order", "atomic_rmw"]
