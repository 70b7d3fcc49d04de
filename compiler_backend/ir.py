"""The compiler's one SSA IR: typed values, ops with nested regions, a printer and a verifier.

Both front ends (tile programs and thread-level kernels) lower into this IR, every pass maps
IR to IR, and both code generators (this ISA and PTX) read it. Control flow is structured:
``for``, ``if`` and ``while`` ops own their regions, and regions end with ``yield``. That
keeps reconvergence explicit (each ``if``/``for``/``while`` is one ssy/sync bracket on the
ISA) and makes loop passes simple. ``while(inits) { ^(args): ... yield test } do { ^(args):
... yield next }`` evaluates its condition region on the carried values before every
iteration (as MLIR's ``scf.while`` with the values passed through unchanged); its results
are the carried values when the test fails.

Types: ``i1`` (predicates), ``i32``, ``f32``, the 16-bit floats ``f16`` and ``bf16`` (one per
register, in its low half, the high half zero) and pointers to 32-bit elements, to 16-bit
floats or to narrow integers (``i8``, ``u8``, ``i16``, ``u16``, and ``i1``: a byte holding 0
or 1) in the global or shared address space (``ptr<f32,global>``, ``ptr<f16,global>``,
``ptr<u8,global>``). A pointer is a byte address; ``gep`` adds an element index
(``elem_size`` bytes each). A narrow integer is an ``i32`` in its register, sign-extended
(``i8``, ``i16``) or zero-extended (``u8``, ``u16``, and the byte of an ``i1`` pointer); like
``unsigned``, its ``narrow`` width is a front-end note left out of type equality, so that
every ``i32`` op applies (the front end re-normalises after the ops that can leave the
range).
Integers are signless, as in MLIR: the ops say how bits are read (``sra`` or ``shr``, ``lt``
or ``ltu``, ``i2f`` or ``u2f``). ``u32`` is ``i32`` with the front end's note
that the language value is unsigned; it takes no part in type equality.

``i64`` (``tl.int64``/``tl.uint64``; ``u64`` is its unsigned note) is a value of its own:
the integer ops take two ``i64`` operands (a shift amount too), ``sext``/``zext``/``trunc``
convert to and from ``i32``, ``i2f``/``u2f`` read an ``i64`` operand and ``f2i``/``f2u``
with ``bits=64`` give one, ``gep`` takes an ``i64`` index, and ``inttoptr``/``ptrtoint``
convert between integers and global pointers. PTX keeps them native; for this ISA
:func:`simtgpu.compiler_backend.wide.legalize_i64` rewrites every ``i64`` into a pair of
``i32`` registers before code generation.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from simtgpu.errors import SimtgpuError
from simtgpu.sim.numerics import wrap_i64


class IRError(SimtgpuError):
    """Malformed IR (raised by the verifier): a compiler bug or a hand-built IR mistake."""


@dataclass(frozen=True)
class Type:
    kind: str  # "i1" | "i32" | "i64" | "f32" | "f16" | "bf16" | "ptr"
    elem: str | None = None  # pointee for ptr: "f32" | "i32" | "i64" | "f16" | "bf16"
    space: str | None = None  # "global" | "shared" for ptr
    # the language type is uint32 (an i32, or a pointer to i32): a front-end annotation that
    # picks unsigned ops; the IR is signless, so it is left out of == and hash
    unsigned: bool = field(default=False, compare=False)
    # the language type is int8/uint8 (8) or int16/uint16 (16): an i32 whose bits above the
    # width repeat the sign (signed) or are zero (unsigned); a note like ``unsigned``
    narrow: int = field(default=0, compare=False)

    def __str__(self) -> str:
        if self.narrow:
            return ("u" if self.unsigned else "i") + str(self.narrow)
        if self.kind == "ptr":
            elem = self.elem
            if self.unsigned:
                elem = "u64" if elem == "i64" else "u32"
            return f"ptr<{elem},{self.space}>"
        if self.unsigned:
            return "u64" if self.kind == "i64" else "u32"
        return self.kind

    @property
    def is_ptr(self) -> bool:
        return self.kind == "ptr"

    @property
    def pointee(self) -> Type:
        assert self.is_ptr
        if self.elem in _FLOATS:
            return _FLOATS[self.elem]
        if self.elem == "i64":
            return U64 if self.unsigned else I64
        if self.elem in NARROW_ELEMS:  # (the byte of a bool pointer: a uint8 in registers)
            return NARROW_ELEMS[self.elem]
        return U32 if self.unsigned else I32

    @property
    def is_half(self) -> bool:
        """A 16-bit float (f16 or bf16) value."""
        return self.kind in HALF_KINDS

    @property
    def elem_size(self) -> int:
        """Bytes per element of a pointer: 1 for the 8-bit integers and bool, 2 for the
        16-bit floats and integers, 8 for i64, 4 otherwise."""
        assert self.is_ptr
        if self.elem in NARROW_ELEMS:
            return 2 if self.elem.endswith("16") else 1
        return 2 if self.elem in HALF_KINDS else 8 if self.elem == "i64" else 4

    @property
    def is_int(self) -> bool:
        """An integer value (i32 or i64, signed or unsigned), not i1 and not a pointer."""
        return self.kind in ("i32", "i64")

    def with_unsigned(self, unsigned: bool) -> Type:
        """This type with the unsigned annotation set or cleared (integers and pointers to
        them)."""
        if unsigned == self.unsigned:
            return self
        return Type(self.kind, self.elem, self.space, unsigned, self.narrow)

    @property
    def plain(self) -> Type:
        """This type without the narrow note (what an op on narrow values computes)."""
        return Type(self.kind, self.elem, self.space, self.unsigned) if self.narrow else self


I1 = Type("i1")
I32 = Type("i32")
U32 = Type("i32", unsigned=True)
I64 = Type("i64")
U64 = Type("i64", unsigned=True)
F32 = Type("f32")
F16 = Type("f16")
BF16 = Type("bf16")
HALF_KINDS = ("f16", "bf16")
_FLOATS = {"f32": F32, "f16": F16, "bf16": BF16}


def same_type(a: Type, b: Type) -> bool:
    """``a == b`` with the narrow note compared too: the same language type as far as values
    are concerned (int8 and int32 are one IR type but hold different ranges)."""
    return a == b and a.narrow == b.narrow


I8 = Type("i32", narrow=8)
U8 = Type("i32", unsigned=True, narrow=8)
I16 = Type("i32", narrow=16)
U16 = Type("i32", unsigned=True, narrow=16)
NARROW_ELEMS = {"i8": I8, "u8": U8, "i16": I16, "u16": U16, "i1": U8}
"""Pointer elements narrower than a word (not floats) and the register type a load gives."""


def ptr(elem: str, space: str = "global") -> Type:
    """A pointer to ``elem`` ("f32", "i32", "i64", "f16", "bf16", "i8", "u8", "i16", "u16",
    "i1" (bytes of 0 or 1), or "u32"/"u64": integer elements read as unsigned)."""
    if elem in ("u32", "u64"):
        return Type("ptr", "i" + elem[1:], space, unsigned=True)
    return Type("ptr", elem, space)


_ids = itertools.count()


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("id", "type", "owner", "name")

    def __init__(self, type: Type, owner: Op | Block | None = None, name: str | None = None):
        self.id = next(_ids)
        self.type = type
        self.owner = owner
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.id}:{self.type}"


# op name -> (number of results, pure). "pure" ops may be removed, merged and moved freely.
INT_BINARY = ("add", "sub", "mul", "mulhi", "mulhu", "and", "or", "xor", "shl", "shr", "sra", "min",
              "max", "minu", "maxu")
FLOAT_BINARY = ("fadd", "fsub", "fmul", "fmin", "fmax")
FLOAT_UNARY = ("fneg", "fabs", "rcp", "rsqrt", "sqrt", "exp2", "log2", "sin", "cos")
CASTS = ("i2f", "u2f", "f2i", "f2u")
# 64-bit integers: sign/zero extension of an i32, its low word, and integer <-> pointer
WIDE_OPS = ("sext", "zext", "trunc", "inttoptr", "ptrtoint")
# 16-bit floats: h2f (exact), f2h[fmt] (RNE), hadd/hsub/hmul (one rounding in the operands'
# format), hpack (two halves into one word, the first in bits 15:0: an mma fragment register)
HALF_OPS = ("h2f", "f2h", "hadd", "hsub", "hmul", "hpack")
INT_CONDS = ("eq", "ne", "lt", "le", "gt", "ge", "ltu", "leu", "gtu", "geu")
FLOAT_CONDS = ("eq", "ne", "lt", "le", "gt", "ge")
# bitcast: the same 32 bits as float32 <-> int32, or a 16-bit float's register as an i32 and
# back (the result type is attrs["to"]: "f32", "i32", "f16" or "bf16")
PURE_OPS = frozenset(
    INT_BINARY + FLOAT_BINARY + FLOAT_UNARY + CASTS + HALF_OPS + WIDE_OPS
    + ("const", "sreg", "ffma", "icmp", "fcmp", "not", "select", "gep", "ptradd", "smem",
       "bitcast")
)
# mma (warp matrix multiply-accumulate: 4 A words, B words, 4 C f32 -> 4 D f32) needs the
# whole warp, as shfl does: it is never moved, merged or removed
# cp_async (PTX only: shared dst, global src, optional mask: a copy that bypasses the
# registers, zero-filling where the mask is false), cp_commit and cp_wait [n] (PTX's commit and wait
# groups) come from software pipelining on PTX (pipeline.py)
ASYNC_COPY_OPS = ("cp_async", "cp_commit", "cp_wait")
SIDE_EFFECT_OPS = frozenset(("store", "atomic", "barrier", "exit", "fence", "vote", "shfl",
                             "load", "for", "if", "while", "yield", "mma") + ASYNC_COPY_OPS)
ALL_OPS = PURE_OPS | SIDE_EFFECT_OPS  # the IR's op list: verifier and code generators use it


def check_op_table(table: Mapping[str, object], owner: str) -> None:
    """Raise unless ``table`` (op name -> emitter) has an entry for every op of the IR and
    none for an op the IR does not have. Each code generator checks its table at import, so
    an op added to the IR cannot reach a target that does not know it."""
    missing = sorted(ALL_OPS - table.keys())
    unknown = sorted(table.keys() - ALL_OPS)
    if missing or unknown:
        raise RuntimeError(
            f"{owner}: op table out of step with the IR"
            + (f"; no emitter for {', '.join(missing)}" if missing else "")
            + (f"; entries for ops the IR does not have: {', '.join(unknown)}"
               if unknown else ""))


class Op:
    """One operation. ``regions`` holds the nested blocks of ``for`` (body), ``if`` (then,
    else) and ``while`` (condition, body)."""

    __slots__ = ("name", "operands", "results", "attrs", "regions", "parent", "loc")

    def __init__(self, name: str, operands: list[Value], result_types: list[Type],
                 attrs: dict | None = None, regions: list[Block] | None = None, loc=None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self) for t in result_types]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        for r in self.regions:
            r.parent = self
        self.parent: Block | None = None
        self.loc = loc

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]

    @property
    def pure(self) -> bool:
        return self.name in PURE_OPS and not (self.name == "sreg"
                                              and self.attrs.get("name", "").startswith("clock"))

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for r in self.regions:
            yield from r.walk()

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


def const_value(v: Value) -> int | float | bool | None:
    """The constant behind ``v`` (the value attribute of its ``const`` op), or None."""
    op = v.owner
    return op.attrs["value"] if isinstance(op, Op) and op.name == "const" else None


class Block:
    """A straight-line list of ops with block arguments (loop induction and carried values)."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: list[Type] | None = None):
        self.args = [Value(t, self) for t in (arg_types or [])]
        self.ops: list[Op] = []
        self.parent: Op | None = None

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def walk(self) -> Iterator[Op]:
        for op in list(self.ops):
            yield from op.walk()

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].name == "yield" else None


