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

__all__ = ["ALU_LOOP", "bench_ipc", "bench_rtl", "model_instructions", "train_model"]

ASM = Path(__file__).resolve().parent.parent / "examples" / "asm"


def _sim_cpu(dev) -> float:
    """CPU seconds used so far by the Verilator model's process (the machine is shared, so
    wall time alone can mislead)."""
    import os

    pid = dev.backend.sim.proc.pid
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(dev, kernel, grid, block, args, runs: int) -> tuple[object, float, list[float]]:
    """Launch ``runs`` times; the result and model CPU seconds of the median launch (by wall
    time), and every launch's wall time."""
    out = []
    for _ in range(runs):
        c0 = _sim_cpu(dev)
        res = dev.launch(kernel, grid=grid, block=block, args=args)
        out.append((res.wall_s, _sim_cpu(dev) - c0, res))
    walls = [t[0] for t in out]
    _, cpu, res = sorted(out, key=lambda t: t[0])[len(out) // 2]
    return res, cpu, walls


def bench_rtl(config: str = "small", n: int = 32768, m: int = 48, runs: int = 3,
              kernels: tuple[str, ...] = ("vector_add", "matmul")) -> list[dict]:
    """Run vector add (``n`` elements) and an ``m`` x ``m`` x ``m`` matmul on the RTL backend,
    ``runs`` times each (sizes of about 85,000 cycles each on ``small``, so launch overheads
    do not count); one dict of figures per kernel, from its median run."""
    from simtgpu.driver_model.device import Device

    rng = np.random.default_rng(1)
    out = []
    with Device(backend="rtl", config=config) as dev:
        tpb = dev.config.warps_per_core * dev.config.lanes
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        if "vector_add" in kernels:
            k = dev.load_module(ASM / "vector_add.s").kernel("vector_add")
            da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
            res, cpu, walls = _timed(dev, k, -(-n // tpb), tpb, (da, db, dc, n), runs)
            if not np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32)):
                raise AssertionError("vector_add on the RTL differs from NumPy")
            out.append(_figures("vector_add", f"n={n}", res, cpu, walls))
        if "matmul" in kernels:
            k = dev.load_module(ASM / "matmul.s").kernel("matmul")
            A = rng.standard_normal((m, m)).astype(np.float32)
            B = rng.standard_normal((m, m)).astype(np.float32)
            dA, dB, dC = dev.to_device(A), dev.to_device(B), dev.empty(m * m, np.float32)
            bx = min(8, dev.config.lanes)
            by = max(1, tpb // bx)
            res, cpu, walls = _timed(dev, k, (-(-m // bx), -(-m // by)), (bx, by),
                                     (dA, dB, dC, m, m, m), runs)
            want = np.zeros((m, m), np.float32)
            for j in range(m):  # the kernel's order: acc = fma(A[r][j], B[j][c], acc)
                want = (A[:, j:j + 1].astype(np.float64) * B[j:j + 1, :] + want).astype(np.float32)
            got = dC.to_host().reshape(m, m)
            if np.max(np.abs(got - want)) > 1e-3 * max(1.0, float(np.max(np.abs(want)))):
                raise AssertionError("matmul on the RTL differs from NumPy")
            out.append(_figures("matmul", f"{m}x{m}x{m}", res, cpu, walls))
    return [dict(row, config=config) for row in out]


ALU_LOOP = """
        .kernel alu_loop            ; 14 independent-ish ALU ops and a loop branch per trip
        .param out, ptr
        .param iters, i32
        s2r     r1, tid
        ldparam r2, iters
        movi    r3, 0
        movi    r4, 1
        movi    r5, 2
        movi    r6, 3
        movi    r7, 4
loop:   add     r3, r3, r1
        xor     r4, r4, r1
        addi    r5, r5, 7
        shli    r6, r6, 1
        or      r7, r7, r1
        sub     r8, r1, r2
        and     r9, r1, r2
        addi    r2, r2, -1
        max     r10, r1, r2
        minu    r11, r1, r2
        isetp.gt p0, r2, r0
        xori    r12, r1, 5
        shri    r13, r1, 1
        sra     r14, r1, r1
   @p0  bra     loop
        ldparam r15, out
        shli    r16, r1, 2
        add     r15, r15, r16
        add     r3, r3, r4
        add     r3, r3, r7
        stg     [r15], r3
        exit
        .end
"""


def _per_core_ipc(res, cores_used: int) -> float:
    return res.instructions / res.cycles / cores_used if res.cycles else 0.0


def bench_ipc(config: str = "small", sgemm_size: int = 64) -> list[dict]:
    """Issue rate of the RTL (warp-instructions per cycle per core) on the targets of the
    microarchitecture: an ALU-only loop with one block of every warp of a core (whole launch,
    and the loop alone as the difference of two trip counts), the shared-memory-tiled sgemm
    of examples/asm/sgemm_tiled.s, and the bus transactions of a coalesced warp load."""
    from simtgpu.assembler import assemble
    from simtgpu.driver_model.device import Device

    rows: list[dict] = []
    with Device(backend="rtl", config=config) as dev:
        cfg = dev.config
        block = cfg.warps_per_core * cfg.lanes
        k = dev.load_module(assemble(ALU_LOOP, "alu_loop.s")).kernel("alu_loop")
        out = dev.zeros(block, np.int32)
        res = {it: dev.launch(k, grid=1, block=block, args=(out, it)) for it in (100, 300)}
        whole = _per_core_ipc(res[300], 1)
        loop = ((res[300].instructions - res[100].instructions)
                / (res[300].cycles - res[100].cycles))
        rows.append({"what": f"ALU loop, 1 block of {cfg.warps_per_core} warps, 300 trips",
                     "ipc": whole, "detail": f"loop alone {loop:.3f}; "
                     f"{res[300].instructions} warp-instr in {res[300].cycles} cycles"})

        n = sgemm_size
        bx = 16 if cfg.lanes >= 32 else 8 if cfg.lanes >= 8 else 4  # examples/sgemm.py's tiles
        by = max(1, min(bx, block // bx))
        k = dev.load_module(ASM / "sgemm_tiled.s").kernel("sgemm_tiled")
        rng = np.random.default_rng(2)
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        dA, dB, dC = dev.to_device(A), dev.to_device(B), dev.zeros(n * n, np.float32)
        grid = (-(-n // bx), -(-n // by))
        r = dev.launch(k, grid=grid, block=(bx, by), args=(dA, dB, dC, n, n, n))
        got = dC.to_host().reshape(n, n)
        want = A.astype(np.float64) @ B.astype(np.float64)
        if np.max(np.abs(got - want)) > 1e-4 * n * max(1.0, float(np.max(np.abs(want)))):
            raise AssertionError("sgemm_tiled on the RTL differs from NumPy")
        c = r.counters
        cycles = r.cycles * cfg.cores
        rows.append({"what": f"sgemm_tiled {n}x{n}x{n}, tile {bx}x{by}", "ipc":
                     _per_core_ipc(r, cfg.cores), "detail": "stall shares of core-cycles: "
                     + ", ".join(f"{key[6:]} {c.get(key, 0) / cycles:.0%}" for key in
                                 ("stall_scoreboard", "stall_memory", "stall_barrier",
                                  "stall_structural", "stall_idle"))})

        k = dev.load_module(ASM / "vector_add.s").kernel("vector_add")
        n = 64 * block
        a = dev.to_device(np.ones(n, np.float32))
        r = dev.launch(k, grid=n // block, block=block, args=(a, a, dev.empty(n, np.float32), n))
        warps = n // cfg.lanes
        # Each warp reads its 4 parameters (one transaction each: every lane reads the same
        # word), then loads a and b and stores c: 3 accesses of consecutive aligned words.
        data = r.counters.get("mem_transactions", 0) - 4 * warps
        rows.append({"what": f"vector_add n={n}: bus transactions per coalesced warp access",
                     "ipc": _per_core_ipc(r, cfg.cores),
                     "detail": f"{data / (3 * warps):.2f} transactions per warp access of "
                     f"{cfg.lanes} consecutive words (line = {cfg.lanes} words; minimum 1.00)"})
    return rows


def _figures(name: str, size: str, res, cpu: float, walls: list[float]) -> dict:
    wall = res.wall_s
    return {
        "kernel": name, "size": size, "cycles": res.cycles, "runs_s": walls,
        "warp_instructions": res.instructions, "thread_instructions": res.thread_instructions,
        "wall_s": wall, "cpu_s": cpu,
        "cycles_per_s": res.cycles / wall if wall else 0.0,
        "cycles_per_cpu_s": res.cycles / cpu if cpu else 0.0,
        "thread_instructions_per_s": res.thread_instructions / wall if wall else 0.0,
        "ipc": res.instructions / res.cycles if res.cycles else 0.0,
    }


def train_model(config: str) -> None:
    """The training run of a profile-guided model build (:mod:`simtgpu.rtl.verilator_runner`):
    the issue-rate kernels (an ALU loop, a shared-memory-tiled sgemm, a vector add), so that
    the profile follows what kernels exercise (integer and FP lanes, global and shared
    memory, barriers, the schedulers) rather than an idle GPU. They are not the kernels that
    :func:`bench_rtl` times, and their results are checked."""
    bench_ipc(config, sgemm_size=32)


def model_instructions(config: str = "small", n: int = 4096, m: int = 24) -> list[dict]:
    """Machine instructions the Verilator model executes per simulated cycle, counted by
    valgrind (callgrind) over the model's clock loop only, for vector add and matmul.

    Unlike wall time this count does not move with the machine's load, so it compares two
    versions of the RTL exactly (it does not see cache misses, which also cost time). Needs
    ``valgrind`` on PATH; the kernels run about 50 times slower under it, hence the small
    default sizes."""
    import os
    import shutil
    import tempfile

    if shutil.which("valgrind") is None:
        raise SystemExit("model_instructions: valgrind is not installed (apt install valgrind)")
    rows = []
    for kernel in ("vector_add", "matmul"):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            os.environ["SIMTGPU_RTL_PREFIX"] = (
                f"valgrind -q --tool=callgrind --toggle-collect=run_cycles* --dump-line=no "
                f"--callgrind-out-file={out}")
            try:
                (row,) = bench_rtl(config, n=n, m=m, runs=1, kernels=(kernel,))
            finally:
                del os.environ["SIMTGPU_RTL_PREFIX"]
            totals = [line for line in out.read_text().splitlines()
                      if line.startswith(("summary:", "totals:"))]
            instructions = int(totals[-1].split()[1])
        rows.append({"kernel": kernel, "size": row["size"], "cycles": row["cycles"],
                     "instructions": instructions,
                     "per_cycle": instructions / row["cycles"], "config": config})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.bench_rtl")
    p.add_argument("--config", default="small")
    p.add_argument("--instructions", action="store_true",
                   help="count the model's machine instructions per simulated cycle "
                        "(valgrind) instead of timing it")
    args = p.parse_args(argv)
    if args.instructions:
        print("| kernel | size | cycles | model instructions | per cycle |")
        print("| --- | --- | ---: | ---: | ---: |")
        for r in model_instructions(args.config):
            print(f"| {r['kernel']} | {r['size']} | {r['cycles']:,} | {r['instructions']:,} | "
                  f"{r['per_cycle']:,.0f} |")
        return 0
    print("| kernel | size | cycles | thread-instr | wall s | cycles/s | thread-instr/s | IPC |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in bench_rtl(args.config):
        print(f"| {r['kernel']} | {r['size']} | {r['cycles']} | {r['thread_instructions']} | "
              f"{r['wall_s']:.2f} | {r['cycles_per_s']:,.0f} | "
              f"{r['thread_instructions_per_s']:,.0f} | {r['ipc']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
