"""Pseudo-instruction expansions, constant expressions and float constants."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simtgpu.assembler import assemble, disassemble_word
from simtgpu.assembler.floats import f32_bits


def words(text: str) -> list[int]:
    code = assemble(text).code
    return list(struct.unpack(f"<{len(code) // 4}I", code))


def dis(text: str) -> list[str]:
    return [disassemble_word(w) for w in words(text)]


@pytest.mark.parametrize("const, expansion", [
    ("0", ["movi r1, 0"]),
    ("0x7fff", ["movi r1, 32767"]),
    ("-32768", ["movi r1, -32768"]),
    ("0xffff8000", ["movi r1, -32768"]),        # the same 32 bits as -32768
    ("0x8000", ["lui r1, 0x0", "lli r1, 0x8000"]),
    ("0xffff0000", ["lui r1, 0xffff"]),
    ("0x12345678", ["lui r1, 0x1234", "lli r1, 0x5678"]),
    ("-1", ["movi r1, -1"]),
    ("0xffffffff", ["movi r1, -1"]),
    ("-2147483648", ["lui r1, 0x8000"]),
    ("65536", ["lui r1, 0x1"]),
    ("1 << 20 | 5", ["lui r1, 0x10", "lli r1, 0x5"]),
    ("1.5", ["lui r1, 0x3fc0"]),                 # 0x3fc00000
    ("-2.0", ["lui r1, 0xc000"]),
    ("-inf", ["lui r1, 0xff80"]),
    ("inf", ["lui r1, 0x7f80"]),
    ("nan", ["lui r1, 0x7fc0"]),
    ("0.0", ["movi r1, 0"]),
    ("-0.0", ["lui r1, 0x8000"]),
    ("1e-3", ["lui r1, 0x3a83", "lli r1, 0x126f"]),  # 0x3a83126f
    ("0x3fc00000", ["lui r1, 0x3fc0"]),          # hex is the raw bits
])
def test_li_expansions(const: str, expansion: list[str]) -> None:
    assert dis(f"li r1, {const}") == expansion


def test_li_forward_reference_keeps_two_words() -> None:
    # 'later' is unknown in pass 1, so li takes two words even though 8 fits movi
    text = "li r1, later\nlater: nop\n"
    assert dis(text) == ["lui r1, 0x0", "lli r1, 0x8", "nop"]


def test_li_of_a_forward_equ() -> None:
    assert dis("li r2, K\n.equ K, 0x10000\n") == ["lui r2, 0x1", "lli r2, 0x0"]


def test_guard_applies_to_every_instruction_of_an_expansion() -> None:
    assert dis("@!p3 li r1, 0x12345678") == ["@!p3 lui r1, 0x1234", "@!p3 lli r1, 0x5678"]
    assert dis("@p2 la r4, d\n.data\nd: .word 1") == ["@p2 lui r4, 0x0", "@p2 lli r4, 0x0"]


@pytest.mark.parametrize("src, expansion", [
    ("mov r1, r2", ["add r1, r2, r0"]),
    ("not r3, r4", ["xori r3, r4, -1"]),
    ("neg r5, r6", ["sub r5, r0, r6"]),
    ("pmov p1, !p2", ["pand p1, !p2, pt"]),
    ("pnot p1, p2", ["pxor p1, p2, pt"]),
    ("pset p3", ["pand p3, pt, pt"]),
    ("pclr p4", ["pxor p4, pt, pt"]),
    ("jmp 0x40", ["bra 0x40"]),
    ("@p1 ret", ["@p1 exit"]),
])
def test_fixed_expansions(src: str, expansion: list[str]) -> None:
    assert dis(src) == expansion


def test_la_relocations_and_relocate() -> None:
    obj = assemble("""
        nop
        la r3, table+8
        .data
        .word 7
table:  .word 1, 2, 3
""")
    assert [(r.code_offset, r.kind, r.data_offset) for r in obj.relocations] == [
        (4, "hi16", 12), (8, "lo16", 12)]
    code = obj.relocate(0x0001_2340)
    hi, lo = struct.unpack_from("<II", code, 4)
    assert disassemble_word(hi) == "lui r3, 0x1"
    assert disassemble_word(lo) == "lli r3, 0x234c"  # 0x12340 + 12
    assert obj.symbols["table"].section == "data" and obj.symbols["table"].offset == 4


@pytest.mark.parametrize("expr, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("-7 / 2", -3), ("-7 % 2", -1), ("7 / -2", -3),
    ("1 << 4 | 1", 17), ("0xff & ~0x0f", 0xF0), ("6 ^ 3", 5), ("0b1010", 10),
    ("100 >> 2", 25), ("-(-5)", 5), ("K * 2 + 1", 21), ("end - start", 8), ("1_000", 1000),
])
def test_constant_expressions(expr: str, value: int) -> None:
    obj = assemble(f".equ K, 10\nstart: nop\nnop\nend:\n.data\n.word {expr}\n")
    assert struct.unpack("<i", obj.data)[0] == value


def test_data_directives() -> None:
    obj = assemble(".data\n.byte 1, 255, -1\n.align 8\n.word -2\n.float 1, 0.5\n.space 3\n")
    assert obj.data == (bytes([1, 255, 255]) + bytes(5) + struct.pack("<iff", -2, 1.0, 0.5)
                        + bytes(3))
    assert obj.data_align == 8


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False))
def test_float_literals_match_numpy(x: float) -> None:
    # repr() is a shortest round-trip decimal of the double; numpy rounds it to binary32 once
    text = repr(abs(x))
    if "e" not in text and "." not in text and text != "inf":
        text += ".0"
    expect = int(np.array([np.float32(x)]).view(np.uint32)[0])
    assert f32_bits(text, negative=np.signbit(np.float32(x))) == expect


def test_float_rounding_is_single_and_to_nearest_even() -> None:
    # 1 + 2**-24 lies exactly between 1.0 and the next float: ties to even -> 1.0
    assert f32_bits("1.000000059604644775390625") == 0x3F800000
    # a hair above the tie rounds up
    assert f32_bits("1.000000059604644775390626") == 0x3F800001
    # smallest denormal, and half of it (a tie with zero rounds to even: 0)
    assert f32_bits("1.40129846432481707092372958328991613128026194187651577e-45") == 1
    assert f32_bits("7.00649232162408535461864791644958065640130970938257885e-46") == 0
    assert f32_bits("3.4028235e38") == 0x7F7FFFFF
    with pytest.raises(ValueError, match="out of range"):
        f32_bits("3.5e38")
