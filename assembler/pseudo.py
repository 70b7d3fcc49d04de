"""Pseudo-instructions: assembler conveniences that expand into real instructions.

Each expansion's size is decided in pass 1 and kept in pass 2, so labels never move.
A guard on a pseudo-instruction applies to every instruction of its expansion.

| pseudo | expansion |
| --- | --- |
| ``li rd, C`` | ``movi rd, C`` if C fits signed 16 bits, else ``lui rd, C>>16`` if C's |
| | low half is 0, else ``lui rd, C>>16`` + ``lli rd, C&0xffff`` (also when C is |
| | not known in pass 1) |
| ``la rd, sym`` | ``lui rd, hi16`` + ``lli rd, lo16``, relocated (hi16/lo16) to the label |
| ``mov rd, rs`` | ``add rd, rs, r0`` |
| ``not rd, rs`` | ``xori rd, rs, -1`` |
| ``neg rd, rs`` | ``sub rd, r0, rs`` |
| ``pmov pd, ps`` | ``pand pd, ps, pt`` |
| ``pnot pd, ps`` | ``pxor pd, ps, pt`` |
| ``pset pd`` | ``pand pd, pt, pt`` |
| ``pclr pd`` | ``pxor pd, pt, pt`` |
| ``jmp target`` | ``bra target`` (unguarded) |
| ``ret`` | ``exit`` |
"""

from __future__ import annotations

from dataclasses import dataclass

from simtgpu.isa import BY_MNEMONIC

from .expr import Value
from .floats import f32_bits
from .lexer import AsmError, Token


@dataclass(frozen=True)
class Pseudo:
    name: str
    syntax: str
    arity: int
    # the fixed expansion, as (mnemonic, operand templates); "$1" is operand 1, others literal
    template: tuple[tuple[str, tuple[str, ...]], ...] = ()


PSEUDOS: dict[str, Pseudo] = {p.name: p for p in (
    Pseudo("li", "li rd, const", 2),
    Pseudo("la", "la rd, datalabel", 2),
    Pseudo("mov", "mov rd, rs", 2, (("add", ("$1", "$2", "r0")),)),
    Pseudo("not", "not rd, rs", 2, (("xori", ("$1", "$2", "-1")),)),
    Pseudo("neg", "neg rd, rs", 2, (("sub", ("$1", "r0", "$2")),)),
    Pseudo("pmov", "pmov pd, ps", 2, (("pand", ("$1", "$2", "pt")),)),
    Pseudo("pnot", "pnot pd, ps", 2, (("pxor", ("$1", "$2", "pt")),)),
    Pseudo("pset", "pset pd", 1, (("pand", ("$1", "pt", "pt")),)),
    Pseudo("pclr", "pclr pd", 1, (("pxor", ("$1", "pt", "pt")),)),
    Pseudo("jmp", "jmp target", 1, (("bra", ("$1",)),)),
    Pseudo("ret", "ret", 0, (("exit", ()),)),
)}
assert not set(PSEUDOS) & set(BY_MNEMONIC), "a pseudo-instruction shadows a real one"

Expansion = list[tuple[str, list[list[Token]]]]


def check_arity(p: Pseudo, operands: list[list[Token]], head: Token) -> None:
    if len(operands) != p.arity:
        col = operands[p.arity][0].col if len(operands) > p.arity else head.col
        raise AsmError(col, f"{p.name} takes {p.arity} operand{'s' * (p.arity != 1)} "
                       f"({p.syntax}), got {len(operands)}")


def _int_tokens(value: int, col: int) -> list[Token]:
    if value < 0:
        return [Token("punct", "-", col), Token("int", str(-value), col)]
    return [Token("int", str(value), col)]


def _template_tokens(text: str, col: int) -> list[Token]:
    if text.lstrip("-").isdigit():
        return _int_tokens(int(text), col)
    return [Token("ident", text, col)]


def expand_fixed(p: Pseudo, operands: list[list[Token]], head: Token) -> Expansion:
    out: Expansion = []
    for mnemonic, args in p.template:
        ops = [operands[int(a[1:]) - 1] if a.startswith("$") else _template_tokens(a, head.col)
               for a in args]
        out.append((mnemonic, ops))
    return out


def float_operand(toks: list[Token]) -> int | None:
    """binary32 bits when the operand is a (signed) float literal, inf or nan; else None."""
    neg = False
    body = toks
    if len(toks) == 2 and (toks[0].is_punct("-") or toks[0].is_punct("+")):
        neg, body = toks[0].text == "-", toks[1:]
    if len(body) != 1:
        return None
    t = body[0]
    if t.kind == "float" or (t.kind == "ident" and t.text in ("inf", "nan")):
        try:
            return f32_bits(t.text, neg)
        except ValueError as e:
            raise AsmError(toks[0].col, str(e)) from None
    return None


def li_value(v: Value, tok: Token) -> int:
    """The 32-bit pattern li loads for an integer expression value."""
    if v.rel:
        raise AsmError(tok.col, f"li cannot load data label '{v.sym}' (its address is set at "
                       "load time); use la")
    if not -(1 << 31) <= v.value < 1 << 32:
        raise AsmError(tok.col, f"constant {v.value} out of range -2147483648..4294967295 "
                       "for li")
    return v.value & 0xFFFFFFFF


def li_size(bits: int) -> int:
    signed = bits - (1 << 32) if bits >> 31 else bits
    if -0x8000 <= signed <= 0x7FFF or bits & 0xFFFF == 0:
        return 1
    return 2


def expand_li(rd: list[Token], bits: int, size: int, col: int) -> Expansion:
    signed = bits - (1 << 32) if bits >> 31 else bits
    hi = [("lui", [rd, _int_tokens(bits >> 16, col)])]
    if size == 2:
        return hi + [("lli", [rd, _int_tokens(bits & 0xFFFF, col)])]
    if -0x8000 <= signed <= 0x7FFF:
        return [("movi", [rd, _int_tokens(signed, col)])]
    return hi


def expand_la(rd: list[Token], data_offset: int, col: int) -> Expansion:
    """lui/lli of the address as if the data section sat at 0; relocations fix it up."""
    return [("lui", [rd, _int_tokens(data_offset >> 16 & 0xFFFF, col)]),
            ("lli", [rd, _int_tokens(data_offset & 0xFFFF, col)])]
