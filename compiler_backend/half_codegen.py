"""Code for sub-word memory elements, the 16-bit floats and ``mma`` on both targets: the
emitters that isa_codegen.py and ptx_codegen.py take into their op tables.

This ISA has word loads and stores only, so an element narrower than a word (a 16-bit
float, an 8- or 16-bit integer, a bool byte) costs more than a word; one piece of code
serves every width: a load reads the aligned word, shifts the element to the top and back
down, logically (zero-extended: halves, unsigned integers, bool bytes) or arithmetically
(sign-extended: int8, int16), 7 instructions; a store replaces its bytes of the word with a
compare-and-swap loop (``atom.cas``/``atoms.cas``, about 12 instructions and one more round
per lane that lost a race; an integer is first masked to its width), because a plain
read-modify-write would lose a neighbour thread's store to the other bytes. PTX has 8- and
16-bit loads and stores (``ld.global.s8``/``u8``/``s16``/``u16``, ``st.global.u8``/``u16``)
into and from .b32 registers (:func:`ptx_mem_type`).

A 16-bit value lives in the low half of a 32-bit register with the high half zero, so the
packed ISA instructions (``hadd2.f16`` ...) and PTX's ``.f16x2`` forms compute it in the
low half and leave zero in the high half.

``mma`` reads and writes aligned groups of four registers. The register allocator gives
single registers, so each ``mma`` moves its operands into fixed groups (A r16..r19, B
r20.., C/D r24..r27) and its results out (about 14 moves around each ``mma``); values
live across such a sequence are allocated outside the registers of its groups
(``MI.clobbers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ir
from .errors import CompileError
from .ir import F16, Op
from .isa_instr import Label, Mem, Sym

if TYPE_CHECKING:
    from .isa_codegen import ISel
    from .ptx_codegen import PtxGen

MMA_A, MMA_B, MMA_C = 16, 20, 24
"""First registers of the fixed mma operand groups."""


def _fmt(t: ir.Type) -> str:
    return "f16" if t == F16 else "bf16"


# --- this ISA ------------------------------------------------------------------------------
def _byte_address(isel: ISel, p: ir.Value) -> ir.Value:
    """The byte address of pointer ``p`` in a register."""
    base, off = isel.addr(p)
    a = ir.Value(ir.I32)
    if isinstance(base, Sym):  # r0: a shared address known at compile time
        isel.emit("li", a, off, defs=[a])
    elif off:
        isel.emit("addi", a, base, off, defs=[a])
    else:
        return base
    return a


def subword(p: ir.Type) -> tuple[int, bool]:
    """(bits, signed) of the elements of pointer type ``p`` (narrower than a word): 16 for
    the 16-bit floats and integers, 8 for the 8-bit integers and bool bytes; only int8 and
    int16 are sign-extended in registers."""
    return 8 * p.elem_size, p.elem in ("i8", "i16")


def _word_and_shift(isel: ISel, a: ir.Value, width: int) -> tuple[ir.Value, ir.Value]:
    """(the aligned word address, the element's bit offset in it) of address ``a``: a
    multiple of ``width`` below 32 (0 or 16 for 16-bit elements, 0, 8, 16, 24 for bytes)."""
    w, sh = ir.Value(ir.I32), ir.Value(ir.I32)
    isel.emit("andi", w, a, -4, defs=[w])
    isel.emit("shli", sh, a, 3, defs=[sh])
    isel.emit("andi", sh, sh, 32 - width, defs=[sh])
    return w, sh


def isa_load(isel: ISel, op: Op) -> None:
    """``load`` of an element narrower than a word: the aligned word, shifted so that the
    element lands in the top bits, then down into the low bits, zero- or sign-extended; a
    masked load selects ``other`` where the mask is off."""
    p = op.operands[0]
    width, signed = subword(p.type)
    down = "srai" if signed else "shri"
    r = op.result
    m = "ldg" if p.type.space == "global" else "lds"
    g, neg = (None, False)
    if len(op.operands) >= 2:
        g, neg = isel.guard_of(op.operands[1])
        if g is None and neg:  # constant false mask: only 'other' (or nothing)
            if len(op.operands) == 3:
                isel.emit("mov", r, isel.reg(op.operands[2]), defs=[r])
            return
    a = _byte_address(isel, p)
    w, sh = _word_and_shift(isel, a, width)
    word = ir.Value(ir.I32)
    isel.emit(m, word, Mem(w, 0), defs=[word], guard=g, gneg=neg, partial=g is not None)
    up = ir.Value(ir.I32)
    isel.emit("xori", up, sh, 32 - width, defs=[up])  # 32 - width - sh: to the top bits
    isel.emit("shl", word, word, up, defs=[word])
    if len(op.operands) == 3 and g is not None:
        t = ir.Value(ir.I32)
        isel.emit(down, t, word, 32 - width, defs=[t])
        other = isel.reg(op.operands[2])
        a_, b_ = (other, t) if neg else (t, other)
        isel.emit("sel", r, a_, b_, g, defs=[r])
    else:
        isel.emit(down, r, word, 32 - width, defs=[r])


def isa_store(isel: ISel, op: Op, g, neg: bool) -> None:
    """``store`` of an element narrower than a word: a compare-and-swap loop on the aligned
    word that replaces this element's bytes and keeps the others (which other threads may be
    storing at the same time)."""
    p, val = op.operands[:2]
    width = 8 * p.type.elem_size
    prefix = "atom" if p.type.space == "global" else "atoms"
    load = "ldg" if p.type.space == "global" else "lds"
    a = _byte_address(isel, p)
    w, sh = _word_and_shift(isel, a, width)
    vs, keep, old, new, got = (ir.Value(ir.I32) for _ in range(5))
    isel.emit("li", keep, (1 << width) - 1, defs=[keep])
    if p.type.elem in ir.HALF_KINDS or p.type.elem == "i1":  # zero above the width
        isel.emit("shl", vs, isel.reg(val), sh, defs=[vs])
    else:  # an integer's upper bits: its sign, or whatever narrow.drop_unread_extensions left
        low = ir.Value(ir.I32)
        isel.emit("and", low, isel.reg(val), keep, defs=[low])
        isel.emit("shl", vs, low, sh, defs=[vs])
    isel.emit("shl", keep, keep, sh, defs=[keep])
    isel.emit("xori", keep, keep, -1, defs=[keep])
    done, skip, loop = isel.label("L_hdone"), isel.label("L_hskip"), isel.label("L_hcas")
    isel.emit("ssy", Label(done))
    if g is not None:
        isel.emit("bra", Label(skip), guard=g, gneg=not neg)
    isel.emit(load, old, Mem(w, 0), defs=[old])
    start = len(isel.code)
    isel.emit("label", Label(loop))
    isel.emit("and", new, old, keep, defs=[new])
    isel.emit("or", new, new, vs, defs=[new])
    isel.emit(f"{prefix}.cas", got, Mem(w, 0), old, new, defs=[got])
    lost = ir.Value(ir.I1)
    isel.emit("isetp.ne", lost, got, old, defs=[lost])
    isel.emit("mov", old, got, defs=[old])
    isel.emit("bra", Label(loop), guard=lost)
    isel.loops.append((start, len(isel.code) - 1))
    isel.emit("label", Label(skip))
    isel.emit("sync")
    isel.emit("label", Label(done))


def isa_half_op(isel: ISel, op: Op) -> None:
    """h2f, f2h, hadd/hsub/hmul and hpack on this ISA."""
    r = op.result
    args = [isel.reg(x) for x in op.operands]
    n = op.name
    if n == "h2f":
        isel.emit("hcvt.hl2f" if op.operands[0].type == F16 else "hcvt.bl2f", r, *args,
                  defs=[r])
    elif n == "f2h":
        isel.emit("hcvt.f2h" if op.attrs["fmt"] == "f16" else "hcvt.f2b", r, *args, defs=[r])
    elif n in ("hadd", "hsub", "hmul"):
        isel.emit(f"{n}2.{_fmt(op.operands[0].type)}", r, *args, defs=[r])
    elif n == "hpack":
        t = ir.Value(ir.I32)
        isel.emit("shli", t, args[1], 16, defs=[t])
        isel.emit("or", r, args[0], t, defs=[r])
    else:
        raise AssertionError(n)


def isa_mma(isel: ISel, op: Op) -> None:
    """``mma`` through the fixed groups r16 (A), r20 (B), r24 (C and D)."""
    nb = op.attrs["nb"]
    groups = [MMA_A + i for i in range(4)] + [MMA_B + i for i in range(nb)] + \
        [MMA_C + i for i in range(4)]
    srcs = [isel.reg(v) for v in op.operands]  # constants materialise before the moves
    seq = [isel.emit("mov", Sym(f"r{reg}"), src) for reg, src in zip(groups, srcs, strict=True)]
    seq.append(isel.emit(f"mma.{op.attrs['fmt']}", Sym(f"r{MMA_C}"), Sym(f"r{MMA_A}"),
                         Sym(f"r{MMA_B}"), Sym(f"r{MMA_C}")))
    seq += [isel.emit("mov", d, Sym(f"r{MMA_C + i}"), defs=[d])
            for i, d in enumerate(op.results)]
    for mi in seq:
        mi.clobbers = frozenset(groups)


# --- PTX -----------------------------------------------------------------------------------
def ptx_mem_type(p: ir.Type) -> str:
    """The PTX type of a load or store of an element of pointer type ``p`` narrower than a
    word: ``s8``/``s16`` sign-extend into the .b32 register, ``u8``/``u16`` zero-extend
    (stores take the register's low bits either way)."""
    width, signed = subword(p)
    return f"{'s' if signed else 'u'}{width}"


# PTX sequences of the half ops by (op, format): {d} the result, {a} {b} the operands, {h}
# a .b16 scratch, {t} {k} .b32 scratch. bf16 add, subtract and multiply are fma.rn.bf16x2
# (sm_80 has no add.bf16x2): a * 1 + b, a * 1 + (-b), a * b + (-0) (0x00008000: -0 low, so a
# zero product keeps its sign, +0 high), each one rounding as on the ISA.
_BF16_ONE = "0x3F803F80"  # 1.0 in both bf16 halves
_PTX_HALF: dict[tuple[str, str], tuple[str, ...]] = {
    ("h2f", "f16"): ("cvt.u16.u32 {h}, {a}", "cvt.f32.f16 {d}, {h}"),
    ("h2f", "bf16"): ("shl.b32 {t}, {a}, 16", "mov.b32 {d}, {t}"),
    **{("f2h", f): (f"cvt.rn.{f}.f32 {{h}}, {{a}}", "cvt.u32.u16 {d}, {h}")
       for f in ("f16", "bf16")},
    **{(f"h{n}", "f16"): (f"{n}.rn.f16x2 {{d}}, {{a}}, {{b}}",) for n in ("add", "sub", "mul")},
    ("hadd", "bf16"): (f"mov.b32 {{k}}, {_BF16_ONE}", "fma.rn.bf16x2 {d}, {a}, {k}, {b}"),
    ("hsub", "bf16"): ("xor.b32 {t}, {b}, 0x80008000", f"mov.b32 {{k}}, {_BF16_ONE}",
                       "fma.rn.bf16x2 {d}, {a}, {k}, {t}"),
    ("hmul", "bf16"): ("mov.b32 {k}, 0x00008000", "fma.rn.bf16x2 {d}, {a}, {b}, {k}"),
    **{("hpack", f): ("shl.b32 {t}, {b}, 16", "or.b32 {d}, {a}, {t}") for f in ("f16", "bf16")},
}


def ptx_half_op(gen: PtxGen, op: Op) -> None:
    """h2f, f2h, hadd/hsub/hmul and hpack in PTX (values in .b32 registers, low half)."""
    fmt = op.attrs["fmt"] if op.name == "f2h" else _fmt(op.operands[0].type)
    names = {"d": gen.r(op.result)}
    names.update(zip("ab"[:len(op.operands)], (gen.r(x) for x in op.operands), strict=True))
    for line in _PTX_HALF[op.name, fmt]:
        for scratch, cls in (("h", "h"), ("t", "r"), ("k", "r")):
            if "{" + scratch + "}" in line and scratch not in names:
                names[scratch] = gen.new(cls)
        gen.emit(line.format(**names))


def ptx_mma(gen: PtxGen, op: Op) -> None:
    """``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32``: this ISA's
    fragments at 32 lanes are PTX's, register for register."""
    if gen.fn.warp_size != 32 or op.attrs["nb"] != 2:
        raise CompileError("PTX mma needs the 32-lane m16n8k16 fragments")
    fmt = op.attrs["fmt"]
    v = [gen.r(x) for x in op.operands]
    d = [gen.r(x) for x in op.results]
    gen.emit(f"mma.sync.aligned.m16n8k16.row.col.f32.{fmt}.{fmt}.f32 "
             f"{{{', '.join(d)}}}, {{{', '.join(v[:4])}}}, {{{', '.join(v[4:6])}}}, "
             f"{{{', '.join(v[6:10])}}}")
