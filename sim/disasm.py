"""Disassembly text for fault records: the assembler's disassembler when present.

The simulator only needs a readable one-liner; the assembler owns the real syntax, so its
``disassemble_word`` is used whenever it can be imported, and a plain operand formatter
(fields printed by operand kind) stands in otherwise.
"""

from __future__ import annotations

from simtgpu.isa import PT, Decoded, EncodingError, Kind, SReg, decode, pred_src_decode


def disassemble(word: int, pc: int) -> str:
    try:
        from simtgpu.assembler import disassemble_word
    except ImportError:
        return _plain(word, pc)
    try:
        return str(disassemble_word(word, pc))
    except Exception:  # the assembler's problem must not hide the fault being reported
        return _plain(word, pc)


def _pred(value: int) -> str:
    index, neg = pred_src_decode(value)
    return ("!" if neg else "") + ("pt" if index == PT else f"p{index}")


def _plain(word: int, pc: int) -> str:
    try:
        d: Decoded = decode(word)
    except EncodingError:
        return f".word 0x{word:08x}"
    parts = []
    for op in d.instr.operands:
        k = op.kind
        if k is Kind.REG:
            parts.append(f"r{getattr(d, op.fields[0])}")
        elif k is Kind.PRED:
            parts.append("pt" if d.rd & 7 == PT else f"p{d.rd & 7}")
        elif k is Kind.PRED_SRC:
            parts.append(_pred(getattr(d, op.fields[0])))
        elif k in (Kind.IMM, Kind.IMM16, Kind.PARAM):
            parts.append(str(d.imm))
        elif k is Kind.MEM:
            parts.append(f"[r{d.rs1}{d.imm:+d}]")
        elif k is Kind.MEM_REG:
            parts.append(f"[r{d.rs1}]")
        elif k is Kind.SREG:
            parts.append(SReg(d.rs1).asm_name if d.rs1 in SReg._value2member_map_ else
                         str(d.rs1))
        elif k is Kind.LABEL:
            parts.append(f"0x{pc + 4 * d.imm:x}")
    guard = ""
    if d.guarded:
        guard = f"@{'!' if d.pneg else ''}{'pt' if d.pred == PT else f'p{d.pred}'} "
    return guard + d.mnemonic + (" " + ", ".join(parts) if parts else "")
