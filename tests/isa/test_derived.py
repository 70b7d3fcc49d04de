"""What the RTL and the ISS take from the ISA table agrees with the table itself.

Each check compares a derived set, slice or enum with the instruction table read a second
way (by semantic class, by format field, by function code), so a set retyped by hand in the
decoder, the ISS or a unit fails here as soon as the table changes under it.
"""

import random
import re

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator
from simtgpu import isa
from simtgpu.isa import INSTRUCTIONS, SETS_PC, SIMT_OPS, Flow, Lat, Sem, encode
from simtgpu.isa.formats import FORMATS, IMM11, IMM16, OFF21, OP, RS1, join_simm
from simtgpu.rtl import decoder, isa_consts
from simtgpu.rtl.alu import ALU_SEMS, AluOp
from simtgpu.rtl.fcompare import FCmpCond
from simtgpu.rtl.fpu import FpuOp
from simtgpu.rtl.half_unit import HalfOp
from simtgpu.rtl.multiplier import MulOp
from simtgpu.rtl.sfu import SfuOp
from simtgpu.rtl.simt_stack import SimtOp
from simtgpu.rtl.warp_unit import ShflMode, VoteMode
from simtgpu.sim import semantics


def _mnemonics(pred) -> frozenset[str]:
    return frozenset(i.mnemonic for i in INSTRUCTIONS if pred(i))


# --- instructions that decide the next PC ----------------------------------------------

def test_branches_and_barriers_decide_the_next_pc():
    # docs/execution-model.md: bra, ssy and sync act on the reconvergence stack, exit pops
    # it when no lane stays active, bar parks the warp; everything else goes on at pc + 4
    assert _mnemonics(lambda i: i.sem is Sem.BRANCH) <= SIMT_OPS
    assert SIMT_OPS == _mnemonics(lambda i: i.sem is Sem.BRANCH) | {"exit"}
    assert SETS_PC == SIMT_OPS | _mnemonics(lambda i: i.sem is Sem.BARRIER)
    assert SETS_PC == {"bra", "ssy", "sync", "exit", "bar"}
    assert "nop" not in SETS_PC and "fence" not in SETS_PC


@pytest.mark.parametrize("instr", INSTRUCTIONS, ids=lambda i: i.mnemonic)
def test_decoder_and_iss_take_the_next_pc_rule_from_the_table(instr):
    assert instr.sets_pc == (instr.flow is not Flow.NEXT) == (instr.mnemonic in SETS_PC)
    if instr.sets_pc:
        assert instr.lat is Lat.CTRL and instr.dst is None
    # the decoder's ctrl bit stops the warp's fetch; the ISS leaves the pc to the function
    assert decoder._static(instr)["ctrl"] == int(instr.sets_pc)
    assert (instr.mnemonic in semantics.SETS_PC) == instr.sets_pc


@pytest.mark.parametrize("instr", INSTRUCTIONS, ids=lambda i: i.mnemonic)
def test_decoder_reads_the_destination_where_the_meaning_does(instr):
    # "d = (d & 0xffff0000) | imm16": the old d appears on the right-hand side
    reads_d = instr.meaning.startswith("d = ") and re.search(r"\bd\b", instr.meaning[4:])
    assert decoder._static(instr)["rd_rd"] == int(bool(reads_d))


def test_simt_stack_unit_has_one_operation_per_stack_instruction():
    assert {op.name.lower() for op in SimtOp} == SIMT_OPS


# --- immediates --------------------------------------------------------------------------

def test_immediate_range_is_the_field_width():
    assert (isa.IMM_MIN, isa.IMM_MAX) == (-(1 << (IMM11.width - 1)), (1 << (IMM11.width - 1)) - 1)
    for mnemonic, name in (("addi", "imm11"), ("stg", "simm")):
        fields = {"rd": 1, "rs1": 2} if name == "imm11" else {"rs1": 2, "rs2": 3}
        for v in (isa.IMM_MIN, isa.IMM_MAX):
            assert isa.decode(encode(mnemonic, {**fields, name: v})).imm == v
        for v in (isa.IMM_MIN - 1, isa.IMM_MAX + 1):
            with pytest.raises(isa.EncodingError):
                encode(mnemonic, {**fields, name: v})


