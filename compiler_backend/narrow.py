"""``tl.int8``, ``tl.uint8``, ``tl.int16`` and ``tl.uint16`` in tile programs: promotion,
wrapping, conversion.

A narrow integer lives in a 32-bit register (an IR ``i32`` with the ``narrow`` note of
:class:`.ir.Type`), sign-extended when signed and zero-extended when unsigned, so every
32-bit integer op reads it correctly. Triton's rules (``semantic.py``'s
``computation_type_impl`` and ``integer_promote_impl``):

* two integers promote to the wider type; at a mixed signedness to the unsigned one when it
  is at least as wide as the signed one (``int8 + uint8 -> uint8``, ``uint8 + int32 ->
  int32``, ``int8 + int32 -> int32``); ``int1`` counts as a signed 1-bit integer;
* a Python integer (or ``bool``) meeting a narrow tensor in an arithmetic or bitwise op
  takes the tensor's type (the number wrapped to its width, as Triton's constant of that
  type); in a comparison it is an int32 and promotes as any int32 (Triton's scalar rule
  skips ops that give bools); a Python float gives float32; a narrow integer with a half
  format gives the half format, with float32 float32;
* ``+ - * <<`` and ``//`` of a narrow type wrap to its width: the result is re-normalised
  (``shl`` and ``sra`` by ``32 - width`` when signed, ``and`` with the width's mask when
  unsigned); ``& | ^ >> %``, comparisons, ``minimum``/``maximum`` and ``where`` keep a
  normalised value normalised;
* ``x.to(tl.int8)`` of an integer keeps the low bits (wraps, as NumPy's ``astype``); of a
  float truncates toward zero and saturates at the type's range, NaN giving 0 (Triton's
  ``fptosi``/``fptoui`` as PTX's ``cvt.rzi.s8.f32`` computes them); ``.to(tl.float32)``,
  ``.to(tl.int32)``, ``.to(tl.int64)`` extend by the source's signedness (exact).

The pass :func:`drop_unread_extensions` removes the re-normalisations whose upper bits no
reader looks at (a chain of ``+ - *`` stored to an int8 array needs none).
"""

from __future__ import annotations

from .ir import F32, I1, I32, I64, Function, Op, Type, Value, const_value


def bits(t: Type) -> int:
    """The width of an integer type: 1 for int1, 8 or 16 for the narrow types, else 32 or 64."""
    if t == I1:
        return 1
    if t.narrow:
        return t.narrow
    return 64 if t == I64 else 32


def promote(a: Type, b: Type) -> Type:
    """The integer type ``a`` and ``b`` compute in (Triton's ``integer_promote_impl``)."""
    ra, rb = bits(a), bits(b)
    ua, ub = a.unsigned and a != I1, b.unsigned and b != I1
    if ua == ub:
        return a if ra > rb else b
    if ua:
        return a if ra >= rb else b
    return b if rb >= ra else a


def wrap(value: int, t: Type) -> int:
    """The Python integer ``value`` as narrow type ``t`` holds it (its low bits)."""
    m = 1 << t.narrow
    value = int(value) & (m - 1)
    return value - m if not t.unsigned and value >= m >> 1 else value


def fits(src: Type, t: Type) -> bool:
    """Whether every value of integer type ``src`` (an i32 register) is a value of narrow
    type ``t``, so that the register needs no re-normalising."""
    if src == I1:
        return True
    if src.kind != "i32":
        return False
    bs = src.narrow or 32
    if src.unsigned == t.unsigned:
        return bs <= t.narrow
    return src.unsigned and bs < t.narrow


def normalize(ctx, v: Value, t: Type) -> Value:
    """``v`` (i32) with the bits above ``t``'s width repeating its sign bit (signed) or
    zero (unsigned): the value's low bits read as ``t``."""
    b = ctx.b
    if t.unsigned:
        return b("and", v, ctx.b.const((1 << t.narrow) - 1, I32))
    s = ctx.b.const(32 - t.narrow, I32)
    return b("sra", b("shl", v, s), s)


