"""The FP32 compare unit (fsetp) against ``simtgpu.sim.numerics.fcmp``."""

import numpy as np
import pytest
from simtgpu.isa import INSTRUCTIONS, Sem
from simtgpu.rtl.fcompare import FCmpCond, FCompare
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import fp_operands
from units_harness import LONG, lint, rng, run_comb


def test_enum_follows_isa_fn_codes() -> None:
    fsetp = {i.suffix: i.fn for i in INSTRUCTIONS if i.sem is Sem.FCMP}
    assert {m.name.lower(): m.value for m in FCmpCond} == fsetp
    assert set(fsetp) == set(nx.FP_CONDS)


@pytest.mark.parametrize("cond", list(FCmpCond), ids=lambda c: c.name)
def test_fcompare(cond) -> None:
    gen = rng(0xC0 + cond.value)
    a, b = fp_operands(gen, 20000 if LONG else 600, 2, edges=True)
    # equal pairs and +-0 / subnormal pairs, which must compare equal
    same = gen.integers(0, len(a), 200)
    a = np.concatenate([a, a[same], np.array([0x80000000, 0x00000001, 0x80000005], np.uint32)])
    b = np.concatenate([b, a[same], np.array([0x00000000, 0x80000000, 0x00000000], np.uint32)])
    want = np.asarray(nx.fcmp(cond.name.lower(), a, b), dtype=bool)
    dut = FCompare()

    async def bench(ctx) -> None:
        ctx.set(dut.cond, cond)
        for i in range(len(a)):
            ctx.set(dut.a, int(a[i]))
            ctx.set(dut.b, int(b[i]))
            got = ctx.get(dut.pred)
            assert got == want[i], (f"fsetp.{cond.name.lower()} {int(a[i]):#010x} "
                                    f"{int(b[i]):#010x}: rtl {got}, numerics {int(want[i])}")

    run_comb(dut, bench)


def test_hand_computed_values() -> None:
    cases = [("EQ", 0x80000000, 0x00000000, 1), ("LT", 0x80000000, 0x00000000, 0),
             ("EQ", 0x00000001, 0x80000000, 1),  # subnormal flushed: equal to -0
             ("NE", 0x7FC00000, 0x3F800000, 0),  # ordered: NaN -> false
             ("NAN", 0x3F800000, 0xFFC00000, 1), ("NUM", 0x3F800000, 0xFF800000, 1),
             ("LT", 0xFF800000, 0xFF7FFFFF, 1), ("GE", 0xBF800000, 0xC0000000, 1)]
    dut = FCompare()

    async def bench(ctx) -> None:
        for cond, a, b, want in cases:
            ctx.set(dut.cond, FCmpCond[cond])
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            assert ctx.get(dut.pred) == want, (cond, hex(a), hex(b))

    run_comb(dut, bench)


def test_fcompare_verilator_lint() -> None:
    # Waivers (Amaranth's generated Verilog): UNUSEDSIGNAL — mantissa bits that a compare of
    # flushed patterns does not need; WIDTHEXPAND — implicit widening in comparisons;
    # WIDTHTRUNC — `x == 0` on a field is emitted as a logical NOT of the multi-bit field.
    lint(FCompare(), "fcompare", waivers=("UNUSEDSIGNAL", "WIDTHEXPAND", "WIDTHTRUNC"))