def _reference_immediates(word: int) -> dict[str, int]:
    """The immediates of a word as ``isa.formats`` defines the fields (pure Python)."""
    imm16 = IMM16.extract(word)
    return {
        "imm11": IMM11.extract(word),
        "simm": join_simm(word),
        "imm16s": imm16 - (imm16 >> 15 << 16),
        "imm16u": imm16,
        "off": OFF21.extract(word) * isa.abi.INSTR_BYTES,
    }


def test_decoder_immediates_slice_the_format_fields():
    word = Signal(32)
    imm = decoder.immediates(word)
    outs = {name: Signal(v.shape(), name=name) for name, v in imm.items()}
    m = Module()
    m.d.comb += [outs[n].eq(v) for n, v in imm.items()]
    rng = random.Random(7)
    words = [rng.getrandbits(32) for _ in range(200)] + [0, 0xFFFF_FFFF]
    words += [1 << b for b in range(32)]

    async def bench(ctx):
        for w in words:
            ctx.set(word, w)
            got = {n: ctx.get(s) for n, s in outs.items()}
            assert got == _reference_immediates(w), hex(w)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_the_decoder_knows_every_immediate_field():
    # a new immediate field needs a candidate in decoder.immediates and in the check above
    named = {f.name for fmt in FORMATS.values() for f in fmt.fields
             if f.name.startswith(("imm", "off", "simm"))}
    assert named == {"imm11", "imm16", "off21", "simm_lo", "simm_hi"}


# --- the RTL enums -----------------------------------------------------------------------

@pytest.mark.parametrize(("enum", "sems"), [
    (AluOp, ALU_SEMS), (FpuOp, (Sem.FP, Sem.CVT)), (MulOp, (Sem.MUL,)),
    (HalfOp, (Sem.HALF,))])
def test_unit_operation_enums_list_their_instructions(enum, sems):
    expected = [isa_consts.op_name(i.mnemonic) for i in INSTRUCTIONS if i.sem in sems]
    assert [m.name for m in enum] == expected
    assert [m.value for m in enum] == list(range(len(expected)))
    assert enum.as_shape().width == max(1, (len(expected) - 1).bit_length())


@pytest.mark.parametrize(("enum", "family"), [
    (FCmpCond, "fsetp"), (SfuOp, "sfu"), (ShflMode, "shfl"), (VoteMode, "vote")])
def test_family_enums_carry_the_fn_codes(enum, family):
    members = {i.suffix.upper(): i.fn for i in INSTRUCTIONS if i.family == family}
    assert {m.name: m.value for m in enum} == members
    assert enum.as_shape().width == max(members.values()).bit_length()


def test_field_enums_have_the_field_width():
    assert isa_consts.Opcode.as_shape().width == OP.width
    assert {m.value for m in isa_consts.Opcode} == {i.opcode for i in INSTRUCTIONS}
    assert isa_consts.SReg.as_shape().width == RS1.width
    assert {m.name: m.value for m in isa_consts.SReg} == {s.name: int(s) for s in isa.SReg}
    assert [m.name for m in isa_consts.InstrId] == [
        isa_consts.op_name(i.mnemonic) for i in INSTRUCTIONS]


def test_make_enum_refuses_a_shape_too_narrow():
    e = isa_consts.make_enum("E", {"A": 0, "B": 5}, __name__)
    assert e.as_shape().width == 3 and e.__module__ == __name__ and e.__qualname__ == "E"
    assert isa_consts.make_enum("F", {"A": 1}, __name__, 4).as_shape().width == 4
    with pytest.raises(ValueError, match="need 3 bits, not 2"):
        isa_consts.make_enum("G", {"A": 0, "B": 5}, __name__, 2)
