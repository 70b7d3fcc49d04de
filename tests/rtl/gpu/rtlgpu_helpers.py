"""Amaranth-simulator helpers for the GPU-level unit tests: stream drivers and a reference
memory that executes requests the way docs/execution-model.md defines them."""

from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator
from int_ref import INT_REF
from simtgpu.rtl.signatures import AtomOp, MemKind
from simtgpu.sim import numerics as nx


def run_sim(dut, *testbenches, processes=(), vcd: str | None = None) -> None:
    """Run ``dut`` with a 1 MHz clock and the given async testbenches until they all return."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb in testbenches:
        sim.add_testbench(tb)
    for p in processes:
        sim.add_testbench(p, background=True)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


def set_request(ctx, payload, kind, addr, *, wdata=None, be=0, op=0, b=0, c=0, tag=0,
                line_words=4) -> None:
    ctx.set(payload.kind, kind)
    ctx.set(payload.addr, addr)
    words = list(wdata) if wdata is not None else [0] * line_words
    for i, w in enumerate(words):
        ctx.set(payload.wdata[i], w)
    ctx.set(payload.be, be)
    ctx.set(payload.atom_op, AtomOp(op))
    ctx.set(payload.atom_b, b)
    ctx.set(payload.atom_c, c)
    ctx.set(payload.tag, tag)


async def send(ctx, stream, setter, cycle: list[int] | None = None) -> int:
    """Offer one payload (written by ``setter(ctx, payload)``) until accepted; returns the
    cycle of acceptance as counted in ``cycle[0]`` (if given)."""
    setter(ctx, stream.payload)
    ctx.set(stream.valid, 1)
    while True:
        at = cycle[0] if cycle else 0
        # Sample at the edge itself: other testbenches may change ``ready`` in this cycle.
        *_, ready = await ctx.tick().sample(stream.ready)
        if ready:
            break
    ctx.set(stream.valid, 0)
    return at


class RefMemory:
    """Word-addressed reference memory with the semantics of the memory model."""

    def __init__(self, size_bytes: int, line_words: int):
        self.words = np.zeros(size_bytes // 4, dtype=np.uint32)
        self.lw = line_words

    def line(self, addr: int) -> list[int]:
        base = addr // 4 // self.lw * self.lw
        return [int(w) for w in self.words[base:base + self.lw]]

    def write(self, addr: int, wdata: list[int], be: int) -> None:
        base = addr // 4 // self.lw * self.lw
        for i in range(self.lw):
            old = int(self.words[base + i])
            new = old
            for b in range(4):
                if be >> (4 * i + b) & 1:
                    new = (new & ~(0xFF << 8 * b)) | (wdata[i] & (0xFF << 8 * b))
            self.words[base + i] = new

    def atomic(self, addr: int, op: int, b: int, c: int) -> int:
        old = int(self.words[addr // 4])
        op = AtomOp(op)
        if op in (AtomOp.ADD, AtomOp.MIN, AtomOp.MAX):
            new = INT_REF[op.name.lower()](old, b)
        elif op == AtomOp.EXCH:
            new = b
        elif op == AtomOp.FADD:
            new = int(nx.fadd(np.uint32(old), np.uint32(b)))
        else:
            new = c if old == b else old
        self.words[addr // 4] = new
        return old

    def execute(self, kind: MemKind, addr: int, wdata=None, be=0, op=0, b=0, c=0) -> list[int]:
        """Apply a request; return the response's rdata."""
        if kind == MemKind.READ:
            return self.line(addr)
        if kind == MemKind.WRITE:
            self.write(addr, wdata, be)
            return None  # WRITE response data is not meaningful
        return [self.atomic(addr, op, b, c)] + [None] * (self.lw - 1)
