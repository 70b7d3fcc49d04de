"""The half-precision unit (rtl/half_unit.py) in Amaranth's simulator, bit for bit against the
shared numerics (``numerics.hcvt``): widening over every half pattern in a lane-packed stream,
narrowing over edge values, rounding ties, FP32 subnormals and random patterns."""

import numpy as np
import pytest
from amaranth.sim import Simulator
from simtgpu.isa.instructions import HALF2_OPS, HCVT_OPS
from simtgpu.rtl.half_unit import HALF_UNIT_OPS, LATENCY, HalfOp, HalfUnit
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import fp_operands
from units_harness import LONG, UserRegister, check_last_enable, rng

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")


def run_half(op: HalfOp, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None
             ) -> np.ndarray:
    dut = HalfUnit()
    n = len(a)
    got = np.zeros(n, dtype=np.uint32)

    async def bench(ctx) -> None:
        ctx.set(dut.en, 1)
        ctx.set(dut.valid, 1)
        ctx.set(dut.op, op)
        for i in range(n + LATENCY - 1):
            if i < n:
                ctx.set(dut.a, int(a[i]))
                ctx.set(dut.b, int(b[i]))
                if c is not None:
                    ctx.set(dut.c, int(c[i]))
            await ctx.tick()
            if i + 1 >= LATENCY:
                got[i + 1 - LATENCY] = ctx.get(dut.result)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return got


def _narrow_operands(seed: int, n: int) -> np.ndarray:
    gen = rng(seed)
    # half values and the midpoints next to them, where rounding decides
    h = gen.integers(0, 1 << 16, n, dtype=np.uint32)
    at = np.concatenate([nx.f16_to_f32(h), nx.bf16_to_f32(h)])
    mids = np.concatenate([at + (1 << 12), at + (1 << 15), at + (1 << 12) - 1, at + (1 << 15) + 1])
    subn = gen.integers(0, 1 << 23, n // 4, dtype=np.uint32) | (gen.integers(0, 2, n // 4,
                                                                          dtype=np.uint32) << 31)
    (rnd,) = fp_operands(gen, n, 1, edges=True)
    big = np.array([0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x7F7FFFFF, 0x7F800000,
                    0x7FC00000, 0xFF800001, 0x33000000, 0x33000001, 0x337FFFFF, 0x387FC000,
                    0x387FE000, 0x00000000, 0x80000000], dtype=np.uint32)
    return np.concatenate([big, at, mids, subn, rnd]).astype(np.uint32)


@pytest.mark.parametrize("name", HCVT_OPS)
def test_half_unit_matches_numerics(name):
    op = HalfOp["HCVT_" + name.upper()]
    n = 3000 if LONG else 400
    if name.endswith("2f"):
        gen = rng(len(name))
        h = np.concatenate([np.arange(0, 1 << 16, 37, dtype=np.uint32),
                            [0, 1, 0x3FF, 0x400, 0x7C00, 0x7C01, 0x7F80, 0x7F81, 0xFC00,
                             0x8001, 0xFFFF]]).astype(np.uint32)
        junk = gen.integers(0, 1 << 16, len(h), dtype=np.uint32)
        a = (h | (junk << 16)) if name[1] == "l" else ((h << 16) | junk)
        b = np.zeros_like(a)
    else:
        a = _narrow_operands(len(name), n)
        b = np.roll(a, 7)
    got = run_half(op, a, b)
    want = np.asarray(nx.hcvt(name, a, b), dtype=np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(a[i])), hex(int(got[i])), hex(int(want[i])))
                           for i in bad[:5]]


EDGE16 = np.array([0, 1, 2, 0x3FF, 0x400, 0x401, 0x3C00, 0x3C01, 0x3BFF, 0x7BFF, 0x7BFE,
                   0x7C00, 0x7C01, 0x7E00, 0x5BFF, 0x0200], dtype=np.uint32)
EDGE16 = np.concatenate([EDGE16, EDGE16 | 0x8000])
EDGEBF = np.array([0, 1, 2, 0x7F, 0x80, 0x81, 0x3F80, 0x3F81, 0x3F7F, 0x7F7F, 0x7F7E,
                   0x7F80, 0x7F81, 0x7FC0, 0x0040, 0x4000, 0x0100, 0x1000], dtype=np.uint32)
EDGEBF = np.concatenate([EDGEBF, EDGEBF | 0x8000])


def _arith_operands(seed: int, n: int, fmt: str = "f16") -> list[np.ndarray]:
    gen = rng(seed)
    edges = EDGE16 if fmt == "f16" else EDGEBF
    cols = []
    for _ in range(3):
        lo = np.concatenate([gen.choice(edges, n // 4), gen.integers(0, 1 << 16, n,
                                                                      dtype=np.uint32)])
        hi = np.concatenate([gen.integers(0, 1 << 16, n // 4, dtype=np.uint32),
                             gen.choice(edges, n)])
        cols.append(lo | (hi << 16))
    # near-cancellation: c close to -(a * b), the cases where the rounding decides
    prod = np.asarray(nx.half2("hmul2", fmt, cols[0], cols[1]))
    cols[2][: n // 2] = (prod[: n // 2] ^ 0x80008000) ^ gen.integers(0, 4, n // 2,
                                                                     dtype=np.uint32)
    return cols


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("name", [*HALF2_OPS, "hfma2"])
def test_half_unit_arithmetic(name, fmt):
    op = HalfOp[f"{name.upper()}_{fmt.upper()}"]
    a, b, c = _arith_operands(len(name) * 7 + len(fmt), 3000 if LONG else 500, fmt)
    if fmt == "bf16":  # sums of terms whose exponents differ a lot: the aligned path
        gen = rng(99)
        far = gen.integers(0, 1 << 32, 300, dtype=np.uint32)
        a, b = np.concatenate([a, far]), np.concatenate([b, far ^ 0x3F003F00])
        c = np.concatenate([c, gen.integers(0, 1 << 32, 300, dtype=np.uint32)])
    got = run_half(op, a, b, c)
    want = np.asarray(nx.hfma2(fmt, a, b, c) if name == "hfma2"
                      else nx.half2(name, fmt, a, b), dtype=np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(a[i])), hex(int(b[i])), hex(int(c[i])), hex(int(got[i])),
                            hex(int(want[i]))) for i in bad[:5]]


