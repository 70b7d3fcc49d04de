"""Constant expressions: integers, symbols, ``.``, C operators and parentheses.

Precedence, loosest first: ``|``, ``^``, ``&``, ``<< >>``, ``+ -``, ``* / %``, unary
``- + ~``. ``/`` and ``%`` truncate toward zero (as in C). Values are Python integers;
range checks happen where a value is used.

A value is absolute or relative to the data section (a data label, whose address is only
known when the loader places the section). ``data + const``, ``data - const`` and
``data - data`` are allowed; anything else that involves a data label is an error, and only
``la`` accepts a data-relative result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .lexer import AsmError, Token, check_value, parse_int


@dataclass(frozen=True)
class Value:
    value: int
    rel: int = 0  # 1: relative to the data section's base; 0: absolute
    sym: str | None = None  # the data label, for messages


class Forward(Exception):
    """A symbol that is not defined yet (pass 1 only): the caller decides what that means."""


Resolver = Callable[[Token], Value]

_BINARY = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
MAX_NESTING = 64
"""Parentheses deeper than this are refused (the parser recurses once per level)."""


class _Parser:
    def __init__(self, tokens: list[Token], resolve: Resolver):
        self.toks = tokens
        self.i = 0
        self.depth = 0
        self.resolve = resolve

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def binary(self, level: int) -> Value:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            t = self.peek()
            if t is None or t.kind != "punct" or t.text not in _BINARY[level]:
                return left
            self.i += 1
            right = self.binary(level + 1)
            left = _apply(t, left, right)

    def unary(self) -> Value:
        prefix: list[Token] = []  # unary operators, applied innermost first (a loop: a
        while True:  # chain of a thousand '-' must not recurse a thousand times)
            t = self.peek()
            if t is None:
                last = self.toks[-1] if self.toks else None
                raise AsmError(last.col + len(last.text) if last else 1,
                               "expected a value at the end of the expression")
            self.i += 1
            if not (t.kind == "punct" and t.text in "-+~"):
                break
            prefix.append(t)
        v = self.primary(t)
        for op in reversed(prefix):
            if op.text == "+":
                continue
            _absolute(op, v)
            v = Value(check_value(-v.value if op.text == "-" else ~v.value, op.col))
        return v

    def primary(self, t: Token) -> Value:
        if t.is_punct("("):
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise AsmError(t.col, f"expression nested more than {MAX_NESTING} "
                               "parentheses deep")
            v = self.binary(0)
            self.depth -= 1
            close = self.peek()
            if close is None or not close.is_punct(")"):
                raise AsmError(close.col if close else t.col, "missing ')'")
            self.i += 1
            return v
        if t.kind == "int":
            return Value(parse_int(t.text, t.col))
        if t.kind == "ident":
            return self.resolve(t)
        if t.kind == "float":
            raise AsmError(t.col, f"float constant {t.text} where an integer is expected")
        raise AsmError(t.col, f"unexpected '{t.text}' in expression")


def _absolute(op: Token, *values: Value) -> None:
    for v in values:
        if v.rel:
            raise AsmError(op.col, f"operator '{op.text}' cannot take the data label "
                           f"'{v.sym}' (its address is fixed at load time; use la)")


def _apply(op: Token, a: Value, b: Value) -> Value:
    o = op.text
    if o == "+":
        if a.rel and b.rel:
            _absolute(op, a)
        return Value(check_value(a.value + b.value, op.col), a.rel + b.rel, a.sym or b.sym)
    if o == "-":
        if b.rel and not a.rel:
            _absolute(op, b)
        return Value(check_value(a.value - b.value, op.col), a.rel - b.rel,
                     a.sym if a.rel - b.rel else None)
    _absolute(op, a, b)
    x, y = a.value, b.value
    if o in "/%":
        if y == 0:
            raise AsmError(op.col, "division by zero")
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        return Value(check_value(q if o == "/" else x - q * y, op.col))
    if o in ("<<", ">>"):
        if not 0 <= y < 64:
            raise AsmError(op.col, f"shift count {y} out of range 0..63")
        return Value(check_value(x << y if o == "<<" else x >> y, op.col))
    return Value(check_value({"*": x * y, "&": x & y, "|": x | y, "^": x ^ y}[o], op.col))


def evaluate(tokens: list[Token], resolve: Resolver) -> Value:
    """Evaluate a whole operand; extra tokens after a complete expression are an error."""
    if len(tokens) == 1 and tokens[0].kind == "int":  # (most operands: no parser needed)
        return Value(parse_int(tokens[0].text, tokens[0].col))
    p = _Parser(tokens, resolve)
    v = p.binary(0)
    t = p.peek()
    if t is not None:
        raise AsmError(t.col, f"unexpected '{t.text}' after expression")
    return v
