"""Split assembly lines into tokens and statements.

A statement is ``[label:]... [@guard] head operand, operand, ...`` where ``head`` is a
mnemonic (dotted names such as ``isetp.lt`` are one token) or a directive (``.kernel``).
Comments run from ``;`` or ``//`` to the end of the line. Every token keeps its 1-based
column so that errors can point at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class AsmError(Exception):
    """An error at a column of the current line (turned into a SourceError by the driver)."""

    def __init__(self, col: int, message: str):
        super().__init__(message)
        self.col = col
        self.message = message


class Reported(AsmError):
    """An error already recorded elsewhere (in an .equ): stop here, report nothing more."""

    def __init__(self) -> None:
        super().__init__(0, "")


@dataclass(frozen=True)
class Token:
    kind: str  # "ident", "int", "float", "punct"
    text: str
    col: int  # 1-based

    def is_punct(self, text: str) -> bool:
        return self.kind == "punct" and self.text == text


_TOKEN = re.compile(r"""
     (?P<ws>\s+)
    |(?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    |(?P<int>\d\w*)
    |(?P<ident>[A-Za-z_.][\w.]*)
    |(?P<punct><<|>>|[-+*/%&|^~!()\[\],:@])
""", re.VERBOSE | re.ASCII)  # ASCII: a Unicode digit is not a digit of this language

VALUE_LIMIT = 1 << 64
"""Every literal and every intermediate value of an expression lies in (-2**64, 2**64): wide
enough for any operand (at most 32 bits) and for 64-bit arithmetic on the way, and it keeps a
hostile source (a 3,600-digit literal, a chain of squarings) from running for minutes."""


def check_value(value: int, col: int) -> int:
    """``value``, or an error when it is outside the range every expression value keeps."""
    if -VALUE_LIMIT < value < VALUE_LIMIT:
        return value
    raise AsmError(col, "value too large: literals and intermediate results must lie "
                   "within +-2**64")


def strip_comment(line: str) -> str:
    cut = len(line)
    for marker in (";", "//"):
        i = line.find(marker)
        if 0 <= i < cut:
            cut = i
    return line[:cut]


def parse_int(text: str, col: int) -> int:
    t = text.replace("_", "")
    if len(t) > 68:  # 0b + 64 binary digits; anything longer is out of range in any base
        raise AsmError(col, "value too large: literals and intermediate results must lie "
                       "within +-2**64")
    try:
        if t[:2] in ("0x", "0X"):
            return check_value(int(t[2:], 16), col)
        if t[:2] in ("0b", "0B"):
            return check_value(int(t[2:], 2), col)
        if len(t) > 1 and t[0] == "0" and t.isdigit() and t.strip("0"):
            raise ValueError  # 017 would mean octal elsewhere; refuse rather than guess
        value = int(t, 10)
    except ValueError:
        raise AsmError(col, f"bad number '{_short(text)}'") from None
    return check_value(value, col)


def _short(text: str, limit: int = 40) -> str:
    """A token as an error message quotes it: long ones are cut."""
    return text if len(text) <= limit else text[:limit] + "..."


def tokenize(line: str) -> list[Token]:
    """The tokens of ``line``. Compiled code repeats lines many times over (tutorial 03's
    matmul at 32x32x16: 16,236 lines, 2,539 distinct), so a line's tokens (immutable) are
    kept and reused."""
    toks = _SEEN.get(line)
    if toks is None:
        toks = _tokenize(line)
        if len(_SEEN) >= SEEN_LINES:
            _SEEN.clear()
        _SEEN[line] = toks
    return list(toks)


SEEN_LINES = 1 << 14
"""Distinct lines whose tokens :func:`tokenize` keeps (then it starts afresh)."""
_SEEN: dict[str, tuple[Token, ...]] = {}


def _tokenize(line: str) -> tuple[Token, ...]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(line):
        m = _TOKEN.match(line, pos)
        if m is None:
            raise AsmError(pos + 1, f"unexpected character '{line[pos]}'")
        kind = m.lastgroup
        if kind != "ws":
            assert kind is not None
            if kind == "int":
                parse_int(m.group(), pos + 1)  # validate now: 12abc is one bad token
            tokens.append(Token(kind, m.group(), pos + 1))
        pos = m.end()
    return tuple(tokens)


@dataclass
class Statement:
    """One source line, split but not yet interpreted."""

    line_no: int
    text: str  # the full source line
    labels: list[Token] = field(default_factory=list)
    guard: tuple[int, bool, Token] | None = None  # (predicate index, negated, token)
    head: Token | None = None
    operands: list[list[Token]] = field(default_factory=list)

    @property
    def end_col(self) -> int:
        return len(strip_comment(self.text).rstrip()) + 1


PRED_NAMES = {f"p{i}": i for i in range(7)} | {"pt": 7}


def parse_statement(line_no: int, text: str) -> Statement:
    st = Statement(line_no, text)
    toks = tokenize(strip_comment(text))
    i = 0
    while i + 1 < len(toks) and toks[i].kind == "ident" and toks[i + 1].is_punct(":"):
        st.labels.append(toks[i])
        i += 2
    if i < len(toks) and toks[i].is_punct("@"):
        at = toks[i]
        i += 1
        neg = False
        if i < len(toks) and toks[i].is_punct("!"):
            neg = True
            i += 1
        if i >= len(toks) or toks[i].kind != "ident" or toks[i].text not in PRED_NAMES:
            col = toks[i].col if i < len(toks) else at.col
            got = f"'{toks[i].text}'" if i < len(toks) else "nothing"
            raise AsmError(col, f"bad guard: expected a predicate p0..p6 or pt, got {got}")
        st.guard = (PRED_NAMES[toks[i].text], neg, at)
        i += 1
        if i >= len(toks):
            raise AsmError(at.col, "a guard must be followed by an instruction")
    if i >= len(toks):
        return st
    if toks[i].kind != "ident":
        raise AsmError(toks[i].col, f"expected a mnemonic or directive, got '{toks[i].text}'")
    st.head = toks[i]
    i += 1
    rest = toks[i:]
    if not rest:
        return st
    depth = 0
    current: list[Token] = []
    for t in rest:
        if t.kind == "punct" and t.text in "([":
            depth += 1
        elif t.kind == "punct" and t.text in ")]":
            depth -= 1
        if t.is_punct(",") and depth == 0:
            if not current:
                raise AsmError(t.col, "empty operand before ','")
            st.operands.append(current)
            current = []
        else:
            current.append(t)
    if not current:
        raise AsmError(rest[-1].col, "empty operand after ','")
    st.operands.append(current)
    return st
