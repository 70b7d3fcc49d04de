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
from simtgpu.assembler.examples import example_asm
from simtgpu.rtlsim.workload import hgemm_mma, hgemm_mma_reference, issue_rate, sgemm_tiled

__all__ = ["VORTEX_IPC", "bench_atomics", "bench_ipc", "bench_memory", "bench_mma",
           "bench_pipeline", "bench_rtl", "model_instructions", "render_atomics",
           "render_pipeline"]

VORTEX_IPC = {"vector_add": 0.34, "sgemm_tiled": 0.42}
"""Vortex's published warp-instructions per cycle on one core (the figures issue 11 cites),
set beside ours in docs/performance.md."""
MEMORY_KERNELS = ("sgemm_tiled", "vector_add", "vector_add4", "matmul", "gather")
"""The kernels of :func:`bench_memory`."""


def vector_add4_launch(n: int, block: int, threads: int) -> tuple[int, int]:
    """``(grid, block)`` of examples/asm/vector_add4.s (a grid-stride loop) for ``n``
    elements in blocks of ``block`` threads (a power of two): about ``threads`` in all (the
    GPU's warp slots, say), rounded up to a multiple of 32 and no more than the
    ``32 * ceil(n / 128)`` that one trip of the loop needs, its header's launch rule."""
    if block < 1 or block & (block - 1):
        raise ValueError(f"vector_add4 needs a power-of-two block, not {block}")
    need = 32 * max(1, -(-n // 128))
    total = min(need, 32 * max(1, -(-threads // 32)))
    return -(-total // block), block


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
              kernels: tuple[str, ...] = ("vector_add", "matmul"), l1: bool | None = None,
              l2: bool | None = None) -> list[dict]:
    """Run vector add (``n`` elements) and an ``m`` x ``m`` x ``m`` matmul on the RTL backend,
    ``runs`` times each (sizes of about 85,000 cycles each on ``small``, so launch overheads
    do not count), with each core's L1 and the shared L2 on, off, or as the configuration
    says (None); one dict of figures per kernel, from its median run."""
    from simtgpu.driver_model.device import Device

    rng = np.random.default_rng(1)
    out = []
    with Device(backend="rtl", config=config, l1=l1, l2=l2) as dev:
        caches = _caches_label(dev.backend.config)
        tpb = dev.config.warps_per_core * dev.config.lanes
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        if "vector_add" in kernels:
            k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
            da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
            res, cpu, walls = _timed(dev, k, -(-n // tpb), tpb, (da, db, dc, n), runs)
            if not np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32)):
                raise AssertionError("vector_add on the RTL differs from NumPy")
            out.append(_figures("vector_add", f"n={n}", res, cpu, walls))
        if "matmul" in kernels:
            k = dev.load_module(example_asm("matmul")).kernel("matmul")
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
    return [dict(row, config=config, caches=caches) for row in out]


def _caches_label(cfg) -> str:
    """Which caches a configuration has on: ``none``, ``L1``, ``L2`` or ``L1+L2``."""
    on = [name for name, c in (("L1", cfg.l1_cache), ("L2", cfg.l2_cache)) if c]
    return "+".join(on) or "none"


CACHE_BUILDS = {"none": (False, False), "L1": (True, False), "L2": (False, True),
                "L1+L2": (True, True)}
"""The four cache builds :func:`bench_rtl` can be asked for (``--caches``), as ``(l1, l2)``."""


def bench_ipc(config: str = "small", sgemm_size: int = 64, memory: str | None = None,
              l1: bool | None = None, l2: bool | None = None) -> list[dict]:
    """Issue rate of the RTL on ``config``: :func:`simtgpu.rtlsim.workload.issue_rate` through
    the driver's RTL backend, with device-memory setting ``memory`` (default ``ideal``) and
    each core's L1 and the shared L2 on, off, or as the configuration says (None)."""
    from simtgpu.driver_model.device import Device

    with Device(backend="rtl", config=config, memory=memory, l1=l1, l2=l2) as dev:
        return issue_rate(dev, sgemm_size)


def bench_pipeline(config: str = "small", memory: str = "realistic", size: int = 32,
                   block: int = 8, block_ks: tuple[int, ...] = (8, 4),
                   stages: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
    """The compiled tiled matmul (examples/dsl/matmul.py: ``block`` x ``block`` tiles of C,
    each ``block_ks`` deep; at 8 x 4 x 8 each thread of 4 warps loads one element of A and
    one of B per step, so a stage ahead fits in registers) of ``size`` cubed on the RTL with
    device-memory setting ``memory``, once per tile depth and ``num_stages`` in ``stages``
    on one device; every result must equal ``num_stages=1``'s bit for bit and NumPy's
    product to rounding. One row per launch: cycles, warp-instructions, registers, spilled
    values and the stages the compiler used."""
    import simtgpu.compiler_backend as triton
    from simtgpu.compiler_backend.bench_ptx import EXAMPLES, _load
    from simtgpu.driver_model.device import Device

    kern = _load(EXAMPLES / "matmul.py", False, "pipeline").matmul_kernel
    rng = np.random.default_rng(4)
    A = rng.standard_normal((size, size)).astype(np.float32)
    B = rng.standard_normal((size, size)).astype(np.float32)
    rows, first = [], None
    with Device(backend="rtl", config=config, memory=memory) as dev:
        triton.set_device(dev)
        grid = ((-(-size // block)) ** 2,)
        for block_k, s in ((bk, s) for bk in block_ks for s in stages):
            C = np.zeros((size, size), np.float32)
            args = (A, B, C, size, size, size, size, 1, size, 1, size, 1)
            cexpr = dict(BLOCK_SIZE_M=block, BLOCK_SIZE_N=block, BLOCK_SIZE_K=block_k,
                         GROUP_SIZE_M=2, num_stages=s)
            ck = kern.warmup(*args, grid=grid, **cexpr)
            res = kern[grid](*args, **cexpr)
            if s == stages[0]:
                first = C.copy()
                want = A.astype(np.float64) @ B.astype(np.float64)
                if np.max(np.abs(C - want)) > 1e-4 * size * max(1.0, float(np.abs(want).max())):
                    raise AssertionError("the compiled matmul on the RTL differs from NumPy")
            elif not np.array_equal(C.view(np.uint32), first.view(np.uint32)):
                raise AssertionError(f"num_stages={s} differs from num_stages={stages[0]}")
            rows.append({"num_stages": s, "used": ck.stats.get("num_stages", s),
                         "cycles": res.cycles, "warp_instructions": res.instructions,
                         "registers": ck.n_regs, "spilled": ck.n_spills,
                         "size": f"{size}x{size}x{size}", "tiles": f"{block}x{block_k}x{block}",
                         "memory": memory, "config": config})
    return rows


ATOMICS_KERNEL = """
        .kernel atomics
        .param  out, ptr
        .param  iters, i32
        .param  kind, i32
        .shared 16
        s2r     r1, tid.x
        andi    r2, r1, 3
        shli    r2, r2, 2               ; word tid % 4 of shared memory and of out
        cvt.u2f r3, r1
        ldparam r4, iters
        ldparam r5, kind
        ldparam r6, out
        add     r7, r6, r2
        movi    r8, 0
        movi    r11, 1
        movi    r12, 2
        movi    r13, 3
        isetp.eq p0, r5, r0             ; the kind of atomic: one predicate true
        isetp.eq p1, r5, r11
        isetp.eq p2, r5, r12
        isetp.eq p3, r5, r13
loop:
   @p0  atoms.add r9, [r2], r1     ; a destination each: the three predicated off
   @p1  atoms.fadd r16, [r2], r3   ; do not wait on the one that runs (a register's
   @p2  atom.add r17, [r7], r1     ; writes stay in order, predicated off or not)
   @p3  atom.fadd r18, [r7], r3
        addi    r8, r8, 1
        isetp.lt p4, r8, r4
   @p4  bra     loop
        bar
        movi    r14, 4
        isetp.lt p5, r1, r14
        lds     r10, [r2]
        addi    r15, r7, 16
   @p5  stg     [r15], r10              ; the shared words after the global ones
        exit
        .end
"""
"""Every thread of one block does ``iters`` atomics of one kind (``kind``: 0 ``atoms.add``,
1 ``atoms.fadd``, 2 ``atom.add``, 3 ``atom.fadd``) on word ``tid % 4`` of shared memory or
of ``out``; then the shared words go to ``out[4:8]``."""
ATOMIC_KINDS = ("atoms.add", "atoms.fadd", "atom.add", "atom.fadd")


def bench_atomics(config: str = "small", memory: str = "realistic", iters: int = 8
                  ) -> list[dict]:
    """Cycles of :data:`ATOMICS_KERNEL` on the RTL (one block of every warp slot of a core,
    device-memory setting ``memory``), per kind of atomic; each result must equal the
    ISS's bit for bit (the order of a word's atomics is fixed: lane order within a warp,
    the warps as they reach the unit, which both follow)."""
    from simtgpu.driver_model.device import Device

    def run(dev, k, kind: int) -> tuple[object, np.ndarray]:
        out = dev.to_device(np.zeros(8, np.uint32))
        res = dev.launch(k, grid=1, block=dev.config.warps_per_core * dev.config.lanes,
                         args=(out, iters, kind))
        return res, out.to_host().copy()

    rows = []
    with Device(backend="rtl", config=config, memory=memory) as rtl, \
            Device(backend="iss", config=config) as iss:
        threads = rtl.config.warps_per_core * rtl.config.lanes
        k_rtl, k_iss = (d.load_module(ATOMICS_KERNEL).kernel("atomics") for d in (rtl, iss))
        for kind, name in enumerate(ATOMIC_KINDS):
            res, got = run(rtl, k_rtl, kind)
            _, want = run(iss, k_iss, kind)
            if not np.array_equal(got, want):
                raise AssertionError(f"{name} on the RTL differs from the ISS: {got} {want}")
            rows.append({"atomic": name, "atomics": threads * iters, "threads": threads,
                         "iters": iters, "cycles": res.cycles, "config": config,
                         "memory": memory})
    return rows


def render_atomics(rows: list[dict], info: dict[str, str]) -> str:
    """The atomics section of docs/performance.md (cycle counts: deterministic)."""
    r0 = rows[0]
    lines = ["## Atomics on the RTL", "",
             f"One block of {r0['threads']} threads on `{r0['config']}` (device memory "
             f"`{r0['memory']}`), each doing {r0['iters']} atomics of one kind on one of four "
             "words "
             "(`simtgpu.verification.bench_rtl.ATOMICS_KERNEL`); every result equals the "
             "ISS's. Shared atomics run in the LSU one lane at a time; global ones in the "
             "L2 (or the DRAM model without one). Cycle counts do not depend on the machine "
             "running the simulation.", "",
             f"Commit {info['commit']}, {info['date']}.", "",
             "| atomic | atomics | cycles | cycles per atomic |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{r['atomic']}` | {r['atomics']} | {r['cycles']:,} "
              f"| {r['cycles'] / r['atomics']:.2f} |" for r in rows]
    lines += ["", "Command: `python -m simtgpu.cli.bench --part atomics` (library: "
              "`simtgpu.verification.bench_rtl.bench_atomics`)."]
    return "\n".join(lines)


def render_pipeline(rows: list[dict], info: dict[str, str]) -> str:
    """The software-pipelining section of docs/performance.md (cycle counts: deterministic)."""
    r0 = rows[0]
    lines = ["## Software pipelining (num_stages) on the RTL", "",
             f"The compiled tiled matmul (examples/dsl/matmul.py, 4 warps) of {r0['size']} on "
             f"configuration `{r0['config']}` with the `{r0['memory']}` device-memory setting, "
             "per tile shape (M x K x N) and `num_stages`, on one device; every result equals "
             "num_stages=1's bit for bit. `used` is the stage count the compiler kept (fewer "
             "where more would spill more registers). Cycle counts do not depend on the "
             "machine running the simulation.", "",
             f"Commit {info['commit']}, {info['date']}.", "",
             "| tiles | num_stages | used | cycles | warp-instr | registers | spilled "
             "| vs 1 stage |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base: dict[str, int] = {}
    for r in rows:
        b = base.setdefault(r["tiles"], r["cycles"])
        lines.append(f"| {r['tiles']} | {r['num_stages']} | {r['used']} | {r['cycles']} "
                     f"| {r['warp_instructions']} | {r['registers']} | {r['spilled']} "
                     f"| {b / r['cycles']:.2f}x |")
    lines += ["", "Command: `python -m simtgpu.cli.bench --part pipeline` (library: "
              "`simtgpu.verification.bench_rtl.bench_pipeline`)."]
    return "\n".join(lines)


def _memory_row(kernel: str, size: str, setting: str, res, cfg, memory) -> dict:
    """Figures of one launch: issue rate per core, DRAM bandwidth (the lines the cores' memory
    paths sent toward memory, by the counters) as a share of the modelled peak, memory-stall
    share of core-cycles, the L1's hit rate (hits over reads, merges counted as not hits) and
    the average and longest load latency."""
    c = res.counters
    line = 4 * cfg.lanes
    peak = memory.peak_bytes_per_cycle(line)
    dram_bytes = c.get("dram_read_bytes", 0) + c.get("dram_write_bytes", 0)
    core_cycles = res.cycles * cfg.cores
    reads = c.get("l1_hits", 0) + c.get("l1_misses", 0) + c.get("l1_merges", 0)
    l2_reads = c.get("l2_hits", 0) + c.get("l2_misses", 0) + c.get("l2_merges", 0)
    loads = c.get("loads", 0)
    ext_bytes = c.get("ext_read_bytes", 0) + c.get("ext_write_bytes", 0)
    return {
        "kernel": kernel, "size": size, "memory": setting, "timing": memory.describe(line),
        "l1": cfg.l1_cache.describe(line) if cfg.l1_cache else "no L1",
        "l2": cfg.l2_cache.describe(line) if cfg.l2_cache else "no L2",
        "hit_rate": c.get("l1_hits", 0) / reads if reads else None,
        "l2_hit_rate": c.get("l2_hits", 0) / l2_reads if l2_reads else None,
        "ext_bytes": ext_bytes,
        "load_latency_avg": c.get("load_latency_sum", 0) / loads if loads else 0.0,
        "load_latency_max": c.get("load_latency_max", 0),
        "cycles": res.cycles, "warp_instructions": res.instructions,
        "ipc": res.instructions / core_cycles if core_cycles else 0.0,
        "dram_bytes": dram_bytes,
        "bandwidth_share": dram_bytes / res.cycles / peak if res.cycles else 0.0,
        "stall_memory_share": c.get("stall_memory", 0) / core_cycles if core_cycles else 0.0,
    }


def _vector_adds(dev, kernel: str, n: int, rng: np.random.Generator, setting: str,
                 launches: list[tuple[int, int]]) -> list:
    """Launch the vector-add example ``kernel`` on ``n`` standard-normal pairs from ``rng``
    once per ``(grid, block)`` of ``launches``, each into a fresh output checked bit for bit
    against NumPy; the launches' results."""
    k = dev.load_module(example_asm(kernel)).kernel(kernel)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db = dev.to_device(a), dev.to_device(b)
    out = []
    for grid, block in launches:
        dc = dev.empty(n, np.float32)
        out.append(dev.launch(k, grid=grid, block=block, args=(da, db, dc, n)))
        if not np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32)):
            raise AssertionError(f"{kernel} in blocks of {block} on the RTL ({setting}) "
                                 "differs from NumPy")
    return out


def bench_memory(config: str = "small", settings: tuple[str, ...] = ("ideal", "vortex",
                                                                     "realistic"),
                 sgemm_size: int = 64, vadd_n: int = 8192, vadd4_n: int = 8192,
                 vadd4_block: int | None = None, matmul_m: int = 32, gather_n: int = 4096,
                 caches: tuple[tuple[bool, bool], ...] = ((False, False), (True, False),
                                                          (True, True)),
                 kernels: tuple[str, ...] = MEMORY_KERNELS) -> list[dict]:
    """The memory benchmark (docs/memory-system.md): ``kernels`` of sgemm_tiled, vector add
    (examples/asm/vector_add.s, and examples/asm/vector_add4.s: a grid-stride loop with four
    elements per thread per trip, as many threads as the cores hold, in blocks of
    ``vadd4_block`` threads, one warp by default), the naive matmul and a random gather on
    ``config`` at each device-memory setting, with each ``(L1, L2)`` of ``caches`` (each
    core's L1, the shared L2: on or off), one row per (kernel, caches, setting) from
    :func:`_memory_row`. Every result is checked against NumPy."""
    from simtgpu.arch.config import get_config
    from simtgpu.driver_model.device import Device

    rows = []
    base = get_config(config)
    for (l1, l2), setting in ((c, s) for c in caches for s in settings):
        cfg = base.with_memory(setting).with_l1(l1).with_l2(l2)
        memory = cfg.memory_timing
        rng = np.random.default_rng(3)
        with Device(backend="rtl", config=config, memory=setting, l1=l1, l2=l2) as dev:
            tpb = cfg.warps_per_core * cfg.lanes

            if "sgemm_tiled" in kernels:
                n = sgemm_size
                r, _ = sgemm_tiled(dev, n, rng)
                rows.append(_memory_row("sgemm_tiled", f"{n}x{n}x{n}", setting, r, cfg, memory))

            if "vector_add" in kernels:
                n = vadd_n
                # whole-core blocks, then one-warp blocks: a core holds several at once
                r, r1 = _vector_adds(dev, "vector_add", n, rng, setting,
                                     [(-(-n // tpb), tpb), (-(-n // cfg.lanes), cfg.lanes)])
                rows.append(_memory_row("vector_add", f"n={n}", setting, r, cfg, memory))
                rows.append(_memory_row("vector_add, 1-warp blocks", f"n={n}", setting, r1, cfg,
                                        memory))

            if "vector_add4" in kernels:
                n = vadd4_n
                grid, block = vector_add4_launch(n, vadd4_block or cfg.lanes, cfg.cores * tpb)
                (r,) = _vector_adds(dev, "vector_add4", n, rng, setting, [(grid, block)])
                rows.append(_memory_row("vector_add4 (grid-stride, 4 per trip)",
                                        f"n={n}, {grid * block} threads", setting, r, cfg,
                                        memory))

            if "matmul" in kernels:
                m = matmul_m
                k = dev.load_module(example_asm("matmul")).kernel("matmul")
                A = rng.standard_normal((m, m)).astype(np.float32)
                B = rng.standard_normal((m, m)).astype(np.float32)
                dA, dB, dC = dev.to_device(A), dev.to_device(B), dev.empty(m * m, np.float32)
                bx = min(8, cfg.lanes)
                by = max(1, tpb // bx)
                r = dev.launch(k, grid=(-(-m // bx), -(-m // by)), block=(bx, by),
                               args=(dA, dB, dC, m, m, m))
                want = np.zeros((m, m), np.float32)
                for j in range(m):  # the kernel's order: acc = fma(A[r][j], B[j][c], acc)
                    want = (A[:, j:j + 1].astype(np.float64) * B[j:j + 1, :] + want).astype(
                        np.float32)
                got = dC.to_host().reshape(m, m)
                if np.max(np.abs(got - want)) > 1e-3 * max(1.0, float(np.max(np.abs(want)))):
                    raise AssertionError(f"matmul on the RTL ({setting}) differs from NumPy")
                rows.append(_memory_row("matmul (naive)", f"{m}x{m}x{m}", setting, r, cfg, memory))

            if "gather" in kernels:
                n = gather_n
                table = 16 * n
                k = dev.load_module(example_asm("gather")).kernel("gather")
                src = rng.integers(0, 1 << 31, table).astype(np.uint32)
                idx = rng.integers(0, table, n).astype(np.int32)
                ds, di, do = dev.to_device(src), dev.to_device(idx), dev.empty(n, np.uint32)
                r = dev.launch(k, grid=-(-n // tpb), block=tpb, args=(ds, di, do, n))
                if not np.array_equal(do.to_host(), src[idx]):
                    raise AssertionError(f"gather on the RTL ({setting}) differs from NumPy")
                rows.append(_memory_row("gather (random)", f"n={n} of {table} words", setting, r,
                                        cfg, memory))
    return [dict(row, config=config) for row in rows]


def bench_mma(config: str = "small", n: int = 64) -> list[dict]:
    """Multiply-accumulates per cycle per core of an ``n`` cubed GEMM on the RTL of
    ``config``: examples/asm/sgemm_tiled.s (FP32 ffma) and examples/asm/hgemm_mma.s (fp16
    inputs, FP32 accumulation on the matrix unit), each checked (sgemm against float64,
    hgemm bit for bit against ``numerics.mma`` in the kernel's order). One row per kernel;
    ``ratio``: its MACs per cycle over sgemm_tiled's."""
    from simtgpu.driver_model.device import Device

    rows = []
    with Device(backend="rtl", config=config) as dev:
        cores = dev.config.cores
        r, (bx, by) = sgemm_tiled(dev, n, np.random.default_rng(4))
        rows.append({"kernel": "sgemm_tiled.s (ffma)", "detail": f"tile {bx}x{by}",
                     "cycles": r.cycles, "warp_instructions": r.instructions})
        rng = np.random.default_rng(5)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float16)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float16)
        got, r = hgemm_mma(dev, a, b)
        if got.view(np.uint32).tolist() != hgemm_mma_reference(a, b, dev.config.lanes).tolist():
            raise AssertionError("hgemm_mma on the RTL differs from numerics.mma")
        rows.append({"kernel": "hgemm_mma.s (mma.f16)", "detail":
                     f"{dev.config.warps_per_core} warps per block, 2 tiles per warp",
                     "cycles": r.cycles, "warp_instructions": r.instructions})
    for row in rows:
        row.update(size=f"{n}x{n}x{n}", config=config,
                   macs_per_cycle_core=n ** 3 / row["cycles"] / cores)
        row["ratio"] = row["macs_per_cycle_core"] / rows[0]["macs_per_cycle_core"]
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


def require_valgrind() -> None:
    """Stop with a clear message where valgrind is missing (before any build is made)."""
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt install valgrind)")


def bench_under_callgrind(out: Path, config: str, kernel: str, *, n: int = 4096, m: int = 24,
                          l1: bool | None = None, l2: bool | None = None, lines: bool = False,
                          exe: Path | None = None) -> dict:
    """:func:`bench_rtl`'s figures of one run of ``kernel``, with the model under valgrind
    (callgrind, the model's clock loop only) writing its costs to ``out``: per function, or
    per source line with ``lines``. ``exe``: run that build of the model instead of the
    driver's (it must speak the same protocol). Needs ``valgrind`` on PATH; the kernels run
    about 50 times slower under it."""
    import os
    import shlex

    require_valgrind()
    prefix = (f"valgrind -q --tool=callgrind --toggle-collect=run_cycles* "
              f"--dump-line={'yes' if lines else 'no'} --callgrind-out-file={out}")
    if exe is not None:  # the driver appends its own model's path: run exe in its place
        prefix += f" --trace-children=yes sh -c {shlex.quote(f'exec {exe}')} --"
    os.environ["SIMTGPU_RTL_PREFIX"] = prefix
    try:
        (row,) = bench_rtl(config, n=n, m=m, runs=1, kernels=(kernel,), l1=l1, l2=l2)
    finally:
        del os.environ["SIMTGPU_RTL_PREFIX"]
    return row


def model_instructions(config: str = "small", n: int = 4096, m: int = 24, l1: bool | None = None,
                       l2: bool | None = None) -> list[dict]:
    """Machine instructions the Verilator model executes per simulated cycle, counted by
    valgrind (callgrind) over the model's clock loop only, for vector add and matmul.

    Unlike wall time this count does not move with the machine's load, so it compares two
    versions of the RTL exactly (it does not see cache misses, which also cost time). Needs
    ``valgrind`` on PATH; the kernels run about 50 times slower under it, hence the small
    default sizes. ``l1``, ``l2``: the caches, as for :func:`bench_rtl`."""
    import tempfile

    rows = []
    for kernel in ("vector_add", "matmul"):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            row = bench_under_callgrind(out, config, kernel, n=n, m=m, l1=l1, l2=l2)
            totals = [line for line in out.read_text().splitlines()
                      if line.startswith(("summary:", "totals:"))]
            instructions = int(totals[-1].split()[1])
        rows.append({"kernel": kernel, "caches": row["caches"], "size": row["size"],
                     "cycles": row["cycles"], "instructions": instructions,
                     "per_cycle": instructions / row["cycles"], "config": config})
    return rows


def _table(header: list[str], rows: list[list[str]]) -> None:
    """Print a Markdown table, the first two columns left-aligned, the rest right."""
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" if i < 2 else "---:" for i in range(len(header))) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.bench_rtl")
    p.add_argument("--config", default="small")
    p.add_argument("--instructions", action="store_true",
                   help="count the model's machine instructions per simulated cycle "
                        "(valgrind) instead of timing it")
    p.add_argument("--mma", action="store_true",
                   help="MACs per cycle per core of hgemm_mma.s against sgemm_tiled.s")
    p.add_argument("--caches", nargs="+", choices=list(CACHE_BUILDS), default=None,
                   metavar="BUILD",
                   help="time (or count, with --instructions) these cache builds one after "
                        "another (none, L1, L2, L1+L2; default: the configuration's own caches)")
    args = p.parse_args(argv)
    if args.mma:
        _table(["kernel", "size", "cycles", "warp-instr", "MACs / cycle / core", "vs FP32"],
               [[r["kernel"], r["size"], f"{r['cycles']:,}", f"{r['warp_instructions']:,}",
                 f"{r['macs_per_cycle_core']:.2f}", f"{r['ratio']:.1f}x"]
                for r in bench_mma(args.config)])
        return 0
    builds = [CACHE_BUILDS[c] for c in args.caches] if args.caches else [(None, None)]
    if args.instructions:
        _table(["kernel", "caches", "size", "cycles", "model instructions", "per cycle"],
               [[r["kernel"], r["caches"], r["size"], f"{r['cycles']:,}",
                 f"{r['instructions']:,}", f"{r['per_cycle']:,.0f}"]
                for l1, l2 in builds for r in model_instructions(args.config, l1=l1, l2=l2)])
        return 0
    rows = [r for l1, l2 in builds for r in bench_rtl(args.config, l1=l1, l2=l2)]
    _table(["kernel", "caches", "size", "cycles", "thread-instr", "wall s", "cycles/s",
            "cycles / CPU-s", "IPC"],
           [[r["kernel"], r["caches"], r["size"], f"{r['cycles']:,}",
             f"{r['thread_instructions']:,}", f"{r['wall_s']:.2f}", f"{r['cycles_per_s']:,.0f}",
             f"{r['cycles_per_cpu_s']:,.0f}", f"{r['ipc']:.2f}"] for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
