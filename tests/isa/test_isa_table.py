"""The ISA table is self-consistent and its encoder/decoder agree.

The assembler's round-trip tests (tests/assembler/) check the text forms; these check the
data itself against encodings worked out by hand from the format table in isa/formats.py.
"""

import random

import pytest
from simtgpu import isa
from simtgpu.isa import BY_MNEMONIC, INSTRUCTIONS, EncodingError, decode, encode, used_fields


def test_formats_cover_32_bits_and_fixed_fields_agree():
    for fmt in isa.FORMATS.values():
        assert fmt.field("op").lo == 0 and fmt.field("op").width == 7
        assert fmt.field("pred").lo == 7 and fmt.field("pneg").lo == 10


def test_required_coverage_from_architecture_brief():
    required = (
        "add sub mul mulhi mulhu and or xor shl shr sra min max sel isetp.lt fsetp.lt "
        "fadd fsub fmul ffma fmin fmax fabs fneg cvt.i2f cvt.f2i cvt.u2f cvt.f2u "
        "sfu.rcp sfu.rsqrt sfu.sqrt sfu.exp2 sfu.log2 sfu.sin sfu.cos s2r ldg stg lds sts "
        "atom.add atom.min atom.max atom.exch atom.cas fence bar shfl.idx shfl.up shfl.down "
        "shfl.xor vote.any vote.all vote.ballot bra ssy sync exit lui lli movi ldparam"
    ).split()
    missing = [m for m in required if m not in BY_MNEMONIC]
    assert not missing


def test_hand_encoded_words():
    # add r1, r2, r3: op 0x10 | pred 7<<7 | rd 1<<11 | rs1 2<<16 | rs2 3<<21
    assert encode("add", dict(rd=1, rs1=2, rs2=3)) == 0x10 | 0x380 | 0x800 | 0x20000 | 0x600000
    # @!p2 isetp.lt p1, r2, r3: op 0x1C, pred 2, pneg 1, rd 1, rs1 2, rs2 3, fn 2 (lt)
    w = 0x1C | (2 << 7) | (1 << 10) | (1 << 11) | (2 << 16) | (3 << 21) | (2 << 26)
    assert encode("isetp.lt", dict(rd=1, rs1=2, rs2=3), pred=2, pneg=True) == w == 0x08620D1C
    # stg [r2-8], r3: simm = -8 = 0b111_1111_1000 -> lo5 = 0b11000 at 11, hi6 = 0b111111 at 26
    w = 0x61 | 0x380 | (0b11000 << 11) | (2 << 16) | (3 << 21) | (0b111111 << 26)
    assert encode("stg", dict(rs1=2, rs2=3, simm=-8)) == w
    assert decode(w).imm == -8
    # bra -1 (a branch to itself... minus one word): off21 all ones
    assert encode("bra", dict(off21=-1)) == 0x03 | 0x380 | (0x1FFFFF << 11)


def test_zero_word_and_reserved_opcodes_are_illegal():
    with pytest.raises(EncodingError):
        decode(0)
    for opc in isa.RESERVED_OPCODES:
        with pytest.raises(EncodingError):
            decode(opc | 0x380)


def test_nonzero_unused_bits_are_illegal():
    with pytest.raises(EncodingError):
        decode(encode("exit", {}) | (1 << 31))
    with pytest.raises(EncodingError):
        decode(encode("nop", {}) | (5 << 11))


@pytest.mark.parametrize("instr", INSTRUCTIONS, ids=lambda i: i.mnemonic)
def test_every_instruction_round_trips_random_fields(instr):
    rng = random.Random(instr.opcode * 131 + (instr.fn or 0))
    for _ in range(50):
        fields = {}
        for f in used_fields(instr):
            if f.name in ("op", "pred", "pneg", "fn"):
                continue
            fields[f.name] = rng.randint(f.min, f.max)
        for op in instr.operands:
            if op.kind is isa.Kind.PRED:
                fields["rd"] = rng.randint(0, 7)
            if op.kind is isa.Kind.PRED_SRC:
                fields[op.fields[0]] = rng.choice([0, 16]) | rng.randint(0, 7)
            if op.kind is isa.Kind.SREG:
                fields[op.fields[0]] = int(rng.choice(list(isa.SReg)))
            if op.align > 1:
                fields[op.fields[0]] -= fields[op.fields[0]] % op.align
        pred, pneg = rng.randint(0, 7), rng.random() < 0.5
        word = encode(instr, fields, pred=pred, pneg=pneg)
        d = decode(word)
        assert d.instr is instr and d.pred == pred and d.pneg == pneg
        assert encode(instr, {k: v for k, v in fields.items()}, pred, pneg) == d.word


def test_unknown_special_register_is_illegal():
    with pytest.raises(EncodingError, match="special register"):
        decode(encode("s2r", dict(rd=1, rs1=max(isa.SReg) + 1)))


def test_encode_rejects_values_that_do_not_fit():
    with pytest.raises(EncodingError, match="out of range"):
        encode("addi", dict(rd=1, rs1=2, imm11=1024))
    with pytest.raises(EncodingError, match="no field"):
        encode("add", dict(rd=1, rs1=2, imm11=3))
