"""docs/isa.md, generated from the ISA tables (``simtgpu isa --markdown`` / ``make docs``)."""

from __future__ import annotations

from .instructions import Instr
from .operands import Kind, Operand


def operand_syntax(op: Operand) -> str:
    """How one operand slot is named in syntax lines: ``rd``, ``ps3``, ``[rs1+imm]``..."""
    f = op.fields[0]
    if op.kind is Kind.REG:
        return f
    if op.kind is Kind.PRED:
        return "pd"
    if op.kind is Kind.PRED_SRC:
        return "p" + f[1:] if f != "rd" else "p"
    return {Kind.IMM: "imm", Kind.IMM16: "imm16", Kind.MEM: "[rs1+imm]",
            Kind.MEM_REG: "[rs1]", Kind.SREG: "sreg", Kind.LABEL: "target",
            Kind.PARAM: "param"}[op.kind]


def syntax(instr: Instr) -> str:
    """The assembly syntax of an instruction, e.g. ``addi rd, rs1, imm``."""
    ops = ", ".join(operand_syntax(o) for o in instr.operands)
    return f"{instr.mnemonic} {ops}" if ops else instr.mnemonic
