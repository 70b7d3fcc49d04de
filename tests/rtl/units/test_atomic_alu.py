"""The atomic read-modify-write word (rtl/atomic_alu.py) against the ISS's atomics
(``sim.semantics.apply_atomics``) for every op, on random and edge-case words."""

import random

import numpy as np
from amaranth import Module, Signal
from amaranth.sim import Simulator
from simtgpu.rtl.atomic_alu import atomic_result
from simtgpu.rtl.signatures import AtomOp
from simtgpu.sim.semantics import apply_atomics

_EDGES = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000,
          0x3F80_0000, 0xBF80_0000]


def _expected(op: AtomOp, old: int, b: int, c: int, fadd: int) -> int:
    if op is AtomOp.FADD:
        return fadd  # the adder's sum comes in from outside
    name = "cas" if op is AtomOp.CAS else op.name.lower()
    space = np.array([old], dtype=np.uint32)
    _, new, _ = apply_atomics(space, name, np.array([0]), np.array([b], dtype=np.uint32),
                              np.array([c], dtype=np.uint32))
    return int(new[0])


def test_atomic_result_against_the_iss():
    m = Module()
    op, old, b, c, fadd = Signal(4), Signal(32), Signal(32), Signal(32), Signal(32)
    new = atomic_result(m, op, old, b, c, fadd)
    rng = random.Random(5)

    async def bench(ctx):
        for step in range(3000):
            x = rng.choice(list(AtomOp))
            words = [rng.choice(_EDGES) if rng.random() < 0.3 else rng.getrandbits(32)
                     for _ in range(4)]
            if rng.random() < 0.2:
                words[1] = words[0]  # equal words: cas hits, min/max tie
            for sig, v in zip((old, b, c, fadd), words, strict=True):
                ctx.set(sig, v)
            ctx.set(op, x.value)
            assert ctx.get(new) == _expected(x, *words), (step, x, [hex(w) for w in words])
        # an encoding no op has keeps the word
        for code in range(len(AtomOp), 16):
            ctx.set(op, code)
            assert ctx.get(new) == ctx.get(old), code

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
