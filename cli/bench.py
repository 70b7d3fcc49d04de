"""``make bench``: ISS throughput, written into docs/performance.md.

Runs vector add, block reduction and matrix multiply through the driver on the ISS at
warp sizes 8 (configuration ``small``) and 32 (``full``), each a few times, checks every
result against NumPy, and reports the median thread-instructions per second together with
the command that reproduces each figure and the machine it ran on.

Each section's figures are also drawn as a PNG next to the page it writes
(``perf-<section>.png``: docs/ for ``make bench-docs``, build/ for ``make bench``), linked from
the section; drawing needs matplotlib (the ``plot`` extra) and is skipped with a note without.

docs/performance.md is assembled from sections, each between marker comments and owned by
one tool. :func:`write_section` replaces one section and leaves the others alone, so other
tools (RTL throughput, compiler quality) add theirs the same way::

    from simtgpu.cli.bench import write_section
    write_section("rtl-throughput", "## RTL throughput\\n\\n...")
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from simtgpu.assembler.examples import example_asm
from simtgpu.errors import SimtgpuError
from simtgpu.paths import cache_dir

from .files import output_file

ROOT = Path(__file__).resolve().parents[1]
PERF_DOC = ROOT / "docs" / "performance.md"
BENCH_OUT = cache_dir() / "performance.md"
"""Where ``make bench`` writes unless told otherwise: a copy of docs/performance.md with the
measured sections replaced (``make bench-docs`` updates the tracked page itself)."""
SECTION = "iss-throughput"
TARGET = 5e6  # thread-instructions per second at warp size 32
MEMORY_BYTES = 256 << 20  # big enough for the largest workload's buffers

DOC_HEADER = """# Performance

Measured figures of simtgpu. Each section below is written by the tool named in its marker
comment; rerun that tool to refresh it rather than editing the text by hand.
"""


# -- docs/performance.md sections ------------------------------------------------------------
def _section_re(name: str, capture: bool = False) -> re.Pattern[str]:
    """Matches the whole section ``name``: its BEGIN marker (with any owner note), body and
    END marker."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise ValueError(f"section name must be lower-case words joined by '-', not {name!r}")
    body = r"\n(.*?)" if capture else r".*?"
    return re.compile(rf"<!-- BEGIN SECTION {name}(?:: [^>]*)? -->{body}"
                      rf"<!-- END SECTION {name} -->\n?", re.S)


def write_section(name: str, body: str, path: Path = PERF_DOC, owner: str = "") -> None:
    """Replace section ``name`` of the document at ``path`` with ``body`` (Markdown), or
    append it when absent; text outside that section is kept byte for byte. ``owner``
    (the command that writes it) is noted in the BEGIN marker."""
    pattern = _section_re(name)
    note = f": written by {owner}" if owner else ""
    block = (f"<!-- BEGIN SECTION {name}{note} -->\n{body.strip()}\n"
             f"<!-- END SECTION {name} -->\n")
    text = path.read_text() if path.exists() else DOC_HEADER
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def read_section(name: str, path: Path = PERF_DOC) -> str | None:
    """The body of section ``name``, or None."""
    if not path.exists():
        return None
    m = _section_re(name, capture=True).search(path.read_text())
    return m.group(1).rstrip("\n") if m else None


# -- workloads -------------------------------------------------------------------------------
@dataclass
class Measurement:
    workload: str
    warp: int
    config: str
    size: str
    thread_instructions: int
    warp_instructions: int
    seconds: list[float]
    cpu_seconds: list[float]
    command: str

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rate(self) -> float:
        return self.thread_instructions / self.median_s


def _device(config: str):
    from simtgpu.driver_model import CONFIGS, Device
    from simtgpu.driver_model.backend_iss import IssBackend

    cfg = dataclasses.replace(CONFIGS[config], memory_bytes=MEMORY_BYTES)
    return Device(IssBackend(cfg))


def _fits(dev, nbytes: int, scale: float) -> None:
    """Refuse a --scale whose buffers cannot fit the device before the host makes them."""
    if nbytes > dev.config.memory_bytes:
        raise SimtgpuError(f"--scale {scale:g}: the buffers ({nbytes:,} bytes) exceed the "
                           f"bench device's {dev.config.memory_bytes:,} bytes")


