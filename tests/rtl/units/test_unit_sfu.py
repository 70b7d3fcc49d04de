"""rtl/sfu.py in Amaranth's simulator: bit-exact with numerics.sfu, fixed latency, handshake."""

import os

import numpy as np
import pytest
from amaranth.back import verilog
from simtgpu.isa import BY_MNEMONIC
from simtgpu.isa.instructions import SFU_OPS
from simtgpu.rtl.sfu import SFU_LATENCY, Sfu, SfuOp
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import fp_operands
from units_harness import BUILD, run_clocked

N_RANDOM = int(os.environ.get("SIMTGPU_SFU_VECTORS", "250"))

# The function-specific edges (around 1 for log2, powers of two for rsqrt, ...); the generic
# ones come with fp_operands(..., edges=True).
EDGES = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
         0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x3F800000, 0xBF800000,
         0x3F7FFFFF, 0x3FFFFFFF, 0x40000000, 0x40800000, 0x3FC00000, 0x3FBFFFFF, 0x3F400000]
EDGE_VALUES = [0.5, 3.0, -3.0, 0.1, 100.0, 1e-3, 3.14159265, -3.14159265, 1.5707964, -0.7,
               1e30, -1e-30, 127.9, 128.0, -126.0, -126.5, -149.0, 2.0**-12, 2.0**-13, 2.0**24,
               2.0**31, 2.0**32, 1e20, 6.2831855, 4.712389]


def bits(x: float) -> int:
    return int(nx.f32_to_bits(np.float32(x)))


def test_op_enum_follows_the_isa():
    assert [m.name for m in SfuOp] == [n.upper() for n in SFU_OPS]
    for name in SFU_OPS:
        assert SfuOp[name.upper()].value == BY_MNEMONIC[f"sfu.{name}"].fn
    assert SfuOp.as_shape().width == 3


def _operands(op: str, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    (pats,) = fp_operands(rng, N_RANDOM, 1, edges=True)
    extra = {
        "exp2": rng.uniform(-130, 130, N_RANDOM // 2),
        "sin": rng.uniform(-4, 4, N_RANDOM // 2), "cos": rng.uniform(-4, 4, N_RANDOM // 2),
        "log2": rng.uniform(0.5, 2.0, N_RANDOM // 2),
    }.get(op, rng.uniform(0, 10, N_RANDOM // 4))
    vals = np.concatenate([pats, nx.f32_to_bits(extra.astype(np.float32))])
    return EDGES + [bits(v) for v in EDGE_VALUES] + [int(v) for v in vals]


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("name", SFU_OPS)
def test_bit_exact_against_numerics(name, gated):
    """Both forms: the core clock (the FPGA's) and the gated clock of the simulation models
    (every register on a clock that rises only while an operation is in flight)."""
    dut = Sfu(gated=gated)
    ops = _operands(name, 100 + SFU_OPS.index(name))
    want = [int(v) for v in nx.sfu(name, np.array(ops, np.uint32))]
    got: list[int] = []
    latencies: list[int] = []

    async def bench(ctx):
        for a in ops:
            ctx.set(dut.op, SfuOp[name.upper()])
            ctx.set(dut.a, a)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            ctx.set(dut.a, 0xDEADBEEF)  # the unit must have sampled its operand
            n = 1
            while not ctx.get(dut.done):
                assert ctx.get(dut.busy)
                await ctx.tick()
                n += 1
                assert n <= SFU_LATENCY + 1, "done never came"
            latencies.append(n)
            got.append(ctx.get(dut.result))

    run_clocked(dut, bench)
    assert set(latencies) == {SFU_LATENCY}
    bad = [(hex(a), hex(g), hex(w)) for a, g, w in zip(ops, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} mismatches, first: {bad[:5]}"


@pytest.mark.parametrize("gated", [False, True])
def test_done_pulse_busy_and_held_result(gated):
    dut = Sfu(gated=gated)
    trace: list[tuple[int, int, int]] = []

    async def bench(ctx):
        ctx.set(dut.op, SfuOp.SQRT)
        ctx.set(dut.a, bits(9.0))
        assert not ctx.get(dut.busy) and not ctx.get(dut.done)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.op, SfuOp.RCP)  # changing the inputs mid-flight has no effect
        for _ in range(SFU_LATENCY + 4):
            trace.append((ctx.get(dut.busy), ctx.get(dut.done), ctx.get(dut.result)))
            await ctx.tick()
        # A second operation starting the cycle done is high: back-to-back issue.
        ctx.set(dut.op, SfuOp.RCP)
        ctx.set(dut.a, bits(4.0))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(SFU_LATENCY - 1):
            assert ctx.get(dut.result) == bits(3.0)  # still the old result
            await ctx.tick()
        assert ctx.get(dut.done) and ctx.get(dut.result) == bits(0.25)

    run_clocked(dut, bench)
    # Cycle i of the trace is i + 1 ticks after the start edge.
    dones = [i + 1 for i, (_, d, _) in enumerate(trace) if d]
    assert dones == [SFU_LATENCY]
    busy = [i + 1 for i, (b, _, _) in enumerate(trace) if b]
    assert busy == list(range(1, SFU_LATENCY))
    assert all(r == bits(3.0) for _, _, r in trace[SFU_LATENCY - 1:])


@pytest.mark.parametrize("gated", [False, True])
def test_start_while_busy_abandons_the_operation_in_flight(gated):
    """A start in any step of an operation in flight (the schedule's steps write their
    registers at fixed times, the multiplier's issue flags are a step ahead): the new
    operation's result is exact, ``done`` comes SFU_LATENCY cycles after its start and not for
    the abandoned one."""
    dut = Sfu(gated=gated)
    operand = {"rcp": 3.0, "rsqrt": 0.3, "sqrt": 7.0, "exp2": -2.7, "log2": 0.71,
               "sin": 2.5, "cos": -1.1}
    cases = [(cut, first, second) for cut in range(1, SFU_LATENCY)
             for first in SFU_OPS for second in SFU_OPS]
    got: list[tuple[int, int]] = []

    async def bench(ctx):
        for cut, first, second in cases:
            ctx.set(dut.op, SfuOp[first.upper()])
            ctx.set(dut.a, bits(operand[first] * 1.5))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for _ in range(cut - 1):
                assert not ctx.get(dut.done)
                await ctx.tick()
            ctx.set(dut.op, SfuOp[second.upper()])
            ctx.set(dut.a, bits(operand[second]))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            n = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                n += 1
                assert n <= SFU_LATENCY + 1, "done never came"
            got.append((n, ctx.get(dut.result)))
            await ctx.tick()

    run_clocked(dut, bench)
    for (cut, first, second), (n, result) in zip(cases, got, strict=True):
        want = int(nx.sfu(second, np.array([bits(operand[second])], np.uint32))[0])
        assert (n, result) == (SFU_LATENCY, want), (cut, first, second, n, hex(result))


def test_converts_to_verilog():
    dut = Sfu()
    text = verilog.convert(dut, name="sfu")
    assert "module sfu" in text and "result" in text
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "sfu.v").write_text(text)