def convert(ctx, v: Value, t: Type, src: Type | None) -> Value:
    """``v`` (of language type ``src``, or its own type) converted to narrow type ``t``."""
    b = ctx.b
    s = src if src is not None else v.type
    if v.type.is_half:
        v, s = ctx.to_type(v, F32, s), F32
    if v.type == I1:
        return b("select", v, ctx.b.const(1, I32), ctx.b.const(0, I32))
    if v.type == F32:  # truncation toward zero, saturated at t's range (NaN: 0)
        if t.unsigned:
            return b("minu", b("f2u", v), ctx.b.const((1 << t.narrow) - 1, I32))
        lo, hi = -(1 << (t.narrow - 1)), (1 << (t.narrow - 1)) - 1
        return b("max", b("min", b("f2i", v), ctx.b.const(hi, I32)), ctx.b.const(lo, I32))
    if v.type == I64:
        v, s = b("trunc", v), I32
    if fits(s, t):
        return v
    return normalize(ctx, v, t)


WRAPPING = ("add", "sub", "mul", "shl")
"""The 32-bit ops whose result may leave a narrow operand type's range."""

_LOW_BITS = ("add", "sub", "mul", "and", "or", "xor", "shl")
"""Ops whose low ``d`` result bits depend only on the low ``d`` bits of their (first, for
``shl``) operands."""


def _extension_width(op: Op) -> int | None:
    """``w`` when ``op`` is a re-normalisation of an i32 to its low ``w`` bits (``sra(shl(x,
    32 - w), 32 - w)`` or ``and(x, 2**w - 1)``) that :func:`drop_unread_extensions` may
    skip, else None."""
    if op.result.type.kind != "i32":
        return None
    if op.name == "and":
        c = const_value(op.operands[1])
        if isinstance(c, int) and not isinstance(c, bool) and c in (0xFF, 0xFFFF):
            return c.bit_length()
        return None
    if op.name != "sra":
        return None
    inner = op.operands[0].owner
    k = const_value(op.operands[1])
    if not (isinstance(inner, Op) and inner.name == "shl" and isinstance(k, int)
            and not isinstance(k, bool) and 0 < k < 32
            and const_value(inner.operands[1]) == k):
        return None
    return 32 - k


def drop_unread_extensions(fn: Function) -> Function:
    """Skip the re-normalisations of narrow values that no reader can observe.

    The front end re-normalises an int8 after each ``+ - * <<`` (:func:`normalize`), but
    in ``a * b + c`` only the low 8 bits of the product reach the sum's low 8 bits, and a
    store to an 8-bit element reads only those. A backward walk computes for each i32
    value how many of its low bits some reader needs (all 32 for any op not known to read
    only low bits: compares, right shifts, divisions, conversions, addresses, loop
    carries); an extension to ``w`` bits whose result is needed in at most ``w`` bits is
    replaced by its input.

    Guarantees: every bit that any op reads is unchanged; ops are only removed by the
    ``dce`` that follows.
    """
    demand: dict[int, int] = {}

    def need(v: Value, n: int) -> None:
        demand[v.id] = max(demand.get(v.id, 0), n)

    replace: dict[int, Value] = {}
    for op in reversed(list(fn.walk())):
        d = max((demand.get(r.id, 0) for r in op.results), default=32)
        w = _extension_width(op) if len(op.results) == 1 else None
        if w is not None and d <= w:  # its readers see only bits the input already has
            x = op.operands[0] if op.name == "and" else op.operands[0].owner.operands[0]
            replace[op.result.id] = x
            need(x, d)
            continue
        if op.name in _LOW_BITS and op.results[0].type.kind == "i32":
            need(op.operands[0], d)
            need(op.operands[1], 32 if op.name == "shl" else d)
        elif op.name == "select" and op.results[0].type.kind == "i32":
            need(op.operands[0], 32)
            need(op.operands[1], d)
            need(op.operands[2], d)
        elif op.name == "store" and op.operands[0].type.elem in ("i8", "u8", "i16", "u16"):
            for i, v in enumerate(op.operands):
                need(v, 8 * op.operands[0].type.elem_size if i == 1 else 32)
        else:
            for v in op.operands:
                need(v, 32)
    if replace:
        for op in fn.walk():
            for i, v in enumerate(op.operands):
                while v.id in replace:
                    v = replace[v.id]
                op.operands[i] = v
    return fn


__all__ = ["bits", "promote", "wrap", "fits", "normalize", "convert", "WRAPPING",
           "drop_unread_extensions"]
