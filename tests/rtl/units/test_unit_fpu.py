"""The pipelined FPU in Amaranth's simulator, bit for bit against the shared numerics
(``simtgpu.sim.numerics``); the 100,000-vector runs go through Verilator (test_rtl_units.py)."""

import numpy as np
import pytest
from simtgpu.isa import INSTRUCTIONS, Sem
from simtgpu.rtl.alu import op_name
from simtgpu.rtl.fpu import Fpu, FpuOp
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import INT_EDGES, fp_operands, int_operands
from units_harness import (
    FPU_REFERENCE,
    LONG,
    UserRegister,
    check_last_enable,
    check_valid_pipeline,
    fpu_expected,
    lint,
    rng,
    run_clocked,
)

# numerics.cvt casts signalling-NaN patterns to float64, which numpy reports as "invalid";
# the result (NaN -> 0) is what the contract asks for, so the warning is noise here.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")

ROUNDED = (FpuOp.FADD, FpuOp.FSUB, FpuOp.FMUL, FpuOp.FFMA)


def count(op: FpuOp) -> int:
    """Random vectors per op in the Amaranth simulator."""
    n = 2000 if op in ROUNDED else 600
    return 5 * n if LONG else n


def vectors(op: FpuOp, seed: int) -> list[np.ndarray]:
    gen = rng(seed)
    arity = FPU_REFERENCE[op][0]
    if op in (FpuOp.CVT_I2F, FpuOp.CVT_U2F):
        ints = np.concatenate([INT_EDGES, *int_operands(gen, count(op), 1)]).astype(np.uint64)
        # plus exact ties: a 24-bit significand followed by binary 100..0
        sig = gen.integers(1 << 23, 1 << 24, 200, dtype=np.uint64)
        k = gen.integers(1, 9, 200, dtype=np.uint64)
        ties = (sig << k) | (np.uint64(1) << (k - np.uint64(1)))
        return [np.concatenate([ints, ties]).astype(np.uint32)]
    return fp_operands(gen, count(op), arity, edges=True)


def run_fpu(ops: FpuOp | list[FpuOp], cols: list[np.ndarray], latency: int = 2) -> np.ndarray:
    """Results for the operand columns, one vector per cycle through the pipeline; ``ops`` is
    one op for all vectors or one op per vector."""
    dut = Fpu(latency)
    names = ("a", "b", "c")
    n = len(cols[0])
    per_vector = isinstance(ops, list)
    got = np.zeros(n, dtype=np.uint32)

    async def bench(ctx) -> None:
        ctx.set(dut.en, 1)
        if not per_vector:
            ctx.set(dut.op, ops)
        for i in range(n + latency - 1):
            if i < n:
                if per_vector:
                    ctx.set(dut.op, ops[i])
                for name, col in zip(names, cols, strict=False):
                    ctx.set(getattr(dut, name), int(col[i]))
            await ctx.tick()
            if i + 1 >= latency:
                got[i + 1 - latency] = ctx.get(dut.result)

    run_clocked(dut, bench)
    return got


def check(op: FpuOp, cols: list[np.ndarray], got: np.ndarray) -> None:
    want = np.asarray(FPU_REFERENCE[op][1](*cols), dtype=np.uint32)
    bad = np.flatnonzero(got != want)
    if len(bad):
        lines = [f"{op.name}: {len(bad)} of {len(got)} differ from simtgpu.sim.numerics"]
        for i in bad[:12]:
            args = " ".join(f"{int(col[i]):#010x}" for col in cols)
            lines.append(f"  {args} -> rtl {int(got[i]):#010x}, numerics {int(want[i]):#010x}")
        raise AssertionError("\n".join(lines))


def test_enum_is_derived_from_isa() -> None:
    expected = [op_name(i.mnemonic) for i in INSTRUCTIONS if i.sem in (Sem.FP, Sem.CVT)]
    assert [m.name for m in FpuOp] == expected
    assert set(FPU_REFERENCE) == set(FpuOp)


@pytest.mark.parametrize("op", list(FpuOp), ids=lambda o: o.name)
def test_fpu_op(op: FpuOp) -> None:
    cols = vectors(op, 0xF0 + op.value)
    check(op, cols, run_fpu(op, cols))


