"""Words -> assembly text that re-assembles to the same words.

Operands are printed by their ``isa`` kinds; branch targets are absolute byte addresses
(``0x40``) or, when a symbol names the target, the symbol. Words that do not decode are
printed as ``.word 0x........`` so the text still assembles to identical bytes.
"""

from __future__ import annotations

import struct

from simtgpu.isa import PT, Decoded, EncodingError, Kind, SReg, decode, pred_src_decode

from .objfile import KernelInfo, ObjectFile, ObjectFormatError, Relocation

_SREG_NAMES = {int(s): s.asm_name for s in SReg}


def _pred(index: int) -> str:
    return "pt" if index == PT else f"p{index}"


def _hex(value: int) -> str:
    return f"-0x{-value:x}" if value < 0 else f"0x{value:x}"


def _operands(d: Decoded, pc: int, symbols: dict[int, str] | None,
              params: dict[int, str] | None) -> list[str] | None:
    """Operand strings, or None when the word cannot be written as this instruction."""
    out = []
    for op in d.instr.operands:
        f = op.fields[0]
        raw = getattr(d, f) if f in ("rd", "rs1", "rs2", "rs3") else d.imm
        k = op.kind
        if k is Kind.REG:
            out.append(f"r{raw}")
        elif k is Kind.PRED:
            out.append(_pred(raw))
        elif k is Kind.PRED_SRC:
            idx, neg = pred_src_decode(raw)
            out.append(("!" if neg else "") + _pred(idx))
        elif k is Kind.MEM:
            off = d.imm
            out.append(f"[r{d.rs1}{'+' if off > 0 else '-'}{abs(off)}]" if off else f"[r{d.rs1}]")
        elif k is Kind.MEM_REG:
            out.append(f"[r{d.rs1}]")
        elif k is Kind.SREG:
            if raw not in _SREG_NAMES:
                return None
            out.append(_SREG_NAMES[raw])
        elif k is Kind.LABEL:
            target = pc + 4 * d.imm
            out.append(symbols[target] if symbols and target in symbols else _hex(target))
        elif k is Kind.PARAM and params and d.imm in params:
            out.append(params[d.imm])
        elif k is Kind.IMM16 and not op.signed:
            out.append(_hex(d.imm))
        else:  # IMM, signed IMM16, PARAM
            out.append(str(d.imm))
    return out


def disassemble_word(word: int, pc: int = 0, symbols: dict[int, str] | None = None,
                     params: dict[int, str] | None = None) -> str:
    """One instruction, e.g. ``@!p1 ffma r1, r2, r3, r4``; an illegal word as ``.word``.

    ``symbols`` names branch targets by address; ``params`` names ldparam byte offsets.
    """
    word &= 0xFFFFFFFF
    try:
        d = decode(word)
    except EncodingError as e:
        return f".word 0x{word:08x}  ; {e}"
    ops = _operands(d, pc, symbols, params)
    if ops is None:
        return f".word 0x{word:08x}  ; illegal instruction (unknown special register)"
    guard = ""
    if d.guarded:
        guard = f"@{'!' if d.pneg else ''}{_pred(d.pred)} "
    text = guard + d.mnemonic
    return text + (" " + ", ".join(ops) if ops else "")


def disassemble_lines(code: bytes, base: int = 0,
                      labels: dict[int, list[str]] | None = None,
                      comments: bool = True) -> list[str]:
    """Lines of disassembly; ``labels`` maps a byte address to the labels placed there."""
    if len(code) % 4:
        raise ObjectFormatError(f"code length {len(code)} is not a multiple of 4")
    labels = labels or {}
    first = {addr: names[0] for addr, names in labels.items() if names}
    lines = []
    for i, (word,) in enumerate(struct.iter_unpack("<I", code)):
        pc = base + 4 * i
        for name in labels.get(pc, ()):
            lines.append(f"{name}:")
        text = disassemble_word(word, pc, first)
        if comments and not text.startswith(".word"):
            text = f"{text:<40}; {pc:04x}: {word:08x}"
        lines.append("        " + text)
    end = base + len(code)
    for name in labels.get(end, ()):
        lines.append(f"{name}:")
    return lines


def disassemble(code: bytes, base: int = 0, symbols: dict[int, str] | None = None) -> str:
    """Disassemble a code blob; ``assemble(disassemble(code)).code == code`` when base is 0."""
    labels = {addr: [name] for addr, name in (symbols or {}).items()}
    return "\n".join(disassemble_lines(code, base, labels)) + "\n"


def _guard_of(word: int) -> tuple[int, int]:
    return (word >> 7) & 7, (word >> 10) & 1


