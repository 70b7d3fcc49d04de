"""The FP units' arithmetic helpers (rtl/fp_utils.py) in Amaranth's simulator against Python's
integers: ``at_least`` (a compare with a constant as gates) over every input of a few widths,
``sum_of`` (three terms and a constant in one carry chain) over random and extreme terms,
``lzc`` over every 8-bit input and random wide ones."""

import random

from amaranth import Module, Signal
from amaranth.sim import Simulator
from simtgpu.rtl.fp_utils import at_least, lzc, sum_of


def _settle(m: Module, inputs: list[Signal], outputs: list, cases: list[tuple]) -> list[tuple]:
    """Each case's outputs, the inputs set and the combinational logic settled."""
    got = []

    async def bench(ctx) -> None:
        for case in cases:
            for s, v in zip(inputs, case, strict=True):
                ctx.set(s, v)
            got.append(tuple(ctx.get(o) for o in outputs))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


def test_at_least_is_a_compare_with_its_constant() -> None:
    for width in (1, 3, 7):
        m = Module()
        bits = Signal(width)
        consts = list(range((1 << width) + 2))  # past the top too: never true there
        outs = []
        for c in consts:
            o = Signal(name=f"ge{c}")
            m.d.comb += o.eq(at_least(bits, c))
            outs.append(o)
        cases = [(v,) for v in range(1 << width)]
        for (v,), row in zip(cases, _settle(m, [bits], outs, cases), strict=True):
            assert list(row) == [int(v >= c) for c in consts], (width, v)


def test_sum_of_three_terms_and_a_constant() -> None:
    rng = random.Random(11)
    width = 12
    for plus_n in (1, 2):  # z - x - y + k, and x + y - z + k
        m = Module()
        terms = [Signal(8, name=f"t{i}") for i in range(3)]
        k = Signal(range(-300, 300))
        out = sum_of(m, terms[:plus_n], terms[plus_n:], k, width, "s")
        cases = [(0, 0, 0, 0), (255, 255, 255, -299), (255, 0, 0, 299), (0, 255, 255, 150)]
        cases += [(rng.randrange(256), rng.randrange(256), rng.randrange(256),
                   rng.randrange(-300, 300)) for _ in range(400)]
        for case, (got,) in zip(cases, _settle(m, [*terms, k], [out], cases), strict=True):
            t = case[:3]
            want = sum(t[:plus_n]) - sum(t[plus_n:]) + case[3]
            assert got == want % (1 << width), (plus_n, case, got)


def test_lzc_counts_leading_zeros() -> None:
    rng = random.Random(12)
    for width, values in ((8, range(256)), (51, [rng.getrandbits(rng.randrange(52))
                                                   for _ in range(300)])):
        m = Module()
        v = Signal(width)
        zero, count = lzc(v)
        z, c = Signal(), Signal(len(count))
        m.d.comb += [z.eq(zero), c.eq(count)]
        cases = [(x,) for x in values]
        for (x,), (gz, gc) in zip(cases, _settle(m, [v], [z, c], cases), strict=True):
            assert gz == int(x == 0), (width, x)
            if x:
                assert gc == width - x.bit_length(), (width, x, gc)
