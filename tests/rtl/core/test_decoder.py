"""The RTL decoder agrees with ``simtgpu.isa.decode`` on every instruction and on bad words."""

from __future__ import annotations

import random

from amaranth.sim import Simulator
from simtgpu.isa import INSTRUCTIONS, EncodingError, Kind, decode, used_fields
from simtgpu.rtl.decoder import Decoder
from simtgpu.rtl.isa_consts import IID_BY_ENCODING


def _random_valid_word(rng: random.Random, instr) -> int:
    word = 0
    for f in used_fields(instr):
        word = f.insert(word, rng.randrange(f.mask + 1))
    word = (word & ~0x7F) | instr.opcode
    if instr.fn is not None:
        word = (word & ~(0x1F << 26)) | (instr.fn << 26)
    for op in instr.operands:
        if op.kind is Kind.PRED and op.is_dst:
            word &= ~(0x3 << 14)
        if op.kind is Kind.PRED_SRC:
            lo = {"rs1": 16, "rs2": 21, "rs3": 26}[op.fields[0]]
            word &= ~(1 << (lo + 3))
    return word


def test_decoder_matches_isa_decode():
    rng = random.Random(1)
    words = []
    for instr in INSTRUCTIONS:
        words += [_random_valid_word(rng, instr) for _ in range(6)]
    words += [rng.getrandbits(32) for _ in range(300)]
    words += [0, 0xFFFF_FFFF]
    dut = Decoder()
    sim = Simulator(dut)
    checked = {"valid": 0, "illegal": 0}

    async def bench(ctx):
        for word in words:
            ctx.set(dut.word, word)
            illegal = ctx.get(dut.dec.illegal)
            try:
                ref = decode(word)
            except EncodingError:
                assert illegal == 1, hex(word)
                checked["illegal"] += 1
                continue
            assert illegal == 0, f"{word:#010x} {ref.mnemonic}"
            checked["valid"] += 1
            dec = dut.dec
            assert ctx.get(dec.iid).value == IID_BY_ENCODING[(ref.instr.opcode, ref.instr.fn)]
            if ref.instr.fmt.has("rd"):
                assert ctx.get(dec.rd) == ref.rd
            if ref.instr.fmt.has("rs1"):
                assert ctx.get(dec.rs1) == ref.rs1
            assert ctx.get(dec.guard) == ref.pred
            assert ctx.get(dec.gneg) == ref.pneg
            fmt = ref.instr.fmt.name
            imm = ctx.get(dec.imm)
            if fmt == "B":
                assert imm == (ref.imm * 4) & 0xFFFF_FFFF
            elif fmt in ("I", "S", "U"):
                assert imm == ref.imm & 0xFFFF_FFFF, ref.mnemonic
            assert ctx.get(dec.wr_reg) == int(ref.instr.writes_reg and ref.rd != 0)
            assert ctx.get(dec.wr_pred) == int(ref.instr.writes_pred and ref.rd & 7 != 7)

    sim.add_testbench(bench)
    sim.run()
    assert checked["valid"] >= len(INSTRUCTIONS) * 6 and checked["illegal"] > 100


def test_absent_instructions_decode_as_illegal():
    """``absent`` instructions decode as illegal, and nothing else does; the core's list is
    without ``mma`` now that it has its unit. A misaligned ``mma`` group is illegal regardless."""
    from simtgpu.isa import encode
    from simtgpu.isa.formats import RS1
    from simtgpu.rtl.core import ABSENT_INSTRUCTIONS

    dut = Decoder(absent=frozenset({"hadd2.f16"}))
    sim = Simulator(dut)
    words = {m: encode(m, {"rd": 4, "rs1": 8}) for m in ("hcvt.f2h", "hadd2.f16", "mma.f16", "add")}
    misaligned = words["mma.f16"] | (1 << RS1.lo)

    async def bench(ctx):
        for name, word in words.items():
            ctx.set(dut.word, word)
            assert ctx.get(dut.dec.illegal) == int(name == "hadd2.f16"), name
        ctx.set(dut.word, misaligned)
        assert ctx.get(dut.dec.illegal)

    sim.add_testbench(bench)
    sim.run()
    assert not {"mma.f16", "mma.bf16"} & ABSENT_INSTRUCTIONS


def test_predecoded_word_rebuilds_the_control_word():
    """What instruction memory keeps (the word and ``Decoder.pre``) rebuilds, through
    ``decoded``, the decoder's whole control word bit for bit, for every instruction and for
    random words (illegal ones included): the core decodes as it writes instruction memory.
    An entry never written (word and predecoded bits all zero) reads as the word zero does:
    an illegal instruction."""
    from amaranth import Module, Mux, Signal
    from simtgpu.rtl.decoder import PREDECODED, decoded

    rng = random.Random(2)
    words = [_random_valid_word(rng, instr) for instr in INSTRUCTIONS for _ in range(4)]
    words += [rng.getrandbits(32) for _ in range(300)] + [0, 0xFFFF_FFFF]
    m = Module()
    m.submodules.dut = dut = Decoder()
    word, pre, blank = Signal(32), Signal(PREDECODED), Signal()
    rebuilt = decoded(m, word, pre)
    m.d.comb += [dut.word.eq(word), pre.eq(Mux(blank, 0, dut.pre.as_value()))]
    sim = Simulator(m)

    async def bench(ctx):
        for w in words:
            ctx.set(word, w)
            assert ctx.get(rebuilt.as_value()) == ctx.get(dut.dec.as_value()), hex(w)
        ctx.set(word, 0)
        ctx.set(blank, 1)
        assert ctx.get(rebuilt.illegal) == 1
        assert ctx.get(rebuilt.as_value()) == ctx.get(dut.dec.as_value())

    sim.add_testbench(bench)
    sim.run()
