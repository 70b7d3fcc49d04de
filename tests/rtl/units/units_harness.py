"""Helpers shared by the unit tests of this folder, both tiers: the quick checks in Amaranth's
simulator (``run_comb``, ``run_clocked``, lint of the unit's Verilog) and the benches on
Verilator (the cocotb runner of :mod:`simtgpu.verification.units`).

Operands come from :mod:`simtgpu.verification.fp_vectors` (seeded random plus edge cases); the
references are the tests' own (Python integers for the ALU and multiplier: tests/int_ref.py,
written from the ISA's meanings) or the project's numerics (:data:`FPU_REFERENCE`).
"""

import os
from collections.abc import Callable, Sequence

import numpy as np
from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.sim import Simulator
from simtgpu.rtl.fpu import FpuOp
from simtgpu.rtlsim.verilator import lint_verilog
from simtgpu.sim import numerics as nx
from simtgpu.verification.toolchain import BUILD_ROOT

BUILD = BUILD_ROOT / "rtl_units"

LONG = os.environ.get("SIMTGPU_LONG", "") not in ("", "0")
"""``SIMTGPU_LONG=1`` turns on the long randomized runs."""

SEED = int(os.environ.get("SIMTGPU_SEED", "20261121"))
"""Seed of the Verilator benches' random operands (``SIMTGPU_SEED`` picks another)."""

MASK32 = 0xFFFFFFFF

FPU_REFERENCE: dict[FpuOp, tuple[int, Callable[..., np.ndarray]]] = {
    FpuOp.FADD: (2, nx.fadd), FpuOp.FSUB: (2, nx.fsub), FpuOp.FMUL: (2, nx.fmul),
    FpuOp.FFMA: (3, nx.ffma), FpuOp.FMIN: (2, nx.fmin), FpuOp.FMAX: (2, nx.fmax),
    FpuOp.FABS: (1, nx.fabs), FpuOp.FNEG: (1, nx.fneg),
    FpuOp.CVT_I2F: (1, lambda a: nx.cvt("i2f", a)), FpuOp.CVT_U2F: (1, lambda a: nx.cvt("u2f", a)),
    FpuOp.CVT_F2I: (1, lambda a: nx.cvt("f2i", a)), FpuOp.CVT_F2U: (1, lambda a: nx.cvt("f2u", a)),
}
"""FPU op -> (arity, reference on uint32 columns) from ``simtgpu.sim.numerics``."""


def fpu_expected(ops: Sequence[FpuOp], cols: Sequence[np.ndarray]) -> np.ndarray:
    """The numerics' results for a mixed stream of ops over three operand columns."""
    want = np.zeros(len(ops), dtype=np.uint32)
    codes = np.array([op.value for op in ops])
    for op, (arity, ref) in FPU_REFERENCE.items():
        sel = codes == op.value
        if sel.any():
            want[sel] = np.asarray(ref(*(col[sel] for col in cols[:arity])), dtype=np.uint32)
    return want


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def run_comb(dut, body: Callable) -> None:
    """Run an async testbench ``body(ctx)`` against a combinational ``dut``."""
    sim = Simulator(dut)
    sim.add_testbench(body)
    _run(sim, dut)