@dataclass
class Param:
    name: str
    type: Type
    value: Value


@dataclass
class Function:
    """A kernel: parameters, one body block, and the launch facts codegen needs."""

    name: str
    params: list[Param]
    body: Block
    shared_bytes: int = 0
    threads: int = 32  # threads per block the kernel was lowered for
    warp_size: int = 8
    meta: dict = field(default_factory=dict)

    def walk(self) -> Iterator[Op]:
        yield from self.body.walk()


# ---------------------------------------------------------------------------------------
# Result typing of each op, used by the builder and the verifier.

def write_mask(op: Op) -> Value | None:
    """The i1 mask of a store or atomic (its last operand, after the pointer and the data
    operands: one value, or compare and value for ``atomic`` with ``op="cas"``)."""
    n = 3 if op.name == "atomic" and op.attrs.get("op") == "cas" else 2
    return op.operands[n] if len(op.operands) > n else None


def result_types(name: str, operands: list[Value], attrs: dict) -> list[Type]:
    t = [v.type for v in operands]
    if name in INT_BINARY:  # (a narrow operand's result may leave its range: no note)
        return [t[0].plain]
    if name in FLOAT_BINARY or name in FLOAT_UNARY or name == "ffma":
        return [F32]
    if name in ("i2f", "u2f"):
        return [F32]
    if name in ("f2i", "f2u"):
        return [I64 if attrs.get("bits") == 64 else I32]
    if name == "ptrtoint":  # (bits=32: this ISA's addresses, after i64 legalisation)
        return [I32 if attrs.get("bits") == 32 else I64]
    if name in ("sext", "zext"):
        return [I64]
    if name == "trunc":
        return [I32]
    if name == "bitcast":  # (f16/bf16: a half's 16 bits <-> a 16-bit integer's)
        return [_FLOATS.get(attrs.get("to"), I32)]
    if name == "inttoptr":
        return [ptr(attrs["elem"])]
    if name == "h2f":
        return [F32]
    if name == "f2h":
        return [_FLOATS[attrs["fmt"]]]
    if name in ("hadd", "hsub", "hmul"):
        return [t[0]]
    if name == "hpack":
        return [I32]
    if name == "mma":
        return [F32] * 4
    if name in ("icmp", "fcmp", "not"):
        return [I1]
    if name == "select":
        return [t[1]]
    if name in ("gep", "ptradd"):
        return [t[0]]
    if name in ("load",):
        return [t[0].pointee]
    if name == "atomic":
        return [t[0].pointee]
    if name == "shfl":
        return [t[0]]
    if name == "vote":
        return [I32 if attrs["mode"] == "ballot" else I1]
    if name == "sreg":
        return [I32]
    if name in ("store", "barrier", "exit", "fence", "yield", *ASYNC_COPY_OPS):
        return []
    raise IRError(f"no typing rule for op {name}")