def test_hand_computed_values() -> None:
    """A few results worked out by hand, independent of the numerics module."""
    cases = [
        (FpuOp.FADD, (0x3F800000, 0x33800000), 0x3F800000),  # 1 + 2^-24: tie -> even (1)
        (FpuOp.FADD, (0x3F800001, 0x33800000), 0x3F800002),  # tie from odd -> up
        (FpuOp.FSUB, (0x3F800000, 0x3F800000), 0x00000000),  # x - x = +0
        (FpuOp.FADD, (0x80000000, 0x80000000), 0x80000000),  # -0 + -0 = -0
        (FpuOp.FMUL, (0x00800000, 0x3F000000), 0x00000000),  # min normal / 2 flushes
        (FpuOp.FMUL, (0x80800000, 0x3F000000), 0x80000000),  # ... to a signed zero
        (FpuOp.FMUL, (0x3F7FFFFF, 0x00800000), 0x00800000),  # 2^-126 - 2^-150: rounds to
        (FpuOp.FMUL, (0x3F7FFFFE, 0x80800000), 0x80000000),  # the smallest normal, below flushes
        (FpuOp.FMUL, (0x7F7FFFFF, 0x40000000), 0x7F800000),  # overflow -> inf
        (FpuOp.FMUL, (0x7F800000, 0x00000001), 0x7FFFFFFF),  # inf * subnormal(=0) -> NaN
        (FpuOp.FMIN, (0x80000000, 0x00000000), 0x80000000),  # -0 < +0
        (FpuOp.FMAX, (0x7FC00000, 0x3F800000), 0x3F800000),  # NaN operand -> other
        (FpuOp.FNEG, (0x00000001,), 0x80000000),  # FTZ, then negate
        (FpuOp.CVT_F2I, (0xC0600000,), 0xFFFFFFFD),  # -3.5 -> -3
        (FpuOp.CVT_F2U, (0xBF000000,), 0x00000000),  # -0.5 -> 0
        (FpuOp.CVT_F2I, (0x7F800000,), 0x7FFFFFFF),  # inf saturates
        (FpuOp.CVT_I2F, (0x01000001,), 0x4B800000),  # 2^24 + 1: tie -> even
        (FpuOp.CVT_U2F, (0xFFFFFFFF,), 0x4F800000),  # rounds up to 2^32
    ]
    ops = [op for op, _, _ in cases]
    cols = [np.array([(args + (0, 0))[k] for _, args, _ in cases], dtype=np.uint32)
            for k in range(3)]
    got = run_fpu(ops, cols)
    for (op, args, want), g in zip(cases, got, strict=True):
        assert g == want, f"{op.name}{tuple(hex(a) for a in args)} = {int(g):#010x}, not {want:#x}"


def test_ffma_rounds_once() -> None:
    """a*b + -(a*b rounded) is the rounding error of the product: nonzero only when fused."""
    a = np.array([0x3F800001, 0x3FAAAAAB, 0x40490FDB], dtype=np.uint32)
    b = np.array([0x3F800001, 0x40400000, 0x40490FDB], dtype=np.uint32)
    c = nx.fmul(a, b) ^ np.uint32(0x80000000)
    got = run_fpu(FpuOp.FFMA, [a, b, c])
    assert np.all(got != 0)
    check(FpuOp.FFMA, [a, b, c], got)


@pytest.mark.parametrize("latency", [1, 3, 4, 6])
def test_other_latencies_and_stalls(latency: int) -> None:
    """Latency 1, 3, 4 (every segment a stage) and 6 (the operands registered too, and a
    delay register after the segments) give the same results; ``en=0`` holds every stage."""
    gen = rng(0xFE + latency)
    cols = fp_operands(gen, 200, 3, edges=True)
    ops = [list(FpuOp)[int(k)] for k in gen.integers(0, len(FpuOp), len(cols[0]))]
    ens = gen.random(len(cols[0])) < 0.7
    want = fpu_expected(ops, cols)
    dut = Fpu(latency)

    async def bench(ctx) -> None:
        model = [0] * latency  # registers reset to zero: a +0 result
        for i, op in enumerate(ops):
            ctx.set(dut.op, op)
            for name, col in zip(("a", "b", "c"), cols, strict=True):
                ctx.set(getattr(dut, name), int(col[i]))
            ctx.set(dut.en, int(ens[i]))
            await ctx.tick()
            if ens[i]:
                model = [int(want[i]), *model[:-1]]
            assert ctx.get(dut.result) == model[-1], f"cycle {i}, {op.name}"

    run_clocked(dut, bench)


