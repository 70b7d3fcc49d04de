"""The pipelined multiplier: every op against Python integers, latency, back-to-back issue and
stalls with ``en=0``."""

import pytest
from int_ref import INT_REF
from simtgpu.isa import BY_MNEMONIC
from simtgpu.rtl.multiplier import MulOp, Multiplier
from simtgpu.verification.fp_vectors import INT_EDGES, int_operands
from units_harness import LONG, check_valid_pipeline, lint, rng, run_clocked


def reference(op: MulOp, a: int, b: int) -> int:
    # muli is mul with its (already sign-extended) immediate as ``b``
    return INT_REF["mul" if op is MulOp.MULI else op.name.lower()](a, b)


def vectors(seed: int, n: int) -> list[tuple[MulOp, int, int]]:
    gen = rng(seed)
    ops = list(MulOp)
    edges = INT_EDGES.tolist()
    out = [(op, a, b) for op in ops for a in edges for b in edges]
    a_col, b_col = (col.tolist() for col in int_operands(gen, n, 2))
    for a, b, k in zip(a_col, b_col, gen.integers(0, 4, n), strict=True):
        out.append((ops[int(k)], a, b))
    return out


def test_enum_is_derived_from_isa() -> None:
    assert {m.name for m in MulOp} == {"MUL", "MULHI", "MULHU", "MULI"}
    assert BY_MNEMONIC["mulhu"].mnemonic.upper() in MulOp.__members__


def test_reference_spot_values() -> None:
    assert reference(MulOp.MULHI, 0xFFFFFFFF, 0xFFFFFFFF) == 0  # -1 * -1 = 1
    assert reference(MulOp.MULHU, 0xFFFFFFFF, 0xFFFFFFFF) == 0xFFFFFFFE
    assert reference(MulOp.MULHI, 0x80000000, 0x80000000) == 0x40000000
    assert reference(MulOp.MULHI, 0x80000000, 1) == 0xFFFFFFFF
    assert reference(MulOp.MUL, 0x10000, 0x10000) == 0


@pytest.mark.parametrize("latency", [1, 2, 3])
def test_back_to_back(latency: int) -> None:
    """One vector per cycle, ``en`` held high: each result exactly ``latency`` cycles later."""
    vecs = vectors(0x51 + latency, 20000 if LONG else 1500)
    dut = Multiplier(latency)

    async def bench(ctx) -> None:
        ctx.set(dut.en, 1)
        for i in range(len(vecs) + latency - 1):
            if i < len(vecs):
                op, a, b = vecs[i]
                ctx.set(dut.op, op)
                ctx.set(dut.a, a)
                ctx.set(dut.b, b)
            await ctx.tick()
            j = i + 1 - latency
            if j >= 0:
                op, a, b = vecs[j]
                got = ctx.get(dut.result)
                want = reference(op, a, b)
                assert got == want, f"{op.name} {a:#010x} {b:#010x}: {got:#010x} != {want:#010x}"

    run_clocked(dut, bench)


@pytest.mark.parametrize("latency", [1, 2, 4])
def test_stalls_hold_the_pipeline(latency: int) -> None:
    """With a random ``en`` pattern the unit behaves as a shift register of ``latency``
    results that advances only on enabled cycles (registers reset to a zero product)."""
    gen = rng(0x5A + latency)
    vecs = vectors(0x77 + latency, 600)
    ens = (gen.random(len(vecs)) < 0.6).astype(int)
    dut = Multiplier(latency)

    async def bench(ctx) -> None:
        model = [0] * latency
        for (op, a, b), en in zip(vecs, ens, strict=True):
            ctx.set(dut.op, op)
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            ctx.set(dut.en, int(en))
            await ctx.tick()
            if en:
                model = [reference(op, a, b), *model[:-1]]
            assert ctx.get(dut.result) == model[-1]

    run_clocked(dut, bench)


@pytest.mark.parametrize("latency,gated", [(2, True), (3, True), (2, False)])
def test_valid_and_both_forms(latency: int, gated: bool) -> None:
    """``valid=0`` advances a bubble and holds the operand stage; the gated form (the
    simulation models') and the enable form (the FPGA's) agree with the reference."""
    vecs = vectors(0x99 + latency + gated, 400)
    inputs = [{"op": op, "a": a, "b": b} for op, a, b in vecs]
    want = [reference(op, a, b) for op, a, b in vecs]
    checked = check_valid_pipeline(Multiplier(latency, gated=gated), latency, inputs, want,
                                   rng(0x5B + latency + gated))
    assert checked > 80


def test_gated_needs_two_cycles() -> None:
    with pytest.raises(ValueError, match="gated needs latency >= 2"):
        Multiplier(1, gated=True)


@pytest.mark.parametrize("bad", [0, 9, 2.0, True, "2"])
def test_latency_is_validated(bad) -> None:
    with pytest.raises(ValueError, match="latency must be an integer from 1 to 8"):
        Multiplier(bad)


@pytest.mark.parametrize("latency", [1, 2, 3])
def test_multiplier_verilator_lint(latency: int) -> None:
    # Waivers (Amaranth's generated Verilog): PROCASSINIT — registers get both an initial
    # value and a reset assignment; UNUSEDSIGNAL — carry bits of truncated sums and
    # the unused high bits of the full-width product wires; WIDTHEXPAND — implicit operand
    # widening in Amaranth's adders and shifts.
    lint(Multiplier(latency), f"multiplier_l{latency}",
         waivers=("PROCASSINIT", "UNUSEDSIGNAL", "WIDTHEXPAND"))
