"""Hostile sources: each small input here once crashed, hung or misplaced an error.

Every one must end in a SourceErrors (never a foreign exception), promptly, at the right line
and column; the ones that are valid assemble to what a hand computation says.
"""

from __future__ import annotations

import struct
import time

import pytest
from simtgpu.assembler import assemble, assemble_file
from simtgpu.errors import SimtgpuError, SourceError, SourceErrors

HANG_GUARD_S = 5.0  # not a speed target: these took 50 s and more before


def _errors(src: str) -> list[SourceError]:
    start = time.monotonic()
    with pytest.raises(SourceErrors) as info:
        assemble(src, "t.s")
    assert time.monotonic() - start < HANG_GUARD_S
    return info.value.errors


def _first(src: str) -> tuple[int, int, str]:
    e = _errors(src)[0]
    return e.loc.line, e.loc.col, e.message


@pytest.mark.parametrize(("name", "src", "line", "col", "words"), [
    ("150 nested parentheses", "addi r1, r1, " + "(" * 150 + "1" + ")" * 150, 1, 78,
     "parentheses deep"),
    ("3,600-digit hex literal", "addi r1, r1, 0x" + "f" * 3600, 1, 14, "value too large"),
    ("long literal in .word", ".data\n.word 0x" + "f" * 3600, 2, 7, "value too large"),
    ("5,000-digit decimal in li", "li r1, " + "9" * 5000, 1, 8, "value too large"),
    (".space 1<<63", ".data\n.space 1<<63", 2, 1, "larger than 64 MiB"),
    (".space 1<<40", ".data\n.space 1<<40", 2, 1, "larger than 64 MiB"),
    (".equ squaring chain", ".equ a0, 0xffffffff\n"
     + "\n".join(f".equ a{i + 1}, a{i}*a{i}" for i in range(22)), 3, 12, "value too large"),
    ("shift past 64 bits", "addi r1, r1, (1<<63)<<63", 1, 21, "value too large"),
    ("li 1e1000000", "li r1, 1e1000000", 1, 8, "out of range for binary32"),
    ("5,000-digit float", ".data\n.float 1." + "1" * 5000, 2, 8, "too many digits"),
    ("Arabic-Indic digits as a number", "addi r1, r1, \u0661\u0662", 1, 14,
     "unexpected character"),
    ("Arabic-Indic digit as a register", "addi r\u0661, r1, 1", 1, 7, "unexpected character"),
])
def test_hostile_source_is_refused_at_its_place(name, src, line, col, words) -> None:
    got_line, got_col, message = _first(src)
    assert (got_line, got_col) == (line, col), (name, message)
    assert words in message, (name, message)


def test_a_thousand_unary_operators_evaluate_without_recursion() -> None:
    # -~x is x + 1; 500 pairs on 1 give 501 (hand-computed), in the 16-bit immediate
    obj = assemble(".kernel k\naddi r1, r0, " + "-~" * 500 + "1\nexit\n.end\n", "t.s")
    word = struct.unpack_from("<I", obj.code)[0]
    assert struct.unpack("<I", assemble(".kernel k\naddi r1, r0, 501\nexit\n.end\n").code[:4]
                         )[0] == word


@pytest.mark.parametrize("char", ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_only_newline_ends_a_line(char: str) -> None:
    # the character sits in a comment; the error on line 4 must be reported on line 4
    src = f".kernel k\n; a comment {char} that goes on\nexit\nbogus r1\n.end\n"
    line, col, message = _first(src)
    assert (line, col) == (4, 1) and "unknown mnemonic 'bogus'" in message


def test_byte_order_mark_is_accepted() -> None:
    plain = assemble(".kernel k\nexit\n.end\n", "t.s")
    assert assemble("\ufeff.kernel k\nexit\n.end\n", "t.s").code == plain.code


def test_windows_line_ends_are_accepted() -> None:
    plain = assemble(".kernel k\naddi r1, r0, 7\nexit\n.end\n", "t.s")
    assert assemble(".kernel k\r\naddi r1, r0, 7\r\nexit\r\n.end\r\n", "t.s").code == plain.code


def test_tiny_float_rounds_to_zero_keeping_its_sign() -> None:
    obj = assemble(".data\nx: .float 1e-1000000, -1e-1000000\n", "t.s")
    assert struct.unpack("<II", obj.data[:8]) == (0, 0x8000_0000)


def test_non_utf8_file_names_line_and_column(tmp_path) -> None:
    path = tmp_path / "bad.s"
    path.write_bytes(b".kernel k\nexit ; caf\xe9\n.end\n")
    with pytest.raises(SimtgpuError) as info:
        assemble_file(path)
    assert info.value.render().startswith(f"{path}:2:11: error: the file is not UTF-8")