def _vector_add(dev, scale: float, rng):
    # The kernel indexes by ctaid.x only, and a grid has at most 65535 blocks per dimension.
    n = max(1024, int((2_000_000 if dev.config.lanes == 8 else 6_000_000) * scale))
    _fits(dev, 3 * 4 * n, scale)
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
    block = dev.config.max_threads_per_block

    def run():
        return dev.launch(k, -(-n // block), block, (da, db, dc, n))

    def check() -> bool:
        return np.array_equal(dc.to_host(), a + b)

    return f"n={n}", run, check


def _reduction(dev, scale: float, rng):
    n = max(1024, int((1 << 20) * scale))
    _fits(dev, 2 * 4 * n, scale)
    k = dev.load_module(example_asm("reduction")).kernel("block_sum")
    block = dev.config.max_threads_per_block
    grid = -(-n // block)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    dx, dout = dev.to_device(x), dev.empty(grid, np.float32)

    def run():
        return dev.launch(k, grid, block, (dx, dout, n))

    def check() -> bool:
        want = np.pad(x.astype(np.float64), (0, grid * block - n)).reshape(grid, -1).sum(1)
        return np.allclose(dout.to_host(), want, rtol=1e-5, atol=1e-5)

    return f"n={n}, block={block}", run, check


def _matmul(dev, scale: float, rng):
    m = max(16, int(round(192 * scale ** (1 / 3) / 16)) * 16)
    _fits(dev, 3 * 4 * m * m, scale)
    k_ = dev.load_module(example_asm("matmul")).kernel("matmul")
    a = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    b = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty((m, m), np.float32)
    bx, by = dev.config.lanes, dev.config.warps_per_core
    grid = (-(-m // bx), -(-m // by))

    def run():
        return dev.launch(k_, grid, (bx, by), (da, db, dc, m, m, m))

    def check() -> bool:
        want = a.astype(np.float64) @ b.astype(np.float64)
        return np.allclose(dc.to_host(), want, rtol=0, atol=m * 2.0 ** -22)

    return f"{m}x{m}x{m}, block=({bx},{by})", run, check


WORKLOADS: dict[str, Callable] = {
    "vector_add": _vector_add, "reduction": _reduction, "matmul": _matmul,
}
WARP_CONFIGS = {8: "small", 32: "full"}


def measure(workload: str, warp: int, runs: int, scale: float, seed: int = 0) -> Measurement:
    dev = _device(WARP_CONFIGS[warp])
    label, run, check = WORKLOADS[workload](dev, scale, np.random.default_rng(seed))
    run()  # warm-up: decodes the program once, touches the memory
    seconds, cpu = [], []
    res = None
    for _ in range(runs):
        c0 = time.process_time()
        res = run()
        cpu.append(time.process_time() - c0)
        seconds.append(res.wall_s)
    if not check():
        raise SimtgpuError(f"bench: {workload} at warp size {warp} gave a wrong result")
    assert res is not None
    cmd = f"python -m simtgpu.cli.bench --only {workload} --warp {warp} --runs {runs}"
    if scale != 1.0:
        cmd += f" --scale {scale:g}"
    return Measurement(workload, warp, WARP_CONFIGS[warp], label, res.thread_instructions,
                       res.instructions, seconds, cpu, cmd)


# -- report ----------------------------------------------------------------------------------
def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--"],
                                 capture_output=True, timeout=10).returncode == 1
        if commit and changed:  # figures of a tree that is not the commit say so
            commit += " with uncommitted changes"
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "cpu": cpu,
        "nproc": str(os.cpu_count()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "os": f"{platform.system()} {platform.release()}",
        "commit": commit or "unknown",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render(results: list[Measurement], runs: int, info: dict[str, str]) -> str:
    lines = [
        "## ISS throughput",
        "",
        "Thread-instructions per second of the golden simulator, launched through the driver "
        "(command queue, ISS backend), for the example kernels. A thread-instruction is one "
        "instruction executed by one lane; the time is the launch's wall time from the "
        "doorbell to the fence, after one warm-up launch. Warp size 8 is configuration "
        "`small`, warp size 32 is `full` (both with device memory enlarged to "
        f"{MEMORY_BYTES >> 20} MiB to hold the inputs). Each figure is the median of {runs} "
        "runs; every result was checked against NumPy.",
        "",
        f"Machine: {info['cpu']}, `nproc` = {info['nproc']}, Python {info['python']}, "
        f"NumPy {info['numpy']}, {info['os']}; commit {info['commit']}, {info['date']}. "
        "The machine was shared with other jobs: where the CPU time of a launch is well "
        "below its wall time, the process was waiting for a core, and the rate on an idle "
        "machine is correspondingly higher.",
        "",
        "| kernel | warp size | problem | thread-instr / launch | median time | "
        "M thread-instr/s | CPU time | M thread-instr per CPU-s | runs (s) | command |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in results:
        runs_s = ", ".join(f"{s:.2f}" for s in r.seconds)
        cpu = max(statistics.median(r.cpu_seconds), 1e-9)
        lines.append(
            f"| {r.workload} | {r.warp} | {r.size} | {r.thread_instructions:,} | "
            f"{r.median_s:.2f} s | {r.rate / 1e6:.1f} | {cpu:.2f} s | "
            f"{r.thread_instructions / cpu / 1e6:.1f} | {runs_s} | `{r.command}` |")
    at32 = [r for r in results if r.warp == 32]
    if at32:
        worst = min(at32, key=lambda r: r.rate)
        verdict = "meets" if worst.rate >= TARGET else "MISSES"
        lines += ["", f"Target: at least {TARGET / 1e6:.0f} M thread-instructions/s at warp "
                  f"size 32. The slowest kernel at warp size 32 ({worst.workload}, "
                  f"{worst.rate / 1e6:.1f} M/s) {verdict} it."]
    lines += ["", "Reproduce everything with `make bench-docs` (`python -m simtgpu.cli.bench "
              "--output docs/performance.md`); `make bench` writes the same page to "
              "build/performance.md."]
    return "\n".join(lines)


def render_rtl(rows: list[dict], info: dict[str, str]) -> str:
    """The RTL simulation-throughput section."""
    cfg = _small()
    line = 4 * cfg.lanes
    caches = "; ".join(c.describe(line) for c in (cfg.l1_cache, cfg.l2_cache) if c) or "none"
    lines = [
        "## RTL simulation throughput", "",
        f"The Verilator model of the whole GPU (configuration `small`: {cfg.cores} cores, "
        f"{cfg.warps_per_core} warps x {cfg.lanes} lanes; caches as configured: {caches}) "
        "with its memory inside the design, launched through the driver's rtl backend "
        "(command queue, MMIO doorbell, fence); Python only waits for completion. Wall time is "
        "the launch from doorbell to fence; CPU time is the Verilator process's own. Results "
        "are checked against NumPy. Each kernel runs 3 times; the figures are those of the "
        "median run. The model is built with Verilator `-O3 --x-assign fast --x-initial fast "
        "--noassert` and g++ `-O2` with profile-guided optimisation and `-march=x86-64-v3` "
        "where the CPU has that level (plain builds use `-O3` "
        "for the per-cycle code; the build trains the model "
        "on the issue-rate kernels below, not on these two; `SIMTGPU_RTL_PGO=0` builds "
        "without), single-threaded (`--threads 2` was no faster on this machine).", "",
        f"Machine: {info['cpu']}, `nproc` = {info['nproc']}; commit {info['commit']}, "
        f"{info['date']}.", "",
        "| kernel | size | cycles | warp-instr/cycle (GPU) | wall s | cycles/s | "
        "cycles per CPU-s | thread-instr/s | runs (wall s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        runs = ", ".join(f"{w:.2f}" for w in r["runs_s"])
        lines.append(f"| {r['kernel']} | {r['size']} | {r['cycles']:,} | {r['ipc']:.2f} | "
                     f"{r['wall_s']:.2f} | {r['cycles_per_s']:,.0f} | "
                     f"{r['cycles_per_cpu_s']:,.0f} | {r['thread_instructions_per_s']:,.0f} | "
                     f"{runs} |")
    slow_cycles = min(r["cycles_per_s"] for r in rows)
    slow_ti = min(r["thread_instructions_per_s"] for r in rows)
    lines += ["", "Targets (issue: verification): at least 200,000 cycles/s for `small` and at "
              "least 1 million thread-instructions/s. This run: the slower kernel makes "
              f"{slow_cycles:,.0f} cycles/s ({'meets' if slow_cycles >= 2e5 else 'MISSES'} the "
              f"target) and {slow_ti:,.0f} thread-instructions/s "
              f"({'meets' if slow_ti >= 1e6 else 'MISSES'} the target). Command: "
              "`python -m simtgpu.cli.bench --part rtl` (library: "
              "`simtgpu.verification.bench_rtl.bench_rtl`)."]
    return "\n".join(lines)


def _small():
    from simtgpu.arch.config import CONFIGS

    return CONFIGS["small"]


def render_ipc(rows: list[dict], info: dict[str, str]) -> str:
    """The RTL issue-rate section (cycle counts: deterministic, not timings)."""
    lines = [
        "## RTL issue rate", "",
        "Warp-instructions issued per cycle per core, from the GPU's own performance counters "
        f"(configuration `small`: {_small().cores} cores, {_small().warps_per_core} warps x "
        f"{_small().lanes} lanes, device-memory latency {_small().mem_latency} cycles: the "
        "`ideal` memory setting, **idealised**; the section \"Memory settings side by side\" "
        "below has the same kernels at DRAM-like settings). Cycle "
        "counts do not depend on the machine running the simulation.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| workload | warp-instr / cycle / core | detail |", "| --- | ---: | --- |",
    ]
    lines += [f"| {r['what']} | {r['ipc']:.3f} | {r['detail']} |" for r in rows]
    lines += ["", "Targets (issue: the RTL): at least 0.9 on an ALU-only loop with 4 or more "
              "warps; at least 0.8 on a shared-memory-tiled sgemm; a coalesced warp access of "
              "consecutive words in the minimum number of bus transactions. Command: "
              "`python -m simtgpu.cli.bench --part ipc` (library: "
              "`simtgpu.verification.bench_rtl.bench_ipc`)."]
    return "\n".join(lines)


def render_mma(rows: list[dict], info: dict[str, str]) -> str:
    """The matrix-unit GEMM section (cycle counts: deterministic, not timings)."""
    from simtgpu.arch.config import CONFIGS
    from simtgpu.isa.mma import mma_shape
    from simtgpu.rtl.configs import get_rtl_config
    from simtgpu.rtl.matrix_unit import mma_cycles

    cfg = CONFIGS[rows[0]["config"]]
    dots = get_rtl_config(cfg.name).mma_dots
    s = mma_shape(cfg.lanes)
    lines = [
        "## RTL matrix unit: fp16 GEMM against FP32", "",
        f"Multiply-accumulates per cycle per core of one {rows[0]['size']} GEMM on the RTL of "
        f"`{cfg.name}` ({cfg.cores} cores x {cfg.warps_per_core} warps x {cfg.lanes} lanes, "
        f"device-memory latency {cfg.mem_latency} cycles: the `ideal` memory setting, "
        "**idealised**): examples/asm/sgemm_tiled.s with FP32 `ffma` against "
        "examples/asm/hgemm_mma.s with `mma.f16` (fp16 inputs, FP32 accumulation), both "
        "checked (hgemm bit for bit against `numerics.mma` in the kernel's order). The matrix "
        f"unit has `mma_dots` = {dots} trees of k = {s.k} on `{cfg.name}`: one "
        f"{s.name} `mma` ({s.macs} MACs) every {mma_cycles(cfg.lanes, dots)} cycles at best, "
        f"{s.macs / mma_cycles(cfg.lanes, dots):.1f} MACs per cycle per core.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | size | detail | cycles | warp-instr | MACs / cycle / core | vs FP32 |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {r['kernel']} | {r['size']} | {r['detail']} | {r['cycles']:,} | "
              f"{r['warp_instructions']:,} | {r['macs_per_cycle_core']:.2f} | "
              f"{r['ratio']:.1f}x |" for r in rows]
    lines += ["", "Target (issue 12): at least 4x the FP32 GEMM. Command: "
              "`python -m simtgpu.cli.bench --part mma` (library: "
              "`simtgpu.verification.bench_rtl.bench_mma`)."]
    return "\n".join(lines)


def render_memory(rows: list[dict], info: dict[str, str]) -> str:
    """The memory section: three memory settings, without and with the L1 (cycle counts:
    deterministic, not timings)."""
    from simtgpu.verification.bench_rtl import VORTEX_IPC

    cfg = _small()
    settings = list(dict.fromkeys(r["memory"] for r in rows))
    caches = list(dict.fromkeys(_caches(r) for r in rows))
    timing = {r["memory"]: r["timing"] for r in rows}
    lines = [
        "## Memory settings side by side", "",
        f"The RTL of `small` ({cfg.cores} cores, {cfg.warps_per_core} warps x {cfg.lanes} lanes, "
        f"{4 * cfg.lanes}-byte lines, several resident blocks per core) behind the DRAM model "
        "of docs/memory-system.md at each named memory setting: "
        + "; ".join(f"`{timing[s]}`" for s in settings) + "; each with the caches "
        + ", ".join(f"`{c}`" for c in caches) + " (" + "; ".join(
            f"`{d}`" for d in dict.fromkeys(x for r in rows for x in (r["l1"], r["l2"])
                                            if not x.startswith("no "))) + "). `ideal` is "
        "the fixed-latency memory every other figure on this page was measured with: "
        "**idealised**, no DRAM answers in 8 cycles at a line per cycle. Warp-instructions per "
        "cycle per core, memory-stall share of core-cycles, L1 and L2 hits over reads (a read "
        "merged into an outstanding miss is not a hit), and load latency (cycles from a load "
        "transaction's acceptance on the core's port to its data; average and longest) come "
        "from the GPU's counters; DRAM bandwidth is the bytes of the line requests the cores "
        "sent toward memory per cycle, as a share of the setting's peak. Every result is "
        "checked against NumPy; cycle counts do not depend on the machine running the "
        "simulation.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | size | caches | memory | cycles | warp-instr / cycle / core | DRAM B/cycle "
        "(share of peak) | L1 hit rate | L2 hit rate | load latency avg / max "
        "| memory-stall share | Vortex, 1 core |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    ordered = sorted(rows, key=lambda r: (kernels.index(r["kernel"]), caches.index(_caches(r)),
                                          settings.index(r["memory"])))
    shown = set()
    for r in ordered:
        vortex = VORTEX_IPC.get(r["kernel"])
        first = r["kernel"] not in shown
        shown.add(r["kernel"])
        on = r["l1"] != "no L1"
        hit = f"{r['hit_rate']:.0%}" if r["hit_rate"] is not None else "-"
        hit2 = f"{r['l2_hit_rate']:.0%}" if r.get("l2_hit_rate") is not None else "-"
        lines.append(
            f"| {r['kernel'] if first else ''} | {r['size'] if first else ''} | "
            f"{_caches(r)} | {r['memory']} | "
            f"{r['cycles']:,} | {r['ipc']:.3f} | "
            f"{r['dram_bytes'] / r['cycles']:.1f} ({r['bandwidth_share']:.0%}) | {hit} | "
            f"{hit2} | "
            f"{r['load_latency_avg']:.1f} / {r['load_latency_max']} | "
            f"{r['stall_memory_share']:.0%} | "
            f"{vortex if vortex is not None and r['memory'] == 'vortex' and on else ''} |")
    lines += ["", "Vortex's figures are its published warp-instructions per cycle on one core "
              "(vecadd, sgemm), measured behind its L1 caches with 24-cycle memory: the "
              "`vortex` rows with the L1 on are the comparable ones. DRAM B/cycle counts the "
              "line requests the cores sent toward memory; below an L2, the bytes DRAM itself "
              "moved are in the section \"The shared L2\". "
              "`vector_add, 1-warp blocks` is the same vector add in blocks of one warp: a core "
              "holds as many of them at once as it has warp slots (block slots, "
              "docs/microarchitecture.md), where a one-block core would run one warp at a time. "
              "`vector_add4 (grid-stride, 4 per trip)` is examples/asm/vector_add4.s, a "
              "separate kernel: as many threads as the cores hold, each looping over the "
              "array with eight loads in flight per trip; it is the bandwidth test (issue 11: "
              "85 % of the DRAM bandwidth at `realistic`), the plain vector add is "
              "issue-bound below it (docs/memory-system.md, \"What bounds the bytes in "
              "flight\"). Command: `python -m simtgpu.cli.bench --part memory` (library: "
              "`simtgpu.verification.bench_rtl.bench_memory`)."]
    return "\n".join(lines)


def _caches(row: dict) -> str:
    """The caches of a memory-bench row: ``none``, ``L1``, ``L2`` or ``L1 + L2``."""
    on = [n for n in ("L1", "L2") if row.get(n.lower(), f"no {n}") != f"no {n}"]
    return " + ".join(on) or "none"


def render_memory_l2(rows: list[dict], info: dict[str, str]) -> str:
    """The L2 section: sgemm_tiled and vector add with the L1 alone and with the L1 and the
    shared L2, at each memory setting (cycle counts: deterministic, not timings)."""
    cfg = _small()
    rows = [r for r in rows if r["kernel"] in ("sgemm_tiled", "vector_add")
            and r["l1"] != "no L1"]
    l2 = next(r["l2"] for r in rows if r["l2"] != "no L2")
    settings = list(dict.fromkeys(r["memory"] for r in rows))
    by = {(r["kernel"], r["memory"], r["l2"] != "no L2"): r for r in rows}
    lines = [
        "## The shared L2", "",
        f"The RTL of `small` ({cfg.cores} cores, {4 * cfg.lanes}-byte lines) with each core's "
        f"L1 (`{rows[0]['l1']}`), without and with the shared L2 (`{l2}`; write-through, "
        "atomics performed in it; docs/memory-system.md), at each memory setting (`ideal` is "
        "**idealised**). Warp-instructions per cycle per core, the L2's hits over reads, and "
        "the bytes DRAM moved (the external memory port's counters: reads, writes and, "
        "without an L2, atomics) come from the GPU's counters; every result is checked "
        "against NumPy.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | memory | issue rate, L1 | issue rate, L1 + L2 | L2 hit rate "
        "| DRAM bytes, L1 | DRAM bytes, L1 + L2 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kernel in ("sgemm_tiled", "vector_add"):
        for s in settings:
            a, b = by.get((kernel, s, False)), by.get((kernel, s, True))
            if a is None or b is None:
                continue
            hit = f"{b['l2_hit_rate']:.0%}" if b["l2_hit_rate"] is not None else "-"
            lines.append(f"| {kernel} {a['size']} | {s} | {a['ipc']:.3f} | {b['ipc']:.3f} | "
                         f"{hit} | {a['ext_bytes']:,} | {b['ext_bytes']:,} |")
    lines += ["", "Command: `python -m simtgpu.cli.bench --part l2` (library: "
              "`simtgpu.verification.bench_rtl.bench_memory` with "
              "`caches=((True, False), (True, True))`); `--part memory` writes this section "
              "too, from its own rows."]
    return "\n".join(lines)


def render_compiler(figs: list, times: dict[str, float], info: dict[str, str]) -> str:
    """The compiler code-quality section."""
    lines = [
        "## Compiler code quality", "",
        "Dynamic warp-instructions on the ISS (configuration `small`) of each kernel that "
        "exists both by hand in examples/asm/ and in the DSL, each result checked against "
        "NumPy; compile time is the best of 3 in process CPU time. Both sides run 32 threads "
        "per block; the compiled 1-D kernels give each thread four elements of a 128-element "
        "tile (as Triton does), the hand-written ones one element, and the compiled matmul "
        "uses 8x8x8 `tl.dot` tiles.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | problem | hand-written | compiled | compiled / hand | compile ms |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for f in figs:
        if not f.correct:
            raise SimtgpuError(f"compiler bench: {f.kernel} disagrees with NumPy")
        lines.append(f"| {f.kernel} | {f.problem} | {f.hand_instructions:,} | "
                     f"{f.compiled_instructions:,} | {f.ratio:.2f} | {f.compile_ms:.1f} |")
    lines += ["", "Compile time per kernel (ISA target, ms): "
              + ", ".join(f"{k} {v}" for k, v in times.items()) + ".", "",
              "Targets (issue: compiler): compiled within 1.2x the hand-written instruction "
              "count; under 100 ms per kernel. Command: `python -m simtgpu.cli.bench --part "
              "compiler` (library: `simtgpu.compiler_backend.bench`)."]
    return "\n".join(lines)


def _emit(name: str, body: str, output: Path | None, part: str,
          chart: Callable[[Path], None] | None = None) -> None:
    """Write section ``name`` into ``output``, or print it when ``output`` is None; with
    ``chart``, also draw ``perf-<name>.png`` beside ``output`` and link it from the section."""
    if output is None:
        print(body)
        return
    if chart is not None:
        png = output.parent / f"perf-{name}.png"
        if _draw(chart, png):
            body += f"\n\n![{name}]({png.name})"
            print(f"wrote {png}", flush=True)
    owner = "make bench (simtgpu.cli.bench" + (f" --part {part})" if part else ")")
    try:
        write_section(name, body, output, owner=owner)
    except OSError as e:
        raise SimtgpuError(f"{output}: cannot write section '{name}': {e.strerror or e}") \
            from None
    print(f"wrote section '{name}' of {output}", flush=True)


# -- charts ----------------------------------------------------------------------------------
def _draw(chart: Callable[[Path], None], png: Path) -> bool:
    """Run ``chart(png)``; False (with a note) where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        print(f"(no {png.name}: drawing needs matplotlib, pip install 'simtgpu[plot]')")
        return False
    matplotlib.use("Agg")
    png.parent.mkdir(parents=True, exist_ok=True)
    chart(png)
    return True


def _bars(png: Path, title: str, groups: list[str], series: dict[str, list[float]],
          ylabel: str, target: float | None = None, target_label: str = "",
          fmt: str = "{:.1f}") -> None:
    """Grouped bars: one group per entry of ``groups``, one bar per series, values written
    on the bars, an optional dashed target line."""
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(groups))
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups) + 2), 3.8))
    for i, (label, values) in enumerate(series.items()):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=label)
        ax.bar_label(bars, [fmt.format(v) for v in values], fontsize=8, padding=2)
    if target is not None:
        ax.axhline(target, ls="--", color="black", lw=0.8, label=target_label)
    ax.set_xticks(x, groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.15)
    if len(series) > 1 or target is not None:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _chart_iss(results: list[Measurement]) -> Callable[[Path], None]:
    kernels = list(dict.fromkeys(r.workload for r in results))
    warps = sorted({r.warp for r in results})
    rate = {(r.workload, r.warp): r.rate / 1e6 for r in results}
    series = {f"warp size {w}": [rate.get((k, w), 0.0) for k in kernels] for w in warps}
    return lambda png: _bars(png, "ISS throughput (median of the runs; shared machine)",
                             kernels, series, "M thread-instructions / s",
                             TARGET / 1e6, f"target at warp size 32: {TARGET / 1e6:.0f} M/s")


def _chart_rtl(rows: list[dict]) -> Callable[[Path], None]:
    names = [r["kernel"] for r in rows]
    series = {"k cycles / s": [r["cycles_per_s"] / 1e3 for r in rows],
              "k thread-instructions / s": [r["thread_instructions_per_s"] / 1e3
                                            for r in rows]}
    return lambda png: _bars(png, "RTL simulation throughput (Verilator, configuration small)",
                             names, series, "thousands per second", 200.0,
                             "target: 200 k cycles/s", fmt="{:,.0f}")


def _chart_ipc(rows: list[dict]) -> Callable[[Path], None]:
    names = [r["what"] for r in rows]
    series = {"warp-instr / cycle / core": [r["ipc"] for r in rows]}
    return lambda png: _bars(png, "RTL issue rate (configuration small, ideal memory setting:"
                             " idealised)",
                             [textwrap.fill(n, 30) for n in names], series,
                             "warp-instructions / cycle / core", fmt="{:.3f}")


def _chart_compiler(figs: list) -> Callable[[Path], None]:
    names = [f.kernel for f in figs]
    series = {"hand-written": [f.hand_instructions for f in figs],
              "compiled": [f.compiled_instructions for f in figs]}
    return lambda png: _bars(png, "Compiler code quality: dynamic warp-instructions on the ISS",
                             names, series, "warp-instructions", fmt="{:,.0f}")


def _other_parts(parts: list[str], output: Path | None, explicit: bool = True) -> None:
    """Measure and write the sections that other tools provide; the ptx part, which needs
    Triton, and the cuda part, which also needs a GPU, are skipped with a note when they
    were not asked for by name (``explicit``)."""
    info = machine()
    if "rtl" in parts:
        from simtgpu.verification.bench_rtl import bench_rtl

        rows = bench_rtl("small")
        _emit("rtl-throughput", render_rtl(rows, info), output, "rtl", _chart_rtl(rows))
    if "ipc" in parts:
        from simtgpu.verification.bench_rtl import bench_ipc

        rows = bench_ipc("small")
        _emit("rtl-ipc", render_ipc(rows, info), output, "ipc", _chart_ipc(rows))
    if "mma" in parts:
        from simtgpu.verification.bench_rtl import bench_mma

        _emit("rtl-mma", render_mma(bench_mma("small"), info), output, "mma")
    if "memory" in parts:
        from simtgpu.verification.bench_rtl import bench_memory

        rows = bench_memory("small")
        _emit("rtl-memory", render_memory(rows, info), output, "memory")
        _emit("rtl-memory-l2", render_memory_l2(rows, info), output, "memory")
    if "l2" in parts and "memory" not in parts:  # the memory part writes it too
        from simtgpu.verification.bench_rtl import bench_memory

        rows = bench_memory("small", caches=((True, False), (True, True)),
                            kernels=("sgemm_tiled", "vector_add"))
        _emit("rtl-memory-l2", render_memory_l2(rows, info), output, "l2")
    if "pipeline" in parts:
        from simtgpu.verification.bench_rtl import bench_pipeline, render_pipeline

        _emit("rtl-pipeline", render_pipeline(bench_pipeline("small"), info), output,
              "pipeline")
    if "atomics" in parts:
        from simtgpu.verification.bench_rtl import bench_atomics, render_atomics

        _emit("rtl-atomics", render_atomics(bench_atomics("small"), info), output, "atomics")
    if "verilog" in parts:
        from simtgpu.rtlsim import verilog_bench

        _emit("verilog-generation", verilog_bench.render(verilog_bench.measure(), info), output,
              "verilog")
    if "compiler" in parts:
        from simtgpu.compiler_backend import bench as cbench

        figs = cbench.figures()
        _emit("compiler-quality", render_compiler(figs, cbench.compile_times(), info), output,
              "compiler", _chart_compiler(figs))
    if "compile" in parts:
        from simtgpu.compiler_backend import bench_compile

        load = os.getloadavg()[0]
        rows = bench_compile.compile_times()
        load = max(load, os.getloadavg()[0])
        _emit("compile-times", bench_compile.render(rows, info, load), output, "compile")
    if "ptx" in parts:
        from simtgpu.compiler_backend import bench_ptx

        rows = _unless_unavailable("ptx", bench_ptx.rows, explicit)
        if rows is not None:
            _emit("compiler-ptx", bench_ptx.render(rows, info, bench_ptx.triton_version()),
                  output, "ptx")
    if "cuda" in parts:
        from simtgpu.compiler_backend import bench_cuda, bench_ptx

        got = _unless_unavailable("cuda", bench_cuda.rows, explicit)
        if got is not None:
            rows, gpu = got
            _emit("compiler-cuda", bench_cuda.render(rows, {**info, **gpu},
                                                     bench_ptx.triton_version()), output, "cuda")


def _unless_unavailable(part: str, measure: Callable, explicit: bool):
    """``measure()``, or None with a note where its tools or GPU are missing and the part was
    not asked for by name (asked for, the error stops the bench)."""
    from simtgpu.compiler_backend.bench_ptx import BenchUnavailable

    try:
        return measure()
    except BenchUnavailable as e:
        if explicit:
            raise
        print(f"skipped part {part}: {e}", file=sys.stderr)
        return None


PARTS = ("iss", "rtl", "ipc", "mma", "memory", "l2", "pipeline", "atomics", "verilog",
         "compiler", "compile", "ptx", "cuda")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make bench", description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=sorted(WORKLOADS), action="append",
                   help="run only this kernel (repeatable)")
    p.add_argument("--warp", type=int, choices=sorted(WARP_CONFIGS), action="append",
                   help="run only this warp size (repeatable)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per figure (default 3)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="problem-size factor (default 1: about 1-3 s per launch)")
    p.add_argument("--no-write", action="store_true",
                   help="print the sections instead of writing them")
    p.add_argument("--output", type=Path, default=None,
                   help="the page to update (default build/performance.md, a copy of "
                   "docs/performance.md; `make bench-docs` updates that one)")
    p.add_argument("--part", choices=PARTS, action="append",
                   help="measure only this part (repeatable; default all): iss throughput, "
                   "rtl throughput, rtl issue rate (ipc), fp16 GEMM on mma against FP32 (mma), "
                   "rtl at the three memory settings "
                   "(memory), the shared L2 (l2), the compiled matmul by num_stages "
                   "(pipeline), cycles of shared and global atomics (atomics), Verilog "
                   "generation shared and flat (verilog), compiler code "
                   "quality, compile time of the tutorial kernels "
                   "(compile), compiler's PTX against Triton's (ptx; "
                   "needs the bench extra), both timed on an NVIDIA GPU (cuda; needs one, "
                   "cuda-python and Triton)")
    args = p.parse_args(argv)
    parts = args.part or list(PARTS)
    if args.runs < 1 or not 0 < args.scale < float("inf"):  # (also refuses nan)
        p.error("--runs must be at least 1 and --scale positive and finite")
    output = None if args.no_write else (args.output or BENCH_OUT)
    if output is not None:  # checked now, not after minutes of measuring
        try:
            output_file(output, "--output", probe=True)
        except SimtgpuError as e:
            print(e.render(), file=sys.stderr)
            return 1
    if output == BENCH_OUT and not output.exists():
        output.parent.mkdir(parents=True, exist_ok=True)
        if PERF_DOC.exists():  # (an installed package has no docs/: start a fresh page)
            shutil.copyfile(PERF_DOC, output)
    results = []
    try:
        if "iss" not in parts:
            _other_parts(parts, output, explicit=args.part is not None)
            return 0
        for workload in args.only or list(WORKLOADS):
            for warp in args.warp or sorted(WARP_CONFIGS):
                r = measure(workload, warp, args.runs, args.scale)
                print(f"{workload:<11} warp {warp:>2}  {r.size:<24} "
                      f"{r.rate / 1e6:7.1f} M thread-instr/s  (median {r.median_s:.2f} s "
                      f"of {args.runs})", flush=True)
                results.append(r)
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    try:
        _emit(SECTION, render(results, args.runs, machine()), output, "", _chart_iss(results))
        _other_parts(parts, output, explicit=args.part is not None)
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
