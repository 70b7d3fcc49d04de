"""ISS throughput on a few representative kernels, each checked against NumPy.

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

_PROLOGUE = """
    s2r r1, ctaid.x
    s2r r2, ntid.x
    mul r1, r1, r2
    s2r r2, tid.x
    add r1, r1, r2
"""

VECTOR_ADD = """
.kernel vector_add
.param a, ptr
.param b, ptr
.param c, ptr
.param n, i32
""" + _PROLOGUE + """
    ldparam r3, n
    isetp.ge p0, r1, r3
@p0 exit
    shli r4, r1, 2
    ldparam r5, a
    add r5, r5, r4
    ldg r6, [r5]
    ldparam r5, b
    add r5, r5, r4
    ldg r7, [r5]
    fadd r6, r6, r7
    ldparam r5, c
    add r5, r5, r4
    stg [r5], r6
    exit
.end
"""

MATMUL = """
.kernel matmul
.param a, ptr
.param b, ptr
.param c, ptr
.param n, i32
""" + _PROLOGUE + """
    s2r r2, ctaid.y
    s2r r3, ntid.y
    mul r2, r2, r3
    s2r r3, tid.y
    add r2, r2, r3
    ldparam r4, n
    mul r5, r2, r4
    shli r5, r5, 2
    ldparam r6, a
    add r6, r6, r5
    shli r7, r1, 2
    ldparam r8, b
    add r8, r8, r7
    shli r9, r4, 2
    movi r10, 0
    movi r11, 0
LOOP:
    ldg r12, [r6]
    ldg r13, [r8]
    ffma r10, r12, r13, r10
    addi r6, r6, 4
    add r8, r8, r9
    addi r11, r11, 1
    isetp.lt p0, r11, r4
@p0 bra LOOP
    ldparam r6, c
    add r6, r6, r5
    add r6, r6, r7
    stg [r6], r10
    exit
.end
"""

# Per-thread trip counts: thread t sums 1..(t % 32 + 1), so warps diverge inside the loop.
DIVERGENT = """
.kernel divergent
.param out, ptr
""" + _PROLOGUE + """
    andi r3, r1, 31
    movi r5, 0
    movi r4, 0
    ssy DONE
LOOP:
    addi r4, r4, 1
    add r5, r5, r4
    isetp.le p0, r4, r3
@p0 bra LOOP
    sync
DONE:
    shli r2, r1, 2
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
    exit
.end
"""

# Block-wide tree reduction in shared memory (256 threads, 8 barriers), one sum per block.
REDUCE = """
.kernel reduce
.param x, ptr
.param out, ptr
.shared 1024
""" + _PROLOGUE + """
    shli r2, r1, 2
    ldparam r3, x
    add r3, r3, r2
    ldg r5, [r3]
    s2r r3, tid.x
    shli r4, r3, 2
    sts [r4], r5
    bar
    movi r6, 128
LOOP:
    isetp.lt p0, r3, r6
    shli r7, r6, 2
    add r7, r7, r4
@p0 lds r8, [r7]
@p0 lds r9, [r4]
@p0 add r9, r9, r8
@p0 sts [r4], r9
    bar
    shri r6, r6, 1
    isetp.ne p1, r6, r0
@p1 bra LOOP
    isetp.eq p2, r3, r0
@!p2 exit
    lds r5, [r0]
    s2r r7, ctaid.x
    shli r7, r7, 2
    ldparam r6, out
    add r6, r6, r7
    stg [r6], r5
    exit
.end
"""


@dataclass(frozen=True)
class _Case:
    source: str
    setup: Callable[[GlobalMemory, int], tuple]  # -> (grid, block, params, check)


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
    _, _, c = _put(mem, [a, b, np.zeros((n, n), np.float32)], [n])

    def check() -> bool:
        acc = np.zeros((n, n), np.uint32)  # the kernel's order: one fused step per k
        ab, bb = a.view(np.uint32), b.view(np.uint32)
        for k in range(n):
            acc = nx.ffma(ab[:, k][:, None], bb[k, :][None, :], acc)
        return np.array_equal(mem.read_words(c, n * n).reshape(n, n), acc)

    return (n // 16, n // 16, 1), (16, 16, 1), 16, check


def _divergent(mem: GlobalMemory, scale: int):
    n = 16384 * scale
    (out,) = _put(mem, [np.zeros(n, np.uint32)])
    t = np.arange(n) % 32 + 1
    return (n // 128, 1, 1), (128, 1, 1), 4, \
        lambda: np.array_equal(mem.read_words(out, n), t * (t + 1) // 2)


def _reduce(mem: GlobalMemory, scale: int):
    n = 65536 * scale
    x = np.random.default_rng(2).integers(0, 1000, n).astype(np.uint32)
    _, out = _put(mem, [x, np.zeros(n // 256, np.uint32)])
    return (n // 256, 1, 1), (256, 1, 1), 8, \
        lambda: np.array_equal(mem.read_words(out, n // 256), x.reshape(-1, 256).sum(axis=1))


KERNELS: dict[str, _Case] = {
    "vector_add": _Case(VECTOR_ADD, _vector_add),
    "matmul": _Case(MATMUL, _matmul),
    "divergent": _Case(DIVERGENT, _divergent),
    "reduce": _Case(REDUCE, _reduce),
}


def bench_iss(kernel: str, warp_size: int = 32, scale: int = 1) -> dict:
    """Run one benchmark kernel on the ISS; returns its size, counts, time and whether the
    result matched NumPy. ``scale`` multiplies the problem size."""
    from simtgpu.assembler import assemble

    if kernel not in KERNELS:
        raise SimtgpuError(f"unknown benchmark kernel '{kernel}' (one of {', '.join(KERNELS)})")
    case = KERNELS[kernel]
    obj = assemble(case.source, f"<bench {kernel}>")
    info = obj.kernel(kernel)
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
