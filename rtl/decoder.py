"""Instruction decoder (stage ``id``), generated from the ISA table.

One ``Case`` per row of ``isa.INSTRUCTIONS`` sets the control word (:data:`DECODED`): which
registers and predicates are read and written, how the immediate is formed, the semantic and
latency class. Anything that ``isa.decode`` would reject (reserved opcode or function code,
non-zero unused bits, predicate field > 7, bad predicate source, undefined special
register) sets ``illegal``.
"""


from amaranth import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import INSTRUCTIONS, PT, Instr, Kind, SReg, used_fields
from simtgpu.isa.formats import FN, OP, PNEG, PRED, RD, RS1, RS2, RS3

from .isa_consts import IID_BY_ENCODING, InstrId, Lat, Sem
from .layouts import DECODED

CTRL_MNEMONICS = frozenset({"bra", "ssy", "sync", "exit", "bar"})
"""Instructions after which a warp fetches nothing until ex1 has resolved them."""


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
    use_imm = fmt.name in ("I", "U") or instr.mnemonic == "s2r"
    return {
        "rd_rs1": reads.get("rs1", 0), "rd_rs2": reads.get("rs2", 0),
        "rd_rs3": reads.get("rs3", 0),
        "rd_ps1": pred_reads.get("rs1", 0), "rd_ps2": pred_reads.get("rs2", 0),
        "rd_ps3": pred_reads.get("rs3", 0),
        "rd_rd": int(instr.mnemonic == "lli"),
        "wr_reg": int(instr.writes_reg), "wr_pred": int(instr.writes_pred),
        "use_imm": int(use_imm and fmt.name != "B"),
        "ctrl": int(instr.mnemonic in CTRL_MNEMONICS),
    }


class Decoder(wiring.Component):
    """Combinational decoder: ``word`` in, :data:`DECODED` control word out."""

    word: In(32)
    dec: Out(DECODED)

    def elaborate(self, platform) -> Module:
        m = Module()
        w = self.word
        d = self.dec
        op = w[OP.lo:OP.hi + 1]
        fn = w[FN.lo:FN.hi + 1]
        rd = w[RD.lo:RD.hi + 1]

        m.d.comb += [
            d.guard.eq(w[PRED.lo:PRED.hi + 1]),
            d.gneg.eq(w[PNEG.lo]),
            d.rd.eq(rd),
            d.rs1.eq(w[RS1.lo:RS1.hi + 1]),
            d.rs2.eq(w[RS2.lo:RS2.hi + 1]),
            d.rs3.eq(w[RS3.lo:RS3.hi + 1]),
            d.fn.eq(fn),
        ]
        key = Cat(fn, op)  # value = op << 5 | fn
        with m.Switch(key):
            for instr in INSTRUCTIONS:
                pattern = f"{instr.opcode:07b}" + (
                    f"{instr.fn:05b}" if instr.fn is not None else "-----")
                with m.Case(pattern):
                    self._case(m, instr)
            with m.Default():
                m.d.comb += d.illegal.eq(1)
        return m

    def _case(self, m: Module, instr: Instr) -> None:
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
            m.d.comb += d.wr_pred.eq(d.rd[:3] != PT)

        fmt = instr.fmt
        if fmt.has("imm11"):
            m.d.comb += d.imm.eq(self._sig("imm11"))
        elif fmt.name == "S":
            m.d.comb += d.imm.eq(self._sig("simm"))
        elif fmt.has("imm16"):
            m.d.comb += d.imm.eq(self._sig("imm16s" if instr.operands[1].signed else "imm16u"))
        elif fmt.has("off21"):
            m.d.comb += d.imm.eq(self._sig("off"))
        if instr.mnemonic == "s2r":
            m.d.comb += d.imm.eq(d.rs1)

        used = 0
        for f in used_fields(instr):
            used |= f.mask << f.lo
        bad = [(w & (~used & 0xFFFF_FFFF)) != 0]
        for op in instr.operands:
            if op.kind is Kind.PRED and op.is_dst:
                bad.append(w[RD.lo + 3:RD.hi + 1] != 0)
            if op.kind is Kind.PRED_SRC:
                f = {"rs1": RS1, "rs2": RS2, "rs3": RS3}[op.fields[0]]
                bad.append(w[f.lo + 3])
            if op.kind is Kind.SREG:
                f = {"rs1": RS1, "rs2": RS2, "rs3": RS3}[op.fields[0]]
                value = w[f.lo:f.hi + 1]
                bad.append(~_any([value == s.value for s in SReg]))
        m.d.comb += d.illegal.eq(_any(bad))

    def _sig(self, name: str):
        """The immediate candidates are computed once in elaborate; fetch them by name."""
        w = self.word
        return {
            "imm11": w[21:32].as_signed(),
            "simm": Cat(w[11:16], w[26:32]).as_signed(),
            "imm16s": w[16:32].as_signed(),
            "imm16u": w[16:32],
            "off": Cat(0, 0, w[11:32]).as_signed(),
        }[name]


def _any(terms):
    out = terms[0]
    for t in terms[1:]:
        out = out | t
    return out
