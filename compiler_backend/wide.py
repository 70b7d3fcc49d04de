"""64-bit integers on this ISA: each ``i64`` value becomes a pair of ``i32`` registers.

The ISA's registers, ALU and addresses are 32-bit (docs/isa.md), so ``tl.int64`` lives in
two registers, the low word and the high word. :func:`legalize_i64` runs on the optimised
IR of the ``isa`` target just before code generation and rewrites every ``i64`` op into
``i32`` ops: add and sub with the carry from an unsigned compare, the low 64 bits of a
product from ``mul``/``mulhu``, shifts by amounts modulo 64 (by a constant: two or three
instructions; by a variable: two funnel shifts and a select on bit 5 of the amount),
compares word by word (the high word signed or unsigned, the low word unsigned),
conversions to and from float32 (round to nearest even; truncation with saturation, NaN to
0, as PTX's ``cvt.rzi.s64.f32``). Values carried by loops and ``if`` results become two
carried values, an ``i64`` parameter two parameter words (``name`` and ``name.hi``, the
low word first: the 8 bytes of the value, little-endian), and a pointer to ``i64``
elements a pointer to words (element ``i`` is words ``2i`` and ``2i + 1``). Addresses are
32-bit: ``p + off`` with an ``i64`` offset uses the offset's low word (the address wraps
modulo 2**32 as every address does), and an integer-to-pointer cast takes the low word.

PTX keeps ``i64`` native (``.s64`` registers), so the two targets share one IR and one
front end; the semantics both implement are :func:`simtgpu.sim.numerics.int64_op` and
:func:`~simtgpu.sim.numerics.cvt64`.
"""

from __future__ import annotations

from . import ir
from .errors import CompileError
from .ir import F32, I32, I64, Block, Builder, Function, Op, Param, Value

Pair = tuple[Value, Value]


def uses_i64(fn: Function) -> bool:
    """Whether ``fn`` has an ``i64`` value or a pointer to ``i64`` anywhere."""
    def wide(t: ir.Type) -> bool:
        return t == I64 or (t.is_ptr and t.elem == "i64")

    if any(wide(p.type) for p in fn.params):
        return True
    for op in fn.walk():
        if any(wide(v.type) for v in op.results) or any(
                wide(a.type) for r in op.regions for a in r.args):
            return True
    return False


