"""The matrix unit (rtl/matrix_unit.py) in Amaranth's simulator, bit for bit against
``numerics.mma``: random fp16 and bf16 tiles (moderate values with signed zeros, infinities,
NaNs, subnormals and arbitrary patterns mixed in, FP32 specials in C) at the ``tiny`` and
``small`` warp widths, played through the unit's own ports as the core drives them (the
register-file reads it asks for, a late start from ex1, a write port that is sometimes
busy)."""

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from simtgpu.isa.mma import mma_shape
from simtgpu.rtl.matrix_unit import MatrixUnit, fp32_add, half_product, mma_cycles
from simtgpu.sim import numerics as nx
from simtgpu.verification.fp_vectors import HALF_SPECIALS, fp_operands, mma_fragments, mma_tiles
from units_harness import LONG, rng

A, B, C, D = 0, 4, 8, 12  # group bases in the modelled register file


def run_mma(lanes: int, dots: int, fmt: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
            gen: np.random.Generator, gated: bool = True) -> tuple[np.ndarray, list[int]]:
    """D fragments (tiles, 4, lanes) of the unit, and the cycles each tile kept it busy.
    Between tiles the unit idles for 0 to 2 cycles with other data on its inputs (its
    registers hold)."""
    s = mma_shape(lanes)
    fa, fb, fc = mma_fragments(s, a, b, c)
    dut = MatrixUnit(warps=2, lanes=lanes, dots=dots, gated=gated)
    got = np.zeros((len(a), 4, lanes), np.uint32)
    busy_cycles: list[int] = []

    async def bench(ctx) -> None:
        for t in range(len(a)):
            regs = {A + r: fa[t, r] for r in range(s.regs_a)}
            regs.update({B + r: fb[t, r] for r in range(s.regs_b)})
            regs.update({C + r: fc[t, r] for r in range(4)})

            def present(addrs, regs=regs):
                for p, reg in enumerate(addrs):
                    val = regs.get(reg, np.zeros(lanes, np.uint32))
                    for ln in range(lanes):
                        ctx.set(dut.rdata[p][ln], int(val[ln]))

            ctx.set(dut.issue.valid, 1)
            ctx.set(dut.issue.a, A)
            ctx.set(dut.issue.b, B)
            ctx.set(dut.issue.c, C)
            ctx.set(dut.ren, 1)
            await ctx.tick()
            ctx.set(dut.issue.valid, 0)
            pending = (A, B, C)  # read in the cycle just gone, on rdata now
            cycle, start_at, done = 1, 2 + int(gen.integers(0, 3)), False
            while not done:
                present(pending)
                ren = int(gen.random() < 0.8)  # the pipeline stalls now and then
                ctx.set(dut.ren, ren)
                if ren and ctx.get(dut.read):
                    pending = tuple(int(ctx.get(dut.raddr[p])) for p in range(3))
                ctx.set(dut.ex1.start, int(cycle == start_at))
                ctx.set(dut.ex1.bf16, int(fmt == "bf16"))
                ctx.set(dut.ex1.rd, D)
                take = 0
                if ctx.get(dut.result.valid) and gen.random() < 0.7:
                    take = 1
                    r = ctx.get(dut.result.rd) - D
                    assert ctx.get(dut.result.retire) == (r == 0)
                    got[t, r] = [ctx.get(dut.result.values[ln]) for ln in range(lanes)]
                    done = r == 0
                ctx.set(dut.take, take)
                await ctx.tick()
                cycle += 1
            ctx.set(dut.take, 0)
            busy_cycles.append(cycle)
            assert not ctx.get(dut.busy)
            for _ in range(int(gen.integers(0, 3))):  # idle, other values on the inputs
                present((C, B, A))
                ctx.set(dut.ren, int(gen.integers(0, 2)))
                ctx.set(dut.ex1.rd, 0)
                await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return got, busy_cycles


@pytest.mark.parametrize("lanes,dots,gated", [(4, 1, True), (8, 2, True), (4, 1, False)])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_matrix_unit_matches_numerics(lanes, dots, gated, fmt):
    """Through stalls, late starts, a busy write port and idle gaps; the trees on the gated
    clock and (the FPGA form) under a clock enable."""
    s = mma_shape(lanes)
    gen = rng(lanes * 10 + len(fmt))
    a, b, c = mma_tiles(gen, 40 if LONG else 6, s.m, s.n, s.k, fmt)
    got, _ = run_mma(lanes, dots, fmt, a, b, c, gen, gated)
    want = np.asarray(nx.mma(fmt, a, b, c), np.uint32)
    _, _, wd = mma_fragments(s, a, b, want)
    bad = np.argwhere(got != wd)
    assert bad.size == 0, [(tuple(i), hex(got[tuple(i)]), hex(wd[tuple(i)])) for i in bad[:5]]


