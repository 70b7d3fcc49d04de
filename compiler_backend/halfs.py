"""``tl.float16`` and ``tl.bfloat16`` in tile programs: promotion, conversion, arithmetic.

Triton's rules, which NumPy's float16 follows for these operations:

* fp16 with fp16 stays fp16 (bf16 with bf16 stays bf16); ``+``, ``-`` and ``*`` are computed
  exactly and rounded once to the format (the ISA's ``hadd2``/``hsub2``/``hmul2`` on the low
  half, PTX's ``.f16x2`` and ``fma.rn.bf16x2``), so results equal NumPy's float16 bit for bit
  (NaNs are the canonical 0x7fff; NumPy keeps payloads);
* a half with float32 becomes float32, fp16 with bf16 becomes float32;
* a half with an integer or a Python number stays the half format (the number is converted
  as a float32 constant and rounded to nearest even, as Triton converts its fp32 scalar);
* ``/`` computes in float32 (``a * rcp(b)``) and rounds to the format once, so it may differ
  from a correctly rounded quotient in the last place; comparisons compare the exact float32
  values;
* ``-x`` multiplies by -1 (exact); ``x.to(...)`` converts with round to nearest even
  (``hcvt.f2h``/``f2b``), and back to float32 exactly.
"""

from __future__ import annotations

import numpy as np
from simtgpu.sim import numerics

from . import ir
from .errors import CompileError
from .ir import BF16, F16, F32, I1, Type, Value


def half_bits(value: float, t: Type) -> int:
    """The 16-bit pattern of the Python number ``value`` in format ``t`` (through float32,
    rounded to nearest even)."""
    with np.errstate(over="ignore"):
        bits = numerics.f32_to_bits(np.float32(value))
    narrow = numerics.f32_to_f16 if t == F16 else numerics.f32_to_bf16
    return int(narrow(bits))


def common_type(a: Type, b: Type) -> Type:
    """The type an operation of a half with ``a``/``b`` computes in (Triton's promotion)."""
    if a.is_half and b.is_half:
        return a if a == b else F32
    if F32 in (a, b):
        return F32
    return a if a.is_half else b


def convert(ctx, v: Value, t: Type, src: Type | None) -> Value:
    """``v`` converted to ``t`` where one of them is a half format."""
    b = ctx.b
    c = ir.const_value(v)
    if t.is_half:
        if c is not None and v.type != I1 and not v.type.is_half:
            return ctx.const(c, t)  # a constant: converted while compiling (ctx.const)
        if v.type.is_half:
            v = b("h2f", v)
        elif v.type != F32:
            v = ctx.to_type(v, F32, src)
        return b.op("f2h", [v], {"fmt": t.kind}).result
    f = b("h2f", v)
    return f if t == F32 else ctx.to_type(f, t, F32)


def binary(ctx, op: str, a, b):
    """``a op b`` where an operand is a half tile (arithmetic and comparisons)."""
    sa, sb = a.type, b.type
    t = common_type(sa, sb)
    # (% of halves: fmod of their exact float32 values, which the half format holds exactly)
    if op in ctx._CMP or op in ("/", "%") or t == F32:
        if op in ("//", "<<", ">>", "&", "|", "^"):
            raise CompileError(f"operator {op} is not defined on {_name(sa if sa.is_half else sb)}")
        fa, fb = ctx.cast(a, F32), ctx.cast(b, F32)
        r = ctx.binary(op, fa, fb)
        return r if op in ctx._CMP or t == F32 else ctx.cast(r, t)
    name = {"+": "hadd", "-": "hsub", "*": "hmul"}.get(op)
    if name is None:
        raise CompileError(f"operator {op} is not defined on {_name(t)}")
    return ctx.mapn([a, b], t, lambda x, y: ctx.b(
        name, ctx.to_type(x, t, sa), ctx.to_type(y, t, sb)))


def negate(ctx, a):
    """``-a`` of a half tile: multiplication by -1 (exact, flips the sign of zeros)."""
    m1 = ctx.const(-1.0, a.type)
    return ctx.map1(a, a.type, lambda v: ctx.b("hmul", v, m1))


def via_f32(ctx, t, fn):
    """Run the shared-memory exchange ``fn`` on half tile ``t`` as float32 (exact both
    ways): the exchanges keep one 32-bit word per element."""
    return ctx.cast(fn(ctx.cast(t, F32).materialize()), t.type)


def _name(t: Type) -> str:
    return {F16: "tl.float16", BF16: "tl.bfloat16"}.get(t, str(t))


def check_bitcast(src: Type, dst: Type) -> None:
    """Refuse a bitcast of a half to or from anything but a 16-bit integer (or the other
    half format)."""
    if (src.is_half or dst.is_half) and not all(t.is_half or t.narrow == 16
                                                for t in (src, dst)):
        raise CompileError(f"bitcast from {src} to {dst}: a 16-bit float bitcasts to "
                           "tl.int16, tl.uint16 or the other 16-bit float format; convert "
                           "with .to()")


def bitcast(ctx, t, dst: Type):
    """Half tile ``t`` as 16-bit integer type ``dst``, or 16-bit integer tile ``t`` as half
    format ``dst``, or one half format as the other: the same 16 bits (a half's register
    has zeros above them, an int16's the sign)."""
    from . import narrow

    b = ctx.b
    if dst.is_half:
        mask = ctx.const(0xFFFF)
        return ctx.map1(t, dst, lambda v: b.op("bitcast", [
            v if t.type.is_half else b("and", v, mask)], {"to": dst.kind}).result)
    return ctx.map1(t, dst, lambda v: narrow.normalize(
        ctx, b.op("bitcast", [v], {"to": "i32"}).result, dst))


__all__ = ["half_bits", "common_type", "convert", "binary", "negate", "via_f32",
           "check_bitcast", "bitcast"]