def run_clocked(dut, body: Callable) -> None:
    """Run an async testbench ``body(ctx)`` against ``dut`` clocked by the ``sync`` domain."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(body)
    _run(sim, dut)


class UserRegister(wiring.Component):
    """A lane unit built with ``output_register=False`` (``en``, ``valid``, ``op``, ``a``,
    ``b``, ``c``, ``result``) and the register its user adds, as the core's ``mem_wb``:
    loaded under ``en``, so the pair times as the unit with its own output register."""

    def __init__(self, unit: wiring.Component) -> None:
        self.unit = unit
        super().__init__(unit.signature)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.unit = unit = self.unit
        for name in ("en", "valid", "op", "a", "b", "c"):
            m.d.comb += getattr(unit, name).eq(getattr(self, name))
        if "en_last" in unit.signature.members:  # its last register under en too here
            m.d.comb += unit.en_last.eq(self.en)
        with m.If(self.en):
            m.d.sync += self.result.eq(unit.result)
        return m


def check_valid_pipeline(dut, latency: int, inputs: Sequence[dict[str, int]],
                         want: Sequence[int], gen: np.random.Generator) -> int:
    """Drive a pipelined lane unit (``en``, ``valid``, ``result``) with ``inputs`` (port
    values, one dict per cycle) under random ``en`` and ``valid``: each wanted operation's
    result (``want``) must appear ``latency`` enabled cycles after it entered; a bubble's
    result (``valid=0``) is not checked. Returns how many results were checked."""
    ens = gen.random(len(inputs)) < 0.7
    valids = gen.random(len(inputs)) < 0.5
    checked = 0

    async def bench(ctx) -> None:
        nonlocal checked
        model: list[int | None] = [0] * latency  # registers reset to zero
        for i, ports in enumerate(inputs):
            for name, value in ports.items():
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.en, int(ens[i]))
            ctx.set(dut.valid, int(valids[i]))
            await ctx.tick()
            if ens[i]:
                model = [int(want[i]) if valids[i] else None, *model[:-1]]
            if model[-1] is not None:
                assert ctx.get(dut.result) == model[-1], f"cycle {i}: {ports}"
                checked += 1

    run_clocked(dut, bench)
    return checked


def check_last_enable(dut, inputs: Sequence[dict[str, int]], want: Sequence[int],
                      gen: np.random.Generator) -> int:
    """Drive a lane unit built with ``output_register=False, last_enable=True`` as the core
    does: ``en`` (the stages from rr to mem move on) at random, ``en_last`` (mem moves on
    to wb) whenever ``en`` and at random besides (ex1 holds, mem does not: the operation
    before the last register leaves it, a bubble in the core's eyes). ``result`` (logic
    after the last register) must be the wanted result of the operation in that register;
    bubbles are not checked. Returns how many results were checked."""
    k = dut.latency - 1  # the unit's own registers
    ens = gen.random(len(inputs)) < 0.6
    lasts = ens | (gen.random(len(inputs)) < 0.5)
    valids = gen.random(len(inputs)) < 0.6
    checked = 0

    async def bench(ctx) -> None:
        nonlocal checked
        regs: list[int | None] = [None] * k  # the operation in each register
        for i, ports in enumerate(inputs):
            for name, value in ports.items():
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.en, int(ens[i]))
            ctx.set(dut.en_last, int(lasts[i]))
            ctx.set(dut.valid, int(valids[i]))
            await ctx.tick()
            new = list(regs)
            if lasts[i]:
                new[-1] = regs[-2]
                if not ens[i]:
                    new[-2] = None
            if ens[i]:
                new[1:-1] = regs[:-2]
                new[0] = i if valids[i] else None
            regs = new
            if regs[-1] is not None:
                assert ctx.get(dut.result) == int(want[regs[-1]]), f"cycle {i}: {ports}"
                checked += 1

    run_clocked(dut, bench)
    return checked


def _run(sim: Simulator, dut) -> None:
    if os.environ.get("SIMTGPU_VCD"):
        BUILD.mkdir(parents=True, exist_ok=True)
        with sim.write_vcd(str(BUILD / f"{type(dut).__name__.lower()}.vcd")):
            sim.run()
    else:
        sim.run()


def lint(component, name: str, waivers: Sequence[str] = ()) -> None:
    """Convert ``component`` to Verilog and lint it (``verilator --lint-only -Wall``, only the
    rules ``waivers`` waived); fail with Verilator's complaints."""
    BUILD.mkdir(parents=True, exist_ok=True)
    path = BUILD / f"{name}.v"
    path.write_text(verilog.convert(component, name=name))
    problems = lint_verilog(path, name, waive=waivers)
    assert not problems, f"verilator lint of {name} failed:\n{problems}"
