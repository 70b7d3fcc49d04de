"""Parse one instruction's operands by their ``isa`` kinds and encode the word.

Nothing here knows particular mnemonics: the operand kinds and fields of
``simtgpu.isa.BY_MNEMONIC`` drive parsing, range checks and field placement.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from simtgpu.isa import NUM_REGS, SREG_BY_NAME, EncodingError, Instr, Kind, encode, pred_src_encode
from simtgpu.isa.formats import IMM11, OFF21
from simtgpu.isa.markdown import syntax

from .expr import Value
from .lexer import PRED_NAMES, AsmError, Token

REG_NAME = re.compile(r"r(\d+)$")


# evaluate(tokens, params_in_scope) -> Value
Evaluator = Callable[[list[Token], bool], Value]


def is_register_name(name: str) -> bool:
    return REG_NAME.match(name) is not None or name in PRED_NAMES


def _describe(toks: list[Token]) -> str:
    return " ".join(t.text for t in toks) if len(toks) < 6 else toks[0].text + " ..."


def parse_reg(toks: list[Token]) -> int:
    t = toks[0]
    if t.kind == "ident":
        m = REG_NAME.match(t.text)
        if m:
            n = int(m.group(1))
            if n >= NUM_REGS or (len(m.group(1)) > 1 and m.group(1)[0] == "0"):
                raise AsmError(t.col, f"bad register '{t.text}' (registers are r0..r31)")
            if len(toks) > 1:
                raise AsmError(toks[1].col, f"unexpected '{toks[1].text}' after register")
            return n
    raise AsmError(t.col, f"expected a register r0..r31, got '{_describe(toks)}'")


def parse_pred(toks: list[Token], allow_not: bool) -> tuple[int, bool]:
    neg = False
    i = 0
    if allow_not and toks[0].is_punct("!"):
        neg, i = True, 1
    t = toks[i] if i < len(toks) else toks[-1]
    if i < len(toks) and t.kind == "ident" and t.text in PRED_NAMES:
        if len(toks) > i + 1:
            raise AsmError(toks[i + 1].col, f"unexpected '{toks[i + 1].text}' after predicate")
        return PRED_NAMES[t.text], neg
    if toks[0].is_punct("!"):
        what = "a predicate p0..p6 or pt after '!'"
    else:
        what = "a predicate p0..p6 or pt" + (" (or !pN)" if allow_not else "")
    bad = t.text.startswith("p") and t.text[1:].isdigit()
    prefix = f"bad predicate '{t.text}': " if bad else ""
    raise AsmError(t.col, f"{prefix}expected {what}, got '{_describe(toks[i:] or toks)}'")


def parse_mem(toks: list[Token], evaluate: Evaluator, reg_only: bool
              ) -> tuple[int, int, Token]:
    """``[rN]``, ``[rN+expr]``, ``[rN-expr]``: (register, byte offset, offset's first token)."""
    form = "[rN]" if reg_only else "[rN], [rN+offset] or [rN-offset]"
    if not toks[0].is_punct("[") or not toks[-1].is_punct("]") or len(toks) < 3:
        raise AsmError(toks[0].col, f"expected a memory operand {form}, "
                       f"got '{_describe(toks)}'")
    inner = toks[1:-1]
    reg = parse_reg(inner[:1])
    rest = inner[1:]
    if not rest:
        return reg, 0, inner[0]
    if reg_only:
        raise AsmError(rest[0].col, "this instruction takes no address offset: write [rN]")
    if not (rest[0].is_punct("+") or rest[0].is_punct("-")):
        raise AsmError(rest[0].col, f"expected '+' or '-' after the address register, "
                       f"got '{rest[0].text}'")
    v = evaluate(rest, False)
    return reg, _absolute_int(v, rest[0]), rest[0]


def _absolute_int(v: Value, tok: Token) -> int:
    if v.rel:
        raise AsmError(tok.col, f"data label '{v.sym}' has no address until the program is "
                       "loaded; use la to put its address in a register")
    return v.value


def _check_range(value: int, lo: int, hi: int, what: str, instr: Instr, tok: Token) -> None:
    if not lo <= value <= hi:
        raise AsmError(tok.col, f"{what} {value} out of range {lo}..{hi} for {instr.mnemonic}")


def encode_instruction(instr: Instr, operands: list[list[Token]], head: Token,
                       guard: tuple[int, bool] | None, pc: int, evaluate: Evaluator) -> int:
    """Encode one machine instruction written as ``instr operands...`` at byte address pc."""
    want = len(instr.operands)
    if len(operands) != want:
        col = operands[want][0].col if len(operands) > want else head.col
        raise AsmError(col, f"{instr.mnemonic} takes {want} operand{'s' * (want != 1)} "
                       f"({syntax(instr)}), got {len(operands)}")
    fields: dict[str, int] = {}
    for op, toks in zip(instr.operands, operands, strict=True):
        k = op.kind
        first = toks[0]
        if k is Kind.REG:
            fields[op.fields[0]] = parse_reg(toks)
        elif k is Kind.PRED:
            fields[op.fields[0]] = parse_pred(toks, allow_not=False)[0]
        elif k is Kind.PRED_SRC:
            idx, neg = parse_pred(toks, allow_not=True)
            fields[op.fields[0]] = pred_src_encode(idx, neg)
        elif k in (Kind.MEM, Kind.MEM_REG):
            reg, off, off_tok = parse_mem(toks, evaluate, reg_only=k is Kind.MEM_REG)
            fields["rs1"] = reg
            if k is Kind.MEM:
                _check_range(off, IMM11.min, IMM11.max, "offset", instr, off_tok)
                fields["imm11" if "imm11" in op.fields else "simm"] = off
        elif k is Kind.SREG:
            if len(toks) != 1 or toks[0].text not in SREG_BY_NAME:
                names = ", ".join(SREG_BY_NAME)
                raise AsmError(first.col, f"unknown special register '{_describe(toks)}' "
                               f"(one of {names})")
            fields[op.fields[0]] = int(SREG_BY_NAME[toks[0].text])
        elif k is Kind.LABEL:
            target = _absolute_int(evaluate(toks, False), first)
            delta = target - pc
            if delta % 4:
                raise AsmError(first.col, f"branch target 0x{target:x} is not 4-byte aligned")
            off = delta // 4
            if not OFF21.min <= off <= OFF21.max:
                raise AsmError(first.col, f"branch target 0x{target:x} out of range "
                               f"({off} words from the branch; allowed "
                               f"{OFF21.min}..{OFF21.max})")
            fields["off21"] = off
        elif k is Kind.PARAM:
            v = _absolute_int(evaluate(toks, True), first)
            _check_range(v, IMM11.min, IMM11.max, "parameter offset", instr, first)
            fields["imm11"] = v
        elif k is Kind.IMM:
            v = _absolute_int(evaluate(toks, False), first)
            _check_range(v, IMM11.min, IMM11.max, "immediate", instr, first)
            fields[op.fields[0]] = v
        elif k is Kind.IMM16:
            v = _absolute_int(evaluate(toks, False), first)
            lo, hi = (-0x8000, 0x7FFF) if op.signed else (0, 0xFFFF)
            _check_range(v, lo, hi, "immediate", instr, first)
            fields[op.fields[0]] = v & 0xFFFF
        else:  # pragma: no cover - a new Kind must be taught to the assembler
            raise AssertionError(f"operand kind {k} not handled")
    pred, pneg = guard if guard is not None else (7, False)
    try:
        return encode(instr, fields, pred, pneg)
    except EncodingError as e:  # pragma: no cover - the checks above should make this unreachable
        raise AsmError(head.col, f"{instr.mnemonic}: {e}") from None