class _Legalizer:
    def __init__(self, fn: Function):
        self.fn = fn
        self.pairs: dict[int, Pair] = {}
        self.wide_ptrs: set[int] = set()  # pointers that pointed to i64 elements
        self.repl: dict[int, Value] = {}  # a replaced 32-bit value -> its replacement
        self.b = Builder(Block())

    # --- values ---------------------------------------------------------------------------
    def retype(self, v: Value) -> None:
        if v.type.is_ptr and v.type.elem == "i64":
            self.wide_ptrs.add(v.id)
            v.type = ir.ptr("i32", v.type.space)

    def split(self, v: Value, owner) -> list[Value]:
        """``v`` as the values that replace it: a new (lo, hi) pair for an i64."""
        self.retype(v)
        if v.type != I64:
            return [v]
        lo, hi = Value(I32, owner), Value(I32, owner)
        self.pairs[v.id] = (lo, hi)
        return [lo, hi]

    def expand(self, vs: list[Value]) -> list[Value]:
        out: list[Value] = []
        for v in vs:
            out.extend(self.pairs[v.id] if v.id in self.pairs else [v])
        return out

    def w(self, v: Value) -> Pair:
        return self.pairs[v.id]

    # --- small builders ---------------------------------------------------------------------
    def c(self, x: int) -> Value:
        return self.b.const(x, I32)

    def op(self, name: str, *vs: Value, **attrs) -> Value:
        return self.b.op(name, list(vs), attrs).result

    def icmp(self, cond: str, a: Value, b: Value) -> Value:
        return self.b.op("icmp", [a, b], {"cond": cond}).result

    def sel(self, c: Value, a: Value, b: Value) -> Value:
        return self.op("select", c, a, b)

    def bit(self, p: Value) -> Value:
        return self.sel(p, self.c(1), self.c(0))

    # --- the walk -----------------------------------------------------------------------------
    def run(self) -> None:
        params: list[Param] = []
        for p in self.fn.params:
            vs = self.split(p.value, None)
            if len(vs) == 1:
                params.append(p)
                continue
            lo, hi = vs  # two signed words (the jit splits the value so)
            params += [Param(p.name, I32, lo), Param(p.name + ".hi", I32, hi)]
        self.fn.params = params
        self.block(self.fn.body)

    def block(self, blk: Block) -> None:
        new_args: list[Value] = []
        for a in blk.args:
            new_args.extend(self.split(a, blk))
        blk.args = new_args
        out: list[Op] = []
        for op in blk.ops:
            op.operands = [self.repl.get(v.id, v) for v in op.operands]
            if op.regions or op.name == "yield":
                op.operands = self.expand(op.operands)
                for r in op.regions:
                    self.block(r)
                results: list[Value] = []
                for v in op.results:
                    results.extend(self.split(v, op))
                op.results = results
                out.append(op)
                continue
            if not self.touches(op):
                for v in op.results:
                    self.retype(v)
                out.append(op)
                continue
            self.b = Builder(Block())
            self.b.loc = op.loc
            self.lower(op)
            for new in self.b.block.ops:
                new.parent = blk
                out.append(new)
        blk.ops = out

    def touches(self, op: Op) -> bool:
        return any(v.type == I64 or v.id in self.wide_ptrs for v in op.operands) or any(
            v.type == I64 or (v.type.is_ptr and v.type.elem == "i64") for v in op.results)

    def define(self, v: Value, lo: Value, hi: Value) -> None:
        self.pairs[v.id] = (lo, hi)

    def alias(self, v: Value, x: Value) -> None:
        """Uses of ``v`` (not i64) read ``x`` from now on."""
        self.repl[v.id] = x
        if v.id in self.wide_ptrs:
            self.wide_ptrs.add(x.id)

    # --- one op -------------------------------------------------------------------------------
    def lower(self, op: Op) -> None:
        n = op.name
        fn = getattr(self, "op_" + n, None)
        try:
            if fn is None:
                raise CompileError(f"{n} on int64 values is not supported on this ISA")
            fn(op)
        except CompileError as e:
            if op.loc is None:
                raise
            raise e.at(op.loc) from None  # at the expression that made the op

    def op_const(self, op: Op) -> None:
        x = op.attrs["value"]
        self.define(op.result, self.c(x & 0xFFFFFFFF), self.c(x >> 32))

    def op_add(self, op: Op) -> None:
        (al, ah), (bl, bh) = (self.w(v) for v in op.operands)
        lo = self.op("add", al, bl)
        carry = self.bit(self.icmp("ltu", lo, al))
        self.define(op.result, lo, self.op("add", self.op("add", ah, bh), carry))

    def op_sub(self, op: Op) -> None:
        (al, ah), (bl, bh) = (self.w(v) for v in op.operands)
        borrow = self.bit(self.icmp("ltu", al, bl))
        self.define(op.result, self.op("sub", al, bl),
                    self.op("sub", self.op("sub", ah, bh), borrow))

    def op_mul(self, op: Op) -> None:
        (al, ah), (bl, bh) = (self.w(v) for v in op.operands)
        cross = self.op("add", self.op("mul", al, bh), self.op("mul", ah, bl))
        self.define(op.result, self.op("mul", al, bl),
                    self.op("add", self.op("mulhu", al, bl), cross))

    def op_and(self, op: Op) -> None:
        (al, ah), (bl, bh) = (self.w(v) for v in op.operands)
        self.define(op.result, self.op(op.name, al, bl), self.op(op.name, ah, bh))

    op_or = op_xor = op_and

    def shift_parts(self, op: Op) -> tuple[Value, Value, Value, Value, Value]:
        (al, ah), (bl, _) = (self.w(v) for v in op.operands)
        n = self.op("and", bl, self.c(63))
        big = self.icmp("ne", self.op("and", n, self.c(32)), self.c(0))
        # 31 - n for n < 32 (the ISA takes shift amounts modulo 32)
        m = self.op("xor", self.op("and", n, self.c(31)), self.c(31))
        return al, ah, n, big, m

    def const_shift(self, op: Op) -> bool:
        """A shift by a constant: two or three instructions, no select."""
        k = ir.const_value(op.operands[1])
        if k is None:
            return False
        k &= 63
        (al, ah), n = self.w(op.operands[0]), op.name
        if k == 0:
            self.define(op.result, al, ah)
        elif n == "shl" and k < 32:
            self.define(op.result, self.op("shl", al, self.c(k)), self.op(
                "or", self.op("shl", ah, self.c(k)), self.op("shr", al, self.c(32 - k))))
        elif n == "shl":
            self.define(op.result, self.c(0), self.op("shl", al, self.c(k - 32)))
        elif k < 32:
            self.define(op.result, self.op("or", self.op("shr", al, self.c(k)),
                                           self.op("shl", ah, self.c(32 - k))),
                        self.op(n, ah, self.c(k)))
        else:
            fill = self.op("sra", ah, self.c(31)) if n == "sra" else self.c(0)
            self.define(op.result, self.op(n, ah, self.c(k - 32)), fill)
        return True

    def op_shl(self, op: Op) -> None:
        if self.const_shift(op):
            return
        al, ah, n, big, m = self.shift_parts(op)
        lo_s = self.op("shl", al, n)
        hi_s = self.op("or", self.op("shl", ah, n),
                       self.op("shr", self.op("shr", al, self.c(1)), m))
        self.define(op.result, self.sel(big, self.c(0), lo_s), self.sel(big, lo_s, hi_s))

    def op_shr(self, op: Op) -> None:
        if self.const_shift(op):
            return
        al, ah, n, big, m = self.shift_parts(op)
        hi_s = self.op("sra" if op.name == "sra" else "shr", ah, n)
        lo_s = self.op("or", self.op("shr", al, n),
                       self.op("shl", self.op("shl", ah, self.c(1)), m))
        fill = self.op("sra", ah, self.c(31)) if op.name == "sra" else self.c(0)
        self.define(op.result, self.sel(big, hi_s, lo_s), self.sel(big, fill, hi_s))

    op_sra = op_shr

    def compare(self, cond: str, a: Value, b: Value) -> Value:
        (al, ah), (bl, bh) = self.w(a), self.w(b)
        if cond in ("eq", "ne"):
            both = "and" if cond == "eq" else "or"
            return self.op(both, self.icmp(cond, al, bl), self.icmp(cond, ah, bh))
        base = cond.rstrip("u")
        strict = base[0] + "t"  # lt or gt: the high words decide unless they are equal
        hi_cond = strict + ("u" if cond.endswith("u") else "")
        lo = self.icmp(base + "u", al, bl)
        return self.op("or", self.icmp(hi_cond, ah, bh),
                       self.op("and", self.icmp("eq", ah, bh), lo))

    def op_icmp(self, op: Op) -> None:
        self.alias(op.result, self.compare(op.attrs["cond"], *op.operands))

    def op_min(self, op: Op) -> None:
        a, b = op.operands
        cond = "lt" if op.name in ("min", "minu") else "gt"
        c = self.compare(cond + ("u" if op.name.endswith("u") else ""), a, b)
        (al, ah), (bl, bh) = self.w(a), self.w(b)
        self.define(op.result, self.sel(c, al, bl), self.sel(c, ah, bh))

    op_max = op_minu = op_maxu = op_min

    def op_select(self, op: Op) -> None:
        c, a, b = op.operands
        if op.result.type.is_ptr:  # pointers to int64 elements, now to words
            self.retype(op.result)
            self.alias(op.result, self.op("select", c, a, b))
            self.wide_ptrs.add(self.repl[op.result.id].id)
            return
        (al, ah), (bl, bh) = self.w(a), self.w(b)
        self.define(op.result, self.sel(c, al, bl), self.sel(c, ah, bh))

    def op_sext(self, op: Op) -> None:
        x = op.operands[0]
        hi = self.op("sra", x, self.c(31)) if op.name == "sext" else self.c(0)
        self.define(op.result, x, hi)

    op_zext = op_sext

    def op_trunc(self, op: Op) -> None:
        self.alias(op.result, self.w(op.operands[0])[0])

    def op_shfl(self, op: Op) -> None:
        (lo, hi), lane = self.w(op.operands[0]), op.operands[1]
        self.define(op.result, self.b.op("shfl", [lo, lane], dict(op.attrs)).result,
                    self.b.op("shfl", [hi, lane], dict(op.attrs)).result)

    # --- addresses --------------------------------------------------------------------------
    def index(self, p: Value, i: Value) -> Value:
        """An element index of the (retyped) pointer ``p``: the low word of an i64 index,
        doubled where ``p`` pointed to i64 elements (now words)."""
        if i.type == I64:
            i = self.w(i)[0]
        if p.id in self.wide_ptrs:
            i = self.op("shl", i, self.c(1))
        return i

    def op_gep(self, op: Op) -> None:
        p, i = op.operands
        v = self.op("gep", p, self.index(p, i))
        self.alias(op.result, v)
        if p.id in self.wide_ptrs:
            self.wide_ptrs.add(v.id)

    def op_ptradd(self, op: Op) -> None:  # a byte offset: only its low word matters
        p, i = op.operands
        v = self.op("ptradd", p, self.w(i)[0] if i.type == I64 else i)
        self.alias(op.result, v)
        if p.id in self.wide_ptrs:
            self.wide_ptrs.add(v.id)

    def op_inttoptr(self, op: Op) -> None:
        x = op.operands[0]
        word = self.w(x)[0] if x.type == I64 else x
        attrs = dict(op.attrs)
        wide = attrs["elem"] in ("i64", "u64")
        if wide:
            attrs["elem"] = "i32"
        v = self.b.op("inttoptr", [word], attrs).result
        self.alias(op.result, v)
        if wide:
            self.wide_ptrs.add(v.id)

    def op_ptrtoint(self, op: Op) -> None:
        lo = self.b.op("ptrtoint", op.operands, {"bits": 32}, [I32]).result
        self.define(op.result, lo, self.c(0))

    def mem_words(self, op: Op) -> tuple[Value, Value]:
        p = op.operands[0]
        if p.id not in self.wide_ptrs:
            raise CompileError(f"{op.name} of an int64 value through a pointer to 32-bit "
                               "elements")
        return p, self.op("gep", p, self.c(1))

    def op_load(self, op: Op) -> None:
        p0, p1 = self.mem_words(op)
        rest = op.operands[1:]
        mask = rest[:1]
        other = self.w(rest[1]) if len(rest) == 2 else None
        lo = self.b.op("load", [p0, *mask, *([other[0]] if other else [])], dict(op.attrs),
                       [I32]).result
        hi = self.b.op("load", [p1, *mask, *([other[1]] if other else [])], dict(op.attrs),
                       [I32]).result
        self.define(op.result, lo, hi)

    def op_store(self, op: Op) -> None:
        p0, p1 = self.mem_words(op)
        lo, hi = self.w(op.operands[1])
        mask = op.operands[2:]
        self.b.op("store", [p0, lo, *mask], dict(op.attrs))
        self.b.op("store", [p1, hi, *mask], dict(op.attrs))

    def op_atomic(self, op: Op) -> None:
        raise CompileError("atomics on int64 values are not supported (the ISA's atomics "
                           "are 32-bit)")

    # --- float conversions ----------------------------------------------------------------------
    def fconst(self, x: float) -> Value:
        return self.b.const(x, F32)

    def op_i2f(self, op: Op) -> None:
        lo, hi = self.w(op.operands[0])
        if op.name == "i2f":  # |x| as an unsigned 64-bit value, the sign put back at the end
            neg = self.icmp("lt", hi, self.c(0))
            nlo = self.op("sub", self.c(0), lo)
            nhi = self.op("sub", self.op("xor", hi, self.c(-1)),
                          self.op("sub", self.c(0), self.bit(self.icmp("eq", lo, self.c(0)))))
            lo, hi = self.sel(neg, nlo, lo), self.sel(neg, nhi, hi)
        f = self.u64_to_f32(lo, hi)
        if op.name == "i2f":
            f = self.sel(neg, self.op("fneg", f), f)
        self.alias(op.result, f)

    op_u2f = op_i2f

    def u64_to_f32(self, lo: Value, hi: Value) -> Value:
        """RNE(hi * 2**32 + lo): for hi != 0, shift right by s = bitlen(hi) into one word
        with the bits shifted out ORed into bit 0 (round to odd keeps the one rounding of
        ``u2f`` exact), then scale by 2**s (exact)."""
        t, s = hi, self.c(0)
        for k in (16, 8, 4, 2, 1):
            big = self.icmp("geu", t, self.c(1 << k))
            t = self.sel(big, self.op("shr", t, self.c(k)), t)
            s = self.sel(big, self.op("add", s, self.c(k)), s)
        s = self.op("add", s, self.c(1))  # bitlen(hi), 1..32 where hi != 0
        m = self.op("sub", self.c(32), s)  # 0..31
        word = self.op("or", self.op("shl", hi, m),
                       self.op("shr", self.op("shr", lo, self.c(1)),
                               self.op("sub", s, self.c(1))))
        sticky = self.bit(self.icmp("ne", self.op("shl", lo, m), self.c(0)))
        word = self.op("or", word, sticky)
        scale = self.op("u2f", self.op("shl", self.c(1), self.op("sub", s, self.c(1))))
        wide = self.op("fmul", self.op("fmul", self.op("u2f", word), scale), self.fconst(2.0))
        return self.sel(self.icmp("eq", hi, self.c(0)), self.op("u2f", lo), wide)

    def op_f2i(self, op: Op) -> None:
        x = op.operands[0]
        a = self.op("fabs", x)
        hi = self.op("f2u", self.op("fmul", a, self.fconst(2.0 ** -32)))
        rem = self.op("fsub", a, self.op("fmul", self.op("u2f", hi), self.fconst(2.0 ** 32)))
        lo = self.op("f2u", rem)
        if op.name == "f2i":
            neg = self.b.op("fcmp", [x, self.fconst(0.0)], {"cond": "lt"}).result
            nlo = self.op("sub", self.c(0), lo)
            nhi = self.op("sub", self.op("xor", hi, self.c(-1)),
                          self.op("sub", self.c(0), self.bit(self.icmp("eq", lo, self.c(0)))))
            lo, hi = self.sel(neg, nlo, lo), self.sel(neg, nhi, hi)
            over = self.b.op("fcmp", [a, self.fconst(2.0 ** 63)], {"cond": "ge"}).result
            lo = self.sel(over, self.sel(neg, self.c(0), self.c(-1)), lo)
            hi = self.sel(over, self.sel(neg, self.c(-(1 << 31)), self.c(0x7FFFFFFF)), hi)
        else:
            neg = self.b.op("fcmp", [x, self.fconst(0.0)], {"cond": "le"}).result
            over = self.b.op("fcmp", [a, self.fconst(2.0 ** 64)], {"cond": "ge"}).result
            lo = self.sel(neg, self.c(0), self.sel(over, self.c(-1), lo))
            hi = self.sel(neg, self.c(0), self.sel(over, self.c(-1), hi))
        self.define(op.result, lo, hi)

    op_f2u = op_f2i


def legalize_i64(fn: Function) -> bool:
    """Rewrite ``fn`` so that no value is ``i64`` and no pointer points to ``i64`` elements
    (see the module docstring); returns whether the kernel had any. The result verifies
    and computes what the ``i64`` IR computes, bit for bit."""
    if not uses_i64(fn):
        return False
    _Legalizer(fn).run()
    return True

