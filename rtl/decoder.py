"""Instruction decoder, generated from the ISA table.

One ``Case`` per row of ``isa.INSTRUCTIONS`` sets the control word (:data:`DECODED`): which
registers and predicates are read and written, how the immediate is formed, the semantic and
latency class.

The core decodes an instruction as it is written into instruction memory, not as it is
fetched (predecoding): each word is stored with the parts of its control word that are not
slices of it (:data:`PREDECODED`: the class, the flags, ``illegal`` and which immediate it
takes), and ``id`` rebuilds the control word from the two (:func:`decoded`) with a few
multiplexers. The table's logic, about seven LUTs deep on an FPGA, then never follows the
instruction memory's slow read in one cycle.

Anything that ``isa.decode`` would reject (reserved opcode or function code, non-zero unused
bits, predicate field > 7, bad predicate source, undefined special register, misaligned
register group) sets ``illegal``; so do the instructions a core names
as ``absent`` (it has no unit for them), so they fault instead of retiring a wrong value.
"""


from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import INSTRUCTIONS, PT, Instr, Kind, SReg, used_fields
from simtgpu.isa.abi import INSTR_BYTES
from simtgpu.isa.formats import (
    FN,
    IMM11,
    IMM16,
    OFF21,
    OP,
    PNEG,
    PRED,
    RD,
    RS1,
    RS2,
    RS3,
    SIMM_PARTS,
    Field,
)
from simtgpu.isa.operands import PRED_INDEX_BITS, PRED_SRC_RESERVED_BIT

from .isa_consts import IID_BY_ENCODING, InstrId, Lat, Sem
from .layouts import DECODED

_SRC_FIELDS: dict[str, Field] = {f.name: f for f in (RS1, RS2, RS3)}


class ImmKind(enum.Enum, shape=3):
    """Which immediate of the word an instruction takes (:func:`immediates`); NONE is zero."""

    NONE = 0
    IMM11 = 1
    SIMM = 2
    IMM16S = 3
    IMM16U = 4
    OFF = 5
    SREG = 6  # the special register's index, in the rs1 field


# the control word's fields that are bits of the instruction word as they stand
_SLICES: dict[str, Field] = {"guard": PRED, "gneg": PNEG, "rd": RD, "rs1": RS1, "rs2": RS2,
                             "rs3": RS3, "fn": FN}

_KEPT = [name for name, _ in DECODED if name not in _SLICES and name not in ("imm", "illegal")]

PREDECODED = data.StructLayout({
    **{name: DECODED.members[name] for name in _KEPT},
    "legal": 1,
    "imm_kind": ImmKind,
})
"""What instruction memory keeps beside each word: the control word less its slices of the
word and the immediate, which :func:`decoded` takes from the word again. ``illegal`` is kept
inverted, so that an entry never written (all zeros) reads as an illegal instruction, as the
word zero is, with the decoder's every other field of an illegal word (zero)."""


def field(word: Value, f: Field) -> Value:
    """The bits of ``f`` in ``word``, signed when the field is."""
    bits = word[f.lo:f.hi + 1]
    return bits.as_signed() if f.signed else bits


def immediates(word: Value) -> dict[str, Value]:
    """The immediate candidates of ``word`` by name, sliced where isa.formats puts them."""
    return {
        "imm11": field(word, IMM11),
        "simm": Cat(*(field(word, f) for f in SIMM_PARTS)).as_signed(),
        "imm16s": field(word, IMM16).as_signed(),
        "imm16u": field(word, IMM16),
        # off21 counts instructions; the pc counts bytes
        "off": Cat(Const(0, (INSTR_BYTES - 1).bit_length()), field(word, OFF21)).as_signed(),
    }


def immediate(word: Value, kind: Value) -> Value:
    """The 32-bit immediate of ``word`` that ``kind`` (an :class:`ImmKind`) names."""
    imm = immediates(word)
    choices = {ImmKind.IMM11: imm["imm11"], ImmKind.SIMM: imm["simm"],
               ImmKind.IMM16S: imm["imm16s"], ImmKind.IMM16U: imm["imm16u"],
               ImmKind.OFF: imm["off"], ImmKind.SREG: field(word, RS1)}
    out = Const(0, 32)
    for k, v in choices.items():
        out = Mux(kind == k, v, out)
    return out[:32]


def decoded(m: Module, word: Value, pre: Value, name: str = "dec") -> data.View:
    """The control word of ``word`` from its predecoded bits ``pre`` (:data:`PREDECODED`):
    what :class:`Decoder` gives for ``word``, bit for bit."""
    p = data.View(PREDECODED, pre)
    dec = Signal(DECODED, name=name)
    for fname, fld in _SLICES.items():
        m.d.comb += dec[fname].eq(field(word, fld))
    m.d.comb += [dec[fname].eq(p[fname]) for fname in _KEPT]
    m.d.comb += [dec.illegal.eq(~p.legal), dec.imm.eq(immediate(word, p.imm_kind))]
    return dec


def _reads_sreg(instr: Instr) -> bool:
    return any(op.kind is Kind.SREG for op in instr.operands)


