"""The integer ALU against a Python-integer reference written from the isa meanings."""

import pytest
from int_ref import CMP_REF, INT_REF
from simtgpu.isa import BY_MNEMONIC, INSTRUCTIONS, Sem
from simtgpu.rtl.alu import ALU_SEMS, Alu, AluOp, alu_op, op_name
from simtgpu.verification.fp_vectors import INT_EDGES, int_operands
from units_harness import LONG, MASK32, lint, rng, run_comb


def sext16(x: int) -> int:
    x &= 0xFFFF
    return (x - 0x10000 if x & 0x8000 else x) & MASK32


REG_REF = {
    **{op: (lambda a, b, c, f=f: f(a, b)) for op, f in INT_REF.items()},
    "movi": lambda a, b, c: sext16(b),
    "lui": lambda a, b, c: (b & 0xFFFF) << 16,
    "lli": lambda a, b, c: (c & 0xFFFF0000) | (b & 0xFFFF),
}
PRED_REF = {"pand": lambda p, q: p & q, "por": lambda p, q: p | q, "pxor": lambda p, q: p ^ q}

ALU_INSTRS = [i for i in INSTRUCTIONS if i.sem in ALU_SEMS]


def reference(mnemonic: str, a: int, b: int, c: int, pa: int, pb: int, ps: int
              ) -> tuple[int, int]:
    """(result, pred) of one ALU op; the unused output is zero."""
    instr = BY_MNEMONIC[mnemonic]
    if instr.sem is Sem.ICMP:
        return 0, int(CMP_REF[instr.suffix](a, b))
    if instr.sem is Sem.PLOGIC:
        return 0, PRED_REF[mnemonic](pa, pb)
    if instr.sem is Sem.SELECT:
        return (a if ps else b), 0
    base = mnemonic[:-1] if instr.sem is Sem.INT_IMM else mnemonic
    return REG_REF[base](a, b, c), 0


def test_enum_is_derived_from_isa() -> None:
    expected = [op_name(i.mnemonic) for i in ALU_INSTRS]
    assert [m.name for m in AluOp] == expected
    assert {"ADD", "ISETP_LTU", "SEL", "PXOR", "SHRI", "MOVI", "LUI", "LLI"} <= set(expected)
    assert alu_op(BY_MNEMONIC["isetp.geu"]) is AluOp.ISETP_GEU
    assert AluOp.as_shape().width == max(1, (len(expected) - 1).bit_length())


def test_reference_spot_values() -> None:
    # Hand-computed values keep the reference itself honest.
    assert reference("sra", 0x80000000, 31, 0, 0, 0, 0) == (MASK32, 0)
    assert reference("shl", 1, 33, 0, 0, 0, 0) == (2, 0)
    assert reference("isetp.lt", MASK32, 0, 0, 0, 0, 0) == (0, 1)
    assert reference("isetp.ltu", MASK32, 0, 0, 0, 0, 0) == (0, 0)
    assert reference("lli", 0, 0x1234, 0xABCD5678, 0, 0, 0) == (0xABCD1234, 0)
    assert reference("movi", 0, 0x8001, 0, 0, 0, 0) == (0xFFFF8001, 0)


@pytest.mark.parametrize("instr", ALU_INSTRS, ids=lambda i: i.mnemonic)
def test_alu_op(instr) -> None:
    gen = rng(0xA1 + instr.opcode * 16 + (instr.fn or 0))
    n = 5000 if LONG else 150
    edges = INT_EDGES.tolist()
    vectors = [(a, b) for a in edges for b in edges]
    vectors += list(zip(*(col.tolist() for col in int_operands(gen, n, 2)), strict=True))
    if instr.sem is Sem.CONST:  # the immediate may arrive raw or sign-extended
        vectors += [(0, sext16(b)) for _, b in vectors[-50:]]
    (cs,) = (col.tolist() for col in int_operands(gen, len(vectors), 1))
    preds = gen.integers(0, 8, len(vectors))
    dut = Alu()
    op = alu_op(instr)

    async def bench(ctx) -> None:
        ctx.set(dut.op, op)
        for (a, b), c, p in zip(vectors, cs, preds, strict=True):
            pa, pb, ps = int(p) & 1, int(p) >> 1 & 1, int(p) >> 2 & 1
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            ctx.set(dut.c, c)
            ctx.set(dut.pa, pa)
            ctx.set(dut.pb, pb)
            ctx.set(dut.psel, ps)
            got = (ctx.get(dut.result), ctx.get(dut.pred))
            want = reference(instr.mnemonic, a, b, c, pa, pb, ps)
            assert got == want, (f"{instr.mnemonic} a={a:#010x} b={b:#010x} c={c:#010x} "
                                 f"p={pa}{pb}{ps}: got {got}, want {want}")

    run_comb(dut, bench)


def test_alu_verilator_lint() -> None:
    # Waivers (Amaranth's generated Verilog, not design issues): WIDTHEXPAND — shifts are
    # emitted with an implicitly widened left operand; UNUSEDSIGNAL — carry bits of
    # truncated sums and the bits of `c` that lli does not keep.
    lint(Alu(), "alu", waivers=("WIDTHEXPAND", "UNUSEDSIGNAL"))