# ---------------------------------------------------------------------------------------
# Printer

def _fmt_attr(v) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float):
        return repr(v)
    return str(v)


class Printer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def name(self, v: Value) -> str:
        if v.id not in self.names:
            self.names[v.id] = f"%{len(self.names)}"
        return self.names[v.id]

    def function(self, fn: Function) -> str:
        params = ", ".join(f"{self.name(p.value)} {p.name}: {p.type}" for p in fn.params)
        head = (f"kernel @{fn.name}({params}) threads={fn.threads} warp={fn.warp_size} "
                f"shared={fn.shared_bytes} {{")
        lines = [head]
        self.block(fn.body, lines, 1)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def block(self, b: Block, lines: list[str], depth: int) -> None:
        pad = "  " * depth
        if b.args:
            args = ", ".join(f"{self.name(a)}: {a.type}" for a in b.args)
            lines.append(f"{pad[:-2]}^({args}):")
        for op in b.ops:
            self.op(op, lines, depth)

    def op(self, op: Op, lines: list[str], depth: int) -> None:
        pad = "  " * depth
        res = ", ".join(self.name(r) for r in op.results)
        lhs = f"{res} = " if res else ""
        args = ", ".join(self.name(v) for v in op.operands)
        attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in sorted(op.attrs.items()))
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{pad}{lhs}{op.name}"
        if attrs:
            text += f" [{attrs}]"
        if args:
            text += f" {args}"
        if types:
            text += f" : {types}"
        if op.regions:
            lines.append(text + " {")
            for i, r in enumerate(op.regions):
                if i:
                    lines.append(f"{pad}}} {'do' if op.name == 'while' else 'else'} {{")
                self.block(r, lines, depth + 1)
            lines.append(f"{pad}}}")
        else:
            lines.append(text)


