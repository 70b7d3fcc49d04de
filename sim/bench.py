"""ISS throughput on a few representative kernels of examples/asm, each checked against NumPy.

    from simtgpu.sim.bench import bench_iss, KERNELS
    bench_iss("matmul", warp_size=32)   # -> dict with thread_instructions_per_s, ...

``python -m simtgpu.sim.bench`` prints a table for every kernel at warp sizes 4, 8 and 32.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from simtgpu.errors import SimtgpuError

from . import numerics as nx
from .iss import Iss
from .memory import GlobalMemory

PARAMS = 0x1000
BASE = 0x2000


@dataclass(frozen=True)
class _Case:
    example: str  # examples/asm/<example>.s
    kernel: str
    setup: Callable[[GlobalMemory, int], tuple]  # -> (grid, block, param bytes, check)


def _put(mem: GlobalMemory, arrays: list[np.ndarray], scalars: list[int] = ()) -> list[int]:
    addrs, addr = [], BASE
    for arr in arrays:
        mem.write_words(addr, arr.view(np.uint32))
        addrs.append(addr)
        addr += arr.nbytes + 256
    mem.write_words(PARAMS, np.array(addrs + [s & 0xFFFFFFFF for s in scalars], np.uint32))
    return addrs


def _vector_add(mem: GlobalMemory, scale: int):
    n = 262144 * scale
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    _, _, c = _put(mem, [a, b, np.zeros(n, np.float32)], [n])
    return ((n + 255) // 256, 1, 1), (256, 1, 1), 16, \
        lambda: np.array_equal(mem.read_words(c, n).view(np.float32), a + b)


def _matmul(mem: GlobalMemory, scale: int):
    n = 64 * scale
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    _, _, c = _put(mem, [a, b, np.zeros((n, n), np.float32)], [n, n, n])

    def check() -> bool:
        acc = np.zeros((n, n), np.uint32)  # the kernel's order: one fused step per k
        ab, bb = a.view(np.uint32), b.view(np.uint32)
        for k in range(n):
            acc = nx.ffma(ab[:, k][:, None], bb[k, :][None, :], acc)
        return np.array_equal(mem.read_words(c, n * n).reshape(n, n), acc)

    return (n // 16, n // 16, 1), (16, 16, 1), 24, check


def _collatz_steps(x: np.ndarray, cap: int = 255) -> np.ndarray:
    """What classify computes: -1 for v <= 0, else the Collatz steps from v to 1, capped."""
    v = x.astype(np.int64)
    steps = np.where(v <= 0, -1, 0)
    for _ in range(cap):
        live = (v > 1)
        v = np.where(live, np.where(v % 2 == 0, v >> 1, (3 * v + 1) & 0xFFFFFFFF), v)
        steps += live
    return steps


def _divergent(mem: GlobalMemory, scale: int):
    n = 16384 * scale
    x = np.random.default_rng(3).integers(-50, 5000, n).astype(np.int32)
    _, out = _put(mem, [x, np.zeros(n, np.int32)], [n])
    return (n // 128, 1, 1), (128, 1, 1), 12, \
        lambda: np.array_equal(mem.read_words(out, n).view(np.int32), _collatz_steps(x))


def _reduce(mem: GlobalMemory, scale: int):
    n = 65536 * scale
    # small integers: every partial sum is exact, so any summation order gives these bits
    x = np.random.default_rng(2).integers(0, 1000, n).astype(np.float32)
    _, out = _put(mem, [x, np.zeros(n // 256, np.float32)], [n])
    return (n // 256, 1, 1), (256, 1, 1), 12, \
        lambda: np.array_equal(mem.read_words(out, n // 256).view(np.float32),
                               x.reshape(-1, 256).sum(axis=1))


KERNELS: dict[str, _Case] = {
    "vector_add": _Case("vector_add", "vector_add", _vector_add),
    "matmul": _Case("matmul", "matmul", _matmul),
    "divergent": _Case("divergence", "classify", _divergent),
    "reduce": _Case("reduction", "block_sum", _reduce),
}
"""Benchmark name -> kernel: vector add, a 64 x 64 ffma-loop matmul, classify (per-thread
Collatz trip counts: nested divergence) and block_sum (a shared-memory tree, 9 barriers per
block of 256)."""


def bench_iss(kernel: str, warp_size: int = 32, scale: int = 1) -> dict:
    """Run one benchmark kernel on the ISS; returns its size, counts, time and whether the
    result matched NumPy. ``scale`` multiplies the problem size."""
    from simtgpu.assembler import assemble_file
    from simtgpu.assembler.examples import example_asm

    if kernel not in KERNELS:
        raise SimtgpuError(f"unknown benchmark kernel '{kernel}' (one of {', '.join(KERNELS)})")
    case = KERNELS[kernel]
    obj = assemble_file(example_asm(case.example))
    info = obj.kernel(case.kernel)
    mem = GlobalMemory(64 << 20)
    grid, block, param_size, check = case.setup(mem, scale)
    iss = Iss(mem, warp_size=warp_size, instruction_budget=1 << 40)
    t0 = time.perf_counter()
    stats = iss.launch(obj.code, info.entry, grid, block, PARAMS, param_size, info.shared_bytes)
    seconds = time.perf_counter() - t0
    return {
        "kernel": kernel,
        "warp_size": warp_size,
        "threads": grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2],
        "warp_instructions": stats.warp_instructions,
        "thread_instructions": stats.thread_instructions,
        "seconds": seconds,
        "thread_instructions_per_s": stats.thread_instructions / seconds,
        "warp_instructions_per_s": stats.warp_instructions / seconds,
        "correct": bool(check()),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    names = argv or list(KERNELS)
    print(f"{'kernel':<12} {'warp':>4} {'threads':>8} {'thread-instr':>13} {'s':>7} "
          f"{'M thread-instr/s':>17} {'k warp-instr/s':>15}  ok")
    for name in names:
        for w in (4, 8, 32):
            r = bench_iss(name, w)
            print(f"{name:<12} {w:>4} {r['threads']:>8} {r['thread_instructions']:>13,} "
                  f"{r['seconds']:>7.3f} {r['thread_instructions_per_s'] / 1e6:>17.1f} "
                  f"{r['warp_instructions_per_s'] / 1e3:>15.1f}  {r['correct']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