def test_matrix_unit_timing():
    """With no stalls and a free write port the unit is busy mma_cycles cycles."""
    s = mma_shape(4)
    gen = rng(3)
    a, b, c = mma_tiles(gen, 1, s.m, s.n, s.k, "f16")

    class Always:  # a generator that never stalls, starts at once, always takes
        def random(self):
            return 0.0

        def integers(self, lo, hi):
            return 0

    _, cycles = run_mma(4, 1, "f16", a, b, c, Always())
    assert cycles == [mma_cycles(4, 1)]


class _Node(wiring.Component):
    """One tree node of the matrix unit alone: ``fp32_add(a, b)`` or the product of the
    halves in ``a[:16]`` and ``b[:16]``."""

    def __init__(self) -> None:
        super().__init__({"a": In(32), "b": In(32), "bf16": In(1), "add": Out(32),
                          "mul": Out(32)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.comb += [self.add.eq(fp32_add(m, self.a, self.b, "add")),
                     self.mul.eq(half_product(m, self.a[:16], self.b[:16], self.bf16, "mul"))]
        return m


def _near_far(gen: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """FP32 pairs around the adder's split into near and far paths (``fp32_add``): mostly
    opposite signs, exponents 0 to 3 apart (some at the range's ends: 1, 2, 253, 254),
    significands that agree in their top 0 to 23 bits, so that sums cancel 0 to 24 bits."""
    ea = np.concatenate([gen.integers(1, 255, n - 40), np.repeat([1, 2, 253, 254], 10)])
    eb = np.clip(ea - gen.integers(0, 4, n), 0, 255)
    ma = gen.integers(0, 1 << 23, n)
    low = (1 << gen.integers(0, 24, n)) - 1  # the bits in which the significands differ
    mb = ma ^ (gen.integers(0, 1 << 23, n) & low)
    sa = gen.integers(0, 2, n)
    sb = sa ^ (gen.random(n) < 0.8)
    x = (sa << 31) | (ea << 23) | ma
    y = (sb << 31) | (eb << 23) | mb
    swap = gen.random(n) < 0.5
    return (np.where(swap, y, x).astype(np.uint32), np.where(swap, x, y).astype(np.uint32))


def test_tree_nodes_match_numerics():
    """The adder against ``numerics.fadd`` on FP32 edges, ties, cancellations, pairs around
    its near/far split and random patterns; the product against ``fmul`` of the widened
    halves on half specials and random patterns, both formats."""
    gen = rng(7)
    x, y = fp_operands(gen, 600, 2, edges=True)
    nx_, ny_ = _near_far(gen, 400)
    x, y = np.concatenate([x, nx_]), np.concatenate([y, ny_])
    hx = np.concatenate([np.repeat(HALF_SPECIALS["f16"], len(HALF_SPECIALS["f16"])),
                         gen.integers(0, 1 << 16, 400)]).astype(np.uint32)
    hy = np.concatenate([np.tile(HALF_SPECIALS["f16"], len(HALF_SPECIALS["f16"])),
                         gen.integers(0, 1 << 16, 400)]).astype(np.uint32)
    bx = np.concatenate([np.repeat(HALF_SPECIALS["bf16"], len(HALF_SPECIALS["bf16"])),
                         gen.integers(0, 1 << 16, 400)]).astype(np.uint32)
    by = np.concatenate([np.tile(HALF_SPECIALS["bf16"], len(HALF_SPECIALS["bf16"])),
                         gen.integers(0, 1 << 16, 400)]).astype(np.uint32)
    cases = [("add", 0, x, y, nx.fadd(x, y)),
             ("mul", 0, hx, hy, nx.fmul(nx.f16_to_f32(hx), nx.f16_to_f32(hy))),
             ("mul", 1, bx, by, nx.fmul(nx.bf16_to_f32(bx), nx.bf16_to_f32(by)))]
    dut = _Node()
    bad = []

    async def bench(ctx) -> None:
        for port, bf16, xs, ys, want in cases:
            ctx.set(dut.bf16, bf16)
            for xv, yv, wv in zip(xs, ys, np.asarray(want, np.uint32), strict=True):
                ctx.set(dut.a, int(xv))
                ctx.set(dut.b, int(yv))
                got = ctx.get(getattr(dut, port))
                if got != int(wv):
                    bad.append((port, bf16, hex(xv), hex(yv), hex(got), hex(wv)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert not bad, bad[:5]