def test_unit_ops():
    assert HALF_UNIT_OPS == {f"hcvt.{o}" for o in HCVT_OPS} | {
        f"{o}.{f}" for o in (*HALF2_OPS, "hfma2") for f in ("f16", "bf16")}


def _random_operations(gen: np.random.Generator, n: int) -> tuple[list[dict], list[int]]:
    """``n`` operations of every kind (port values) and their results by the numerics."""
    a, b, c = (gen.integers(0, 1 << 32, n, dtype=np.uint32) for _ in range(3))
    a[::3] = _narrow_operands(3, n)[: len(a[::3])]  # conversions' rounding cases
    kinds = [(name, fmt) for name in (*HALF2_OPS, "hfma2") for fmt in ("f16", "bf16")]
    kinds += [(f"hcvt.{name}", None) for name in HCVT_OPS]
    ops = [HalfOp[f"{name.upper()}_{fmt.upper()}"] if fmt else
           HalfOp["HCVT_" + name[5:].upper()] for name, fmt in kinds]
    pick = gen.integers(0, len(kinds), n)

    def reference(i: int, name: str, fmt: str | None) -> int:
        x, y, z = a[i:i + 1], b[i:i + 1], c[i:i + 1]
        if fmt is None:
            return int(np.asarray(nx.hcvt(name[5:], x, y))[0])
        return int((nx.hfma2(fmt, x, y, z) if name == "hfma2" else nx.half2(name, fmt, x, y))[0])

    inputs = [{"op": ops[k], "a": int(a[i]), "b": int(b[i]), "c": int(c[i])}
              for i, k in enumerate(pick)]
    return inputs, [reference(i, *kinds[k]) for i, k in enumerate(pick)]


@pytest.mark.parametrize("gated", [False, True])
def test_half_unit_last_register_under_en_last(gated):
    """The core's form (latency 5, the last register under ``en_last``): mem passes its
    operation to wb while ex1 holds the stages before it; every result against the
    numerics."""
    gen = rng(0x1A57 + gated)
    inputs, want = _random_operations(gen, 400)
    dut = HalfUnit(gated=gated, latency=5, output_register=False, last_enable=True)
    assert check_last_enable(dut, inputs, want, gen) > 50


@pytest.mark.parametrize("gated,latency,registered", [
    (True, 2, True), (False, 2, True), (False, 4, True), (False, 4, False), (True, 4, False),
    (False, 5, False), (True, 5, False)])
def test_half_unit_holds_through_stalls(gated, latency, registered):
    """Both forms of the operand registers (the gated clock of the simulation models and the
    clock enable of the FPGA flow), at latency 2 and 4 (every segment a stage; without the
    output register, the core's form, with its user's register), take an operation only
    where en & valid and hold the result while en is low: random stalls, bubbles and a mix
    of every operation (a value that skips a segment register shows here), results against
    the numerics."""
    gen = rng(5 + gated + 2 * latency + 16 * registered)
    n = 300
    inputs, want = _random_operations(gen, n)
    a, b, c = ([p[x] for p in inputs] for x in "abc")
    ops = [p["op"] for p in inputs]
    dut = (HalfUnit(gated=gated, latency=latency) if registered else
           UserRegister(HalfUnit(gated=gated, latency=latency, output_register=False)))
    got: list[int] = []

    async def bench(ctx) -> None:
        i = 0
        pipe = [None] * latency  # index of the operation in each stage (None: a bubble)
        while len(got) < n:
            en = int(gen.random() < 0.7)
            valid = int(i < n and gen.random() < 0.8)
            ctx.set(dut.en, en)
            ctx.set(dut.valid, valid)
            if i < n:
                ctx.set(dut.op, ops[i])
                ctx.set(dut.a, int(a[i]))
                ctx.set(dut.b, int(b[i]))
                ctx.set(dut.c, int(c[i]))
            await ctx.tick()
            if en:
                pipe = [i if valid else None, *pipe[:-1]]
                i += valid
                if pipe[-1] is not None:
                    got.append(ctx.get(dut.result))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == want


@pytest.mark.parametrize("bad", [1, 3, 6])
def test_half_unit_latency_is_validated(bad):
    with pytest.raises(ValueError, match=r"HalfUnit: latency must be one of \[2, 4, 5\]"):
        HalfUnit(latency=bad)


def test_half_unit_last_enable_needs_two_registers():
    with pytest.raises(ValueError, match="last_enable needs two registers"):
        HalfUnit(latency=2, output_register=False, last_enable=True)
