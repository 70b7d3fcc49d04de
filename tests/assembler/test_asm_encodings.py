"""A handful of encodings checked against words computed by hand from docs/isa.md.

Common fields: op[6:0], pred[9:7] (pt = 7 -> 0x380), pneg[10] (0x400), rd[15:11],
rs1[20:16], rs2[25:21], rs3/fn[30:26].
"""

from __future__ import annotations

import struct

import pytest
from simtgpu.assembler import assemble, disassemble_word

CASES = [
    # add = 0x10, R: 0x10 | pt 0x380 | rd 1<<11 0x800 | rs1 2<<16 0x20000 | rs2 3<<21 0x600000
    ("add r1, r2, r3", 0x00620B90),
    # ffma = 0x43, R4: 0x43 | p1 1<<7 0x80 | pneg 0x400 | rd 0x800 | rs1 0x20000
    #   | rs2 0x600000 | rs3 4<<26 0x10000000
    ("@!p1 ffma r1, r2, r3, r4", 0x10620CC3),
    # addi = 0x20, I: 0x20 | 0x380 | rd 5<<11 0x2800 | rs1 6<<16 0x60000 | imm11 0x7ff<<21
    ("addi r5, r6, -1", 0xFFE62BA0),
    # stg = 0x61, S: offset -4 = 0x7fc -> simm_lo 0x1c<<11 0xe000, simm_hi 0x3f<<26 0xfc000000
    #   | 0x380 | rs1 4<<16 0x40000 | rs2 5<<21 0xa00000
    ("stg [r4-4], r5", 0xFCA4E3E1),
    # isetp.lt = 0x1c fn 2 (eq, ne, lt): 2<<26 0x08000000 | pd 2<<11 0x1000 | rs1 0x30000
    #   | rs2 4<<21 0x800000 | 0x380
    ("isetp.lt p2, r3, r4", 0x0883139C),
    # lui = 0x29, U: imm16 0x1234<<16 | rd 7<<11 0x3800 | 0x380
    ("lui r7, 0x1234", 0x12343BA9),
    # sel = 0x1d, R4: rs3 = !p1 = 0b10001 -> 0x11<<26 0x44000000 | 0x800 | 0x20000 | 0x600000
    ("sel r1, r2, r3, !p1", 0x44620B9D),
    # s2r = 0x08: rd 3<<11 0x1800 | rs1 = tid.x = 0 | 0x380
    ("s2r r3, tid.x", 0x00001B88),
    # ldparam = 0x09, I: rd 2<<11 0x1000 | imm11 4<<21 0x800000 | 0x380
    ("ldparam r2, 4", 0x00801389),
    # atom.cas = 0x65, R4: rd 0x800 | rs1 0x20000 | rs2 0x600000 | rs3 4<<26 | 0x380
    ("atom.cas r1, [r2], r3, r4", 0x10620BE5),
    # exit = 0x02 with guard @p0: pred 0 -> only op
    ("@p0 exit", 0x00000002),
]


@pytest.mark.parametrize("text, word", CASES)
def test_hand_computed_encoding(text: str, word: int) -> None:
    assert assemble(text).code == struct.pack("<I", word)
    assert disassemble_word(word) == text


def test_backward_branch_offset() -> None:
    # bra at pc 8 to 0: off21 = -2 -> 0x1ffffe << 11 = 0xfffff000 | 0x380 | op 0x03
    code = assemble("nop\nnop\nbra 0\n").code
    assert struct.unpack("<3I", code)[2] == 0xFFFFF383
    assert disassemble_word(0xFFFFF383, pc=8) == "bra 0x0"


def test_label_expression_and_dot() -> None:
    code = assemble("top: nop\n bra top+8\n bra .\n nop\n").code
    words = struct.unpack("<4I", code)
    assert words[1] >> 11 == 1  # target 8 from pc 4: one word ahead
    assert words[2] >> 11 == 0  # branch to itself


def test_memory_operand_forms() -> None:
    code = assemble(".equ N, 3\nldg r1, [r2]\nldg r1, [r2+N*4]\nldg r1, [r2 - 8]\n").code
    offs = [w >> 21 for w in struct.unpack("<3I", code)]
    assert offs == [0, 12, 0x7FF - 7]  # -8 in 11 bits is 0x7f8
