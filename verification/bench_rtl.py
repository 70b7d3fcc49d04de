"""RTL simulation throughput: vector add and matmul on the Verilator model through the driver.

    python -m simtgpu.verification.bench_rtl [--config small]

:func:`bench_rtl` returns, per kernel, the simulated cycles, warp- and thread-instructions,
the wall and CPU seconds of the launch, and from those cycles/s and thread-instructions/s
(``make bench`` reports them in docs/performance.md). Results are checked against NumPy, so
a fast but wrong model cannot report a figure. The first call builds the model (minutes);
the build is cached.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

__all__ = ["bench_rtl"]

ASM = Path(__file__).resolve().parent.parent / "examples" / "asm"


def _sim_cpu(dev) -> float:
    """CPU seconds used so far by the Verilator model's process (the machine is shared, so
    wall time alone can mislead)."""
    import os

    pid = dev.backend.sim.proc.pid
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(dev, kernel, grid, block, args) -> tuple[object, float]:
    c0 = _sim_cpu(dev)
    res = dev.launch(kernel, grid=grid, block=block, args=args)
    return res, _sim_cpu(dev) - c0


def bench_rtl(config: str = "small", n: int = 4096, m: int = 24) -> list[dict]:
    """Run vector add (``n`` elements) and an ``m`` x ``m`` x ``m`` matmul on the RTL backend;
    one dict of figures per kernel."""
    from simtgpu.driver_model.device import Device

    rng = np.random.default_rng(1)
    out = []
    with Device(backend="rtl", config=config) as dev:
        tpb = dev.config.warps_per_core * dev.config.lanes
        k = dev.load_module(ASM / "vector_add.s").kernel("vector_add")
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
        res, cpu = _timed(dev, k, -(-n // tpb), tpb, (da, db, dc, n))
        if not np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32)):
            raise AssertionError("vector_add on the RTL differs from NumPy")
        out.append(_figures("vector_add", f"n={n}", res, cpu))

        k = dev.load_module(ASM / "matmul.s").kernel("matmul")
        A = rng.standard_normal((m, m)).astype(np.float32)
        B = rng.standard_normal((m, m)).astype(np.float32)
        dA, dB, dC = dev.to_device(A), dev.to_device(B), dev.empty(m * m, np.float32)
        bx = min(8, dev.config.lanes)
        by = max(1, tpb // bx)
        res, cpu = _timed(dev, k, (-(-m // bx), -(-m // by)), (bx, by), (dA, dB, dC, m, m, m))
        want = np.zeros((m, m), np.float32)
        for j in range(m):  # the kernel's order: acc = fma(A[r][j], B[j][c], acc)
            want = (A[:, j:j + 1].astype(np.float64) * B[j:j + 1, :] + want).astype(np.float32)
        got = dC.to_host().reshape(m, m)
        if np.max(np.abs(got - want)) > 1e-3 * max(1.0, float(np.max(np.abs(want)))):
            raise AssertionError("matmul on the RTL differs from NumPy")
        out.append(_figures("matmul", f"{m}x{m}x{m}", res, cpu))
    for row in out:
        row["config"] = config
    return out


def _figures(name: str, size: str, res, cpu: float) -> dict:
    wall = res.wall_s
    return {
        "kernel": name, "size": size, "cycles": res.cycles,
        "warp_instructions": res.instructions, "thread_instructions": res.thread_instructions,
        "wall_s": wall, "cpu_s": cpu,
        "cycles_per_s": res.cycles / wall if wall else 0.0,
        "cycles_per_cpu_s": res.cycles / cpu if cpu else 0.0,
        "thread_instructions_per_s": res.thread_instructions / wall if wall else 0.0,
        "ipc": res.instructions / res.cycles if res.cycles else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.bench_rtl")
    p.add_argument("--config", default="small")
    args = p.parse_args(argv)
    print("| kernel | size | cycles | thread-instr | wall s | cycles/s | thread-instr/s | IPC |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in bench_rtl(args.config):
        print(f"| {r['kernel']} | {r['size']} | {r['cycles']} | {r['thread_instructions']} | "
              f"{r['wall_s']:.2f} | {r['cycles_per_s']:,.0f} | "
              f"{r['thread_instructions_per_s']:,.0f} | {r['ipc']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