@pytest.mark.parametrize("latency,gated,registered", [
    (2, True, True), (3, True, True), (2, False, True), (1, False, True), (4, False, True),
    (4, False, False), (4, True, False), (2, False, False), (5, True, False), (5, False, False),
    (5, False, True)])
def test_valid_and_both_forms(latency: int, gated: bool, registered: bool) -> None:
    """``valid=0`` advances a bubble and holds the operand stage; the gated form (operands on
    a gated clock, the simulation models') and the enable form (the FPGA's) give every
    wanted result ``latency`` enabled cycles after its operands, with the unit's output
    register or its user's (the core's form: 4, the user's)."""
    gen = rng(0xF00 + 4 * latency + 2 * gated + registered)
    cols = fp_operands(gen, 300, 3, edges=True)
    ops = [list(FpuOp)[int(k)] for k in gen.integers(0, len(FpuOp), len(cols[0]))]
    inputs = [{"op": op, "a": int(cols[0][i]), "b": int(cols[1][i]), "c": int(cols[2][i])}
              for i, op in enumerate(ops)]
    dut = (Fpu(latency, gated=gated) if registered
           else UserRegister(Fpu(latency, gated=gated, output_register=False)))
    checked = check_valid_pipeline(dut, latency, inputs,
                                   fpu_expected(ops, cols), gen)
    assert checked > 50


@pytest.mark.parametrize("gated", [False, True])
def test_last_register_under_en_last(gated: bool) -> None:
    """The core's form (latency 5: the operands registered, then A | B | C | D; the last
    register under ``en_last``): mem passes its operation to wb while ex1 holds the stages
    before it, and every result is still the numerics'."""
    gen = rng(0xE1A5 + gated)
    cols = fp_operands(gen, 400, 3, edges=True)
    ops = [list(FpuOp)[int(k)] for k in gen.integers(0, len(FpuOp), len(cols[0]))]
    inputs = [{"op": op, "a": int(cols[0][i]), "b": int(cols[1][i]), "c": int(cols[2][i])}
              for i, op in enumerate(ops)]
    dut = Fpu(5, gated=gated, output_register=False, last_enable=True)
    assert check_last_enable(dut, inputs, fpu_expected(ops, cols), gen) > 50


def test_last_enable_needs_two_registers() -> None:
    with pytest.raises(ValueError, match="last_enable needs two registers"):
        Fpu(2, output_register=False, last_enable=True)


@pytest.mark.parametrize("latency,gated", [(2, True), (2, False), (3, False), (5, False)])
def test_fadd_only_adds_whatever_op_says(latency: int, gated: bool) -> None:
    """The atomic adders' form (``fadd_only``) adds ``a + b`` with any ``op`` presented (it
    reads none), bit for bit ``numerics.fadd``, in both forms and under random stalls."""
    gen = rng(0xADD + latency + gated)
    a, b = fp_operands(gen, 400, 2, edges=True)
    others = [op for op in FpuOp if op is not FpuOp.FADD]
    inputs = [{"op": others[int(k)], "a": int(x), "b": int(y), "c": 0}
              for k, x, y in zip(gen.integers(0, len(others), len(a)), a, b, strict=True)]
    checked = check_valid_pipeline(Fpu(latency, gated=gated, fadd_only=True), latency,
                                   inputs, nx.fadd(a, b), gen)
    assert checked > 50


def test_gated_needs_two_cycles() -> None:
    with pytest.raises(ValueError, match="gated needs latency >= 2"):
        Fpu(1, gated=True)
    with pytest.raises(ValueError, match="output_register=False needs latency >= 2"):
        Fpu(1, output_register=False)


@pytest.mark.parametrize("bad", [0, 9, 1.5, False])
def test_latency_is_validated(bad) -> None:
    with pytest.raises(ValueError, match="latency must be an integer from 1 to 8"):
        Fpu(bad)


def test_fpu_verilator_lint() -> None:
    # Waivers (Amaranth's generated Verilog): PROCASSINIT — registers get both an initial
    # value and a reset assignment; UNUSEDSIGNAL — carry bits of truncated arithmetic and
    # the fields of the stage register that a given path ignores; WIDTHEXPAND/WIDTHTRUNC —
    # implicit operand widening and truncation in Amaranth's arithmetic and shifts;
    # DECLFILENAME — the submodules (align, add_round, ...) share the one generated file.
    lint(Fpu(), "fpu", waivers=("DECLFILENAME", "PROCASSINIT", "UNUSEDSIGNAL", "WIDTHEXPAND",
                                "WIDTHTRUNC"))