def _static(instr: Instr) -> dict:
    """Control-word fields that depend only on the instruction, not on the word."""
    reads: dict[str, int] = {}
    pred_reads: dict[str, int] = {}
    for op in instr.operands:
        if op.is_dst:
            continue
        if op.kind in (Kind.REG, Kind.MEM, Kind.MEM_REG):
            reads[op.fields[0]] = 1
        elif op.kind is Kind.PRED_SRC:
            pred_reads[op.fields[0]] = 1
    fmt = instr.fmt
    # the S-format offset is part of the address, operand b of a store is its data
    use_imm = fmt.name in ("I", "U") or _reads_sreg(instr)
    return {
        "rd_rs1": reads.get("rs1", 0), "rd_rs2": reads.get("rs2", 0),
        "rd_rs3": reads.get("rs3", 0),
        "rd_ps1": pred_reads.get("rs1", 0), "rd_ps2": pred_reads.get("rs2", 0),
        "rd_ps3": pred_reads.get("rs3", 0),
        "rd_rd": int(any(op.is_dst and op.reads_old for op in instr.operands)),
        "wr_reg": int(instr.writes_reg), "wr_pred": int(instr.writes_pred),
        "use_imm": int(use_imm),
        "ctrl": int(instr.sets_pc),
    }


class Decoder(wiring.Component):
    """Combinational decoder: ``word`` in, :data:`DECODED` control word out, and the part
    of it that instruction memory keeps beside the word (``pre``, :data:`PREDECODED`).

    Parameters
    ----------
    absent : frozenset of str
        Mnemonics of valid instructions this core does not implement; they decode as
        ``illegal`` (an ILLEGAL_INSTRUCTION fault when executed).
    """

    word: In(32)
    dec: Out(DECODED)
    pre: Out(PREDECODED)

    def __init__(self, absent: frozenset[str] = frozenset()) -> None:
        unknown = set(absent) - {i.mnemonic for i in INSTRUCTIONS}
        if unknown:
            raise ValueError(f"absent names no instruction: {', '.join(sorted(unknown))}")
        self._absent = frozenset(absent)
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        w = self.word
        d = self.dec
        op = field(w, OP)
        fn = field(w, FN)

        m.d.comb += [d[name].eq(field(w, fld)) for name, fld in _SLICES.items()]
        kind = Signal(ImmKind)
        key = Cat(fn, op)  # value = op << FN.width | fn
        with m.Switch(key):
            for instr in INSTRUCTIONS:
                pattern = f"{instr.opcode:0{OP.width}b}" + (
                    "-" * FN.width if instr.fn is None else f"{instr.fn:0{FN.width}b}")
                with m.Case(pattern):
                    self._case(m, instr, kind)
            with m.Default():
                m.d.comb += d.illegal.eq(1)
        m.d.comb += [d.imm.eq(immediate(w, kind)), self.pre.imm_kind.eq(kind),
                     self.pre.legal.eq(~d.illegal)]
        m.d.comb += [self.pre[name].eq(d[name]) for name in _KEPT]
        return m

    def _case(self, m: Module, instr: Instr, kind: Signal) -> None:
        d = self.dec
        w = self.word
        st = _static(instr)
        m.d.comb += [
            d.iid.eq(InstrId(IID_BY_ENCODING[(instr.opcode, instr.fn)])),
            d.sem.eq(Sem[instr.sem.name]),
            d.lat.eq(Lat[instr.lat.name]),
        ]
        for name, value in st.items():
            if name in ("wr_reg", "wr_pred"):
                continue
            m.d.comb += d[name].eq(value)
        if st["wr_reg"]:
            m.d.comb += d.wr_reg.eq(d.rd != 0)
        if st["wr_pred"]:
            m.d.comb += d.wr_pred.eq(d.rd[:PRED_INDEX_BITS] != PT)

        fmt = instr.fmt
        if _reads_sreg(instr):
            m.d.comb += kind.eq(ImmKind.SREG)
        elif fmt.has("imm11"):
            m.d.comb += kind.eq(ImmKind.IMM11)
        elif fmt.name == "S":
            m.d.comb += kind.eq(ImmKind.SIMM)
        elif fmt.has("imm16"):
            m.d.comb += kind.eq(ImmKind.IMM16S if instr.operands[1].signed else ImmKind.IMM16U)
        elif fmt.has("off21"):
            m.d.comb += kind.eq(ImmKind.OFF)

        used = 0
        for f in used_fields(instr):
            used |= f.mask << f.lo
        bad = [(w & (~used & 0xFFFF_FFFF)) != 0]
        for op in instr.operands:
            if op.kind is Kind.PRED and op.is_dst:
                bad.append(field(w, RD)[PRED_INDEX_BITS:] != 0)
            if op.kind is Kind.PRED_SRC:
                bad.append(field(w, _SRC_FIELDS[op.fields[0]])[PRED_SRC_RESERVED_BIT])
            if op.kind is Kind.SREG:
                value = field(w, _SRC_FIELDS[op.fields[0]])
                bad.append(~_any([value == s.value for s in SReg]))
            if op.align > 1:
                reg = field(w, {"rd": RD, **_SRC_FIELDS}[op.fields[0]])
                bad.append(reg[:(op.align - 1).bit_length()] != 0)
        if instr.mnemonic in self._absent:
            bad = [Const(1)]
        m.d.comb += d.illegal.eq(_any(bad))


def _any(terms):
    out = terms[0]
    for t in terms[1:]:
        out = out | t
    return out