def print_function(fn: Function) -> str:
    """The readable text form (``simtgpu compile --emit ir``)."""
    return Printer().function(fn)


# ---------------------------------------------------------------------------------------
# Verifier

_OPERAND_RULES: dict[str, str] = {
    **{n: "ii" for n in ("mulhi", "mulhu")},
    **{n: "nn" for n in ("mul", "shl", "shr", "sra", "min", "max", "minu", "maxu", "add",
                         "sub")},
    **{n: "ff" for n in FLOAT_BINARY},
    **{n: "f" for n in FLOAT_UNARY},
    "ffma": "fff", "i2f": "n", "u2f": "n", "f2i": "f", "f2u": "f", "not": "p",
    "sext": "i", "zext": "i", "trunc": "l", "ptrtoint": "g", "inttoptr": "n",
}


def verify(fn: Function) -> None:
    """Check that ``fn`` is well-formed SSA; raise :class:`IRError` naming the first fault.

    Checks: every operand is defined before use in an enclosing scope, each value is defined
    once, operand types fit the op, result types follow the typing rules, ``for``/``if``
    regions have the right block arguments and end in a ``yield`` matching the results,
    ``yield`` appears only as a region terminator.
    """
    defined: set[int] = set()
    pr = Printer()
    for p in fn.params:
        defined.add(p.value.id)

    def fail(op: Op, msg: str) -> None:
        raise IRError(f"invalid IR at '{op.name}': {msg}")

    def define(op: Op | None, v: Value) -> None:
        if v.id in defined:
            raise IRError(f"value {pr.name(v)} defined twice"
                          + (f" (by '{op.name}')" if op else ""))
        defined.add(v.id)

    def check_block(b: Block, scope: set[int], expect_yield: list[Type] | None) -> None:
        local = set(scope)
        for a in b.args:
            define(None, a)
            local.add(a.id)
        for i, op in enumerate(b.ops):
            if op.name not in ALL_OPS:
                fail(op, "unknown op")
            for v in op.operands:
                if not isinstance(v, Value):
                    fail(op, f"operand {v!r} is not a value")
                if v.id not in local:
                    fail(op, f"operand {pr.name(v)} used before its definition or out of scope")
            check_types(op)
            if op.name == "yield":
                if i != len(b.ops) - 1 or expect_yield is None:
                    fail(op, "yield must be the last op of a for/if/while region")
                got = [v.type for v in op.operands]
                if got != expect_yield:
                    fail(op, f"yields ({', '.join(map(str, got))}) but the region expects "
                             f"({', '.join(map(str, expect_yield))})")
            for k, r in enumerate(op.regions):
                if op.name == "while" and k == 0:
                    want: list[Type] | None = [I1]  # the condition region yields the test
                elif op.name in ("for", "if", "while"):
                    want = [x.type for x in op.results]
                else:
                    want = None
                check_block(r, local, want)
            for v in op.results:
                define(op, v)
                local.add(v.id)
        if expect_yield is not None and b.terminator is None:
            raise IRError("a for/if/while region does not end with yield")

    def check_types(op: Op) -> None:
        ts = [v.type for v in op.operands]
        rule = _OPERAND_RULES.get(op.name)
        if rule is not None:
            if len(ts) != len(rule):
                fail(op, f"expects {len(rule)} operands, has {len(ts)}")
            for t, r in zip(ts, rule, strict=True):
                if r == "n":  # an integer of either width
                    if t not in (I32, I64):
                        fail(op, f"operand of type {t} where i32 or i64 is required")
                    continue
                if r == "g":
                    if not (t.is_ptr and t.space == "global"):
                        fail(op, f"operand of type {t} where a global pointer is required")
                    continue
                want = {"i": I32, "l": I64, "f": F32, "p": I1}[r]
                if t != want:
                    fail(op, f"operand of type {t} where {want} is required")
            if rule[:2] == "nn" and ts[0] != ts[1]:
                fail(op, f"operands of types {ts[0]} and {ts[1]}: both i32 or both i64")
        if op.name == "inttoptr" and ("elem" not in op.attrs or op.results[0].type.space
                                      != "global"):
            fail(op, "needs an elem attribute (a global pointer's element)")
        if op.name in ("and", "or", "xor"):
            if len(ts) != 2 or ts[0] != ts[1] or ts[0] not in (I32, I64, I1):
                fail(op, "needs two operands of the same type, i32, i64 or i1")
        if op.name == "const" and ("value" not in op.attrs or len(op.results) != 1):
            fail(op, "needs a value attribute and one result")
        if op.name in ("icmp", "fcmp"):
            conds = INT_CONDS if op.name == "icmp" else FLOAT_CONDS
            if op.attrs.get("cond") not in conds:
                fail(op, f"bad condition {op.attrs.get('cond')!r}")
            want = (ts[0] if ts and ts[0] == I64 else I32) if op.name == "icmp" else F32
            if len(ts) != 2 or any(t != want for t in ts):
                fail(op, f"compares two {want} values")
        if op.name in ("hadd", "hsub", "hmul", "hpack") and (
                len(ts) != 2 or ts[0] != ts[1] or not ts[0].is_half):
            fail(op, "needs two f16 or two bf16 operands")
        if op.name == "h2f" and (len(ts) != 1 or not ts[0].is_half):
            fail(op, "converts one f16 or bf16 operand")
        if op.name == "f2h" and (ts != [F32] or op.attrs.get("fmt") not in HALF_KINDS):
            fail(op, "converts one f32 operand to fmt f16 or bf16")
        if op.name == "mma":
            nb = op.attrs.get("nb")
            if op.attrs.get("fmt") not in HALF_KINDS or nb not in (2, 4) or \
                    ts != [I32] * (4 + nb) + [F32] * 4:
                fail(op, "needs fmt, nb and (4 A words, nb B words, 4 f32 C values)")
        if op.name == "select" and (len(ts) != 3 or ts[0] != I1 or ts[1] != ts[2]):
            fail(op, "select needs (i1, T, T)")
        if op.name in ("gep", "ptradd") and (len(ts) != 2 or not ts[0].is_ptr
                                             or ts[1] not in (I32, I64)):
            fail(op, f"{op.name} needs (ptr, i32 or i64)")
        if op.name == "load":
            if len(ts) not in (1, 2, 3) or not ts[0].is_ptr:
                fail(op, "load needs (ptr), (ptr, i1 mask) or (ptr, i1 mask, other)")
            if len(ts) >= 2 and ts[1] != I1:
                fail(op, "a load mask must be i1")
            if len(ts) == 3 and ts[2] != ts[0].pointee:
                fail(op, "masked load needs an i1 mask and an 'other' of the pointee type")
        if op.name in ("store", "atomic"):
            nd = 3 if op.name == "atomic" and op.attrs.get("op") == "cas" else 2
            if len(ts) not in (nd, nd + 1) or not ts[0].is_ptr or any(
                    t != ts[0].pointee for t in ts[1:nd]):
                what = "compare, value" if nd == 3 else "value"
                fail(op, f"{op.name} needs (ptr, {what} of the pointee type[, i1 mask])")
            if len(ts) == nd + 1 and ts[nd] != I1:
                fail(op, "mask must be i1")
        if op.name == "for":
            if len(ts) < 3 or any(t != I32 for t in ts[:3]):
                fail(op, "for needs i32 lower bound, upper bound and step")
            if len(op.regions) != 1:
                fail(op, "for has one body region")
            body = op.regions[0]
            want = [I32] + ts[3:]
            if [a.type for a in body.args] != want:
                fail(op, "body arguments must be (i32 induction, carried values...)")
            if [r.type for r in op.results] != ts[3:]:
                fail(op, "results must match the carried values")
        if op.name == "if":
            if len(ts) != 1 or ts[0] != I1 or len(op.regions) != 2:
                fail(op, "if needs one i1 condition and two regions")
        if op.name == "while":
            if len(op.regions) != 2:
                fail(op, "while has a condition region and a body region")
            if [r.type for r in op.results] != ts:
                fail(op, "results must match the carried values")
            for r in op.regions:
                if [a.type for a in r.args] != ts:
                    fail(op, "both regions take the carried values as arguments")
        if op.name not in ("for", "if", "const", "smem") and op.name in PURE_OPS | {
                "load", "atomic", "shfl", "vote", "sreg", "mma"}:
            want_res = result_types(op.name, op.operands, op.attrs)
            if [r.type for r in op.results] != want_res:
                fail(op, f"result types ({', '.join(str(r.type) for r in op.results)}) "
                         f"do not follow from the operands")

    check_block(fn.body, defined, None)


# ---------------------------------------------------------------------------------------
# Builder

class Builder:
    """Appends ops at an insertion block; the front end and the passes build IR through it."""

    def __init__(self, block: Block):
        self.block = block
        self.loc = None

    def op(self, name: str, operands: list[Value], attrs: dict | None = None,
           types: list[Type] | None = None, regions: list[Block] | None = None) -> Op:
        attrs = attrs or {}
        if types is None:
            types = result_types(name, operands, attrs)
        op = Op(name, operands, types, attrs, regions, loc=self.loc)
        self.block.append(op)
        return op

    def const(self, value: int | float | bool, type: Type) -> Value:
        if type == F32:
            value = float(value)
        elif type == I1:
            value = bool(value)
        elif type == I64:
            value = wrap_i64(int(value))
        else:
            value = int(value) & 0xFFFFFFFF
            if value >= 1 << 31:
                value -= 1 << 32
        return self.op("const", [], {"value": value}, [type]).result

    def __call__(self, name: str, *operands: Value, **attrs) -> Value:
        return self.op(name, list(operands), attrs).result
