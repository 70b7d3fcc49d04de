"""Instruction decoder (stage ``id``), generated from the ISA table.

One ``Case`` per row of ``isa.INSTRUCTIONS`` sets the control word (:data:`DECODED`): which
registers and predicates are read and written, how the immediate is formed, the semantic and
latency class. Anything that ``isa.decode`` would reject (reserved opcode or function code,
non-zero unused bits, predicate field > 7, bad predicate source, undefined special
register, misaligned register group) sets ``illegal``; so do the instructions a core names
as ``absent`` (it has no unit for them), so they fault instead of retiring a wrong value.
"""


from amaranth import Cat, Const, Module, Value
from amaranth.lib import wiring
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
    """Combinational decoder: ``word`` in, :data:`DECODED` control word out.

    Parameters
    ----------
    absent : frozenset of str
        Mnemonics of valid instructions this core does not implement; they decode as
        ``illegal`` (an ILLEGAL_INSTRUCTION fault when executed).
    """

    word: In(32)
    dec: Out(DECODED)

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

        m.d.comb += [
            d.guard.eq(field(w, PRED)),
            d.gneg.eq(field(w, PNEG)),
            d.rd.eq(field(w, RD)),
            d.rs1.eq(field(w, RS1)),
            d.rs2.eq(field(w, RS2)),
            d.rs3.eq(field(w, RS3)),
            d.fn.eq(fn),
        ]
        imm = immediates(w)
        key = Cat(fn, op)  # value = op << FN.width | fn
        with m.Switch(key):
            for instr in INSTRUCTIONS:
                pattern = f"{instr.opcode:0{OP.width}b}" + (
                    "-" * FN.width if instr.fn is None else f"{instr.fn:0{FN.width}b}")
                with m.Case(pattern):
                    self._case(m, instr, imm)
            with m.Default():
                m.d.comb += d.illegal.eq(1)
        return m

    def _case(self, m: Module, instr: Instr, imm: dict[str, Value]) -> None:
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
        if fmt.has("imm11"):
            m.d.comb += d.imm.eq(imm["imm11"])
        elif fmt.name == "S":
            m.d.comb += d.imm.eq(imm["simm"])
        elif fmt.has("imm16"):
            m.d.comb += d.imm.eq(imm["imm16s" if instr.operands[1].signed else "imm16u"])
        elif fmt.has("off21"):
            m.d.comb += d.imm.eq(imm["off"])
        if _reads_sreg(instr):
            m.d.comb += d.imm.eq(d.rs1)  # the special register's index

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