def _la_pair(obj: ObjectFile, pc: int, hi: dict[int, Relocation], lo: dict[int, Relocation]
             ) -> int | None:
    """The data offset when the words at pc, pc+4 are exactly what ``la`` emits, else None."""
    r1, r2 = hi.get(pc), lo.get(pc + 4)
    if r1 is None or r2 is None or r1.data_offset != r2.data_offset:
        return None
    w1, w2 = struct.unpack_from("<II", obj.code, pc)
    try:
        d1, d2 = decode(w1), decode(w2)
    except EncodingError:
        return None
    off = r1.data_offset
    if (d1.mnemonic, d2.mnemonic) != ("lui", "lli") or d1.rd != d2.rd \
            or _guard_of(w1) != _guard_of(w2) or d1.imm != off >> 16 or d2.imm != off & 0xFFFF:
        return None
    return off


def _data_ref(obj: ObjectFile, offset: int) -> str | None:
    best = None
    for s in obj.symbols.values():
        if s.section == "data" and s.offset <= offset and (best is None or s.offset > best.offset):
            best = s
    if best is None:
        return None
    delta = offset - best.offset
    return best.name + (f"+{delta}" if delta else "")


def _data_lines(obj: ObjectFile) -> list[str]:
    labels: dict[int, list[str]] = {}
    for s in obj.symbols.values():
        if s.section == "data":
            labels.setdefault(s.offset, []).append(s.name)
    lines = ["        .data", f"        .align {obj.data_align}"]
    data = obj.data
    cuts = sorted({0, len(data), *labels})
    for start, stop in zip(cuts, cuts[1:] + [None], strict=True):
        for name in labels.get(start, ()):
            lines.append(f"{name}:")
        if stop is None:
            break
        pos = start
        while pos < stop:
            if pos % 4 or stop - pos < 4:
                n = min(stop - pos, -pos % 4 or 4)
                lines.append("        .byte " + ", ".join(f"0x{b:02x}" for b in data[pos:pos + n]))
                pos += n
                continue
            n = (stop - pos) // 4 * 4
            zeros = (n - len(data[pos:pos + n].lstrip(b"\0"))) // 4 * 4
            if zeros >= 16:
                lines.append(f"        .space {zeros}")
                pos += zeros
                continue
            words = struct.unpack_from(f"<{min(n // 4, 4)}I", data, pos)
            lines.append("        .word " + ", ".join(f"0x{w:08x}" for w in words))
            pos += 4 * len(words)
    return lines


def disassemble_object(obj: ObjectFile, comments: bool = True) -> str:
    """A whole object as source: kernels' metadata as directives, code, relocated ``la``
    pairs, data. Assembling the text gives back an equal object (see docs/assembly.md)."""
    code_labels: dict[int, list[str]] = {}
    for s in obj.symbols.values():
        if s.section == "code":
            code_labels.setdefault(s.offset, []).append(s.name)
    targets = {off: names[0] for off, names in code_labels.items()}
    starts = {k.entry: k for k in obj.kernels.values()}
    hi = {r.code_offset: r for r in obj.relocations if r.kind == "hi16"}
    lo = {r.code_offset: r for r in obj.relocations if r.kind == "lo16"}
    lines = ["        .text"]
    current: KernelInfo | None = None
    params: dict[int, str] = {}
    pc = 0
    while pc <= len(obj.code):
        if current is not None and pc == current.end:
            lines.append("        .end")
            current, params = None, {}
        if pc in starts and current is None:
            current = starts[pc]
            params = {p.offset: p.name for p in current.params}
            lines.append(f"        .kernel {current.name}")
            lines += [f"        .param {p.name}, {p.type}" for p in current.params]
            if current.shared_bytes:
                lines.append(f"        .shared {current.shared_bytes}")
            lines.append(f"        .regs {current.regs}")
        for name in code_labels.get(pc, ()):
            lines.append(f"{name}:")
        if pc == len(obj.code):
            break
        (word,) = struct.unpack_from("<I", obj.code, pc)
        off = _la_pair(obj, pc, hi, lo)
        ref = _data_ref(obj, off) if off is not None else None
        if ref is not None and not code_labels.get(pc + 4):
            d = decode(word)
            guard = f"@{'!' if d.pneg else ''}{_pred(d.pred)} " if d.guarded else ""
            text = f"{guard}la r{d.rd}, {ref}"
            if comments:
                text = f"{text:<40}; {pc:04x}: {word:08x} (+ lli)"
            lines.append("        " + text)
            pc += 8
            continue
        text = disassemble_word(word, pc, targets, params)
        if comments and not text.startswith(".word"):
            text = f"{text:<40}; {pc:04x}: {word:08x}"
        lines.append("        " + text)
        pc += 4
    if (obj.data or obj.data_align != 4
            or any(s.section == "data" for s in obj.symbols.values())):
        lines += _data_lines(obj)
    return "\n".join(lines) + "\n"
