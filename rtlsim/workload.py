"""The issue-rate kernels: an ALU loop, the shared-memory-tiled sgemm and a coalesced vector
add (examples/asm), each checked against NumPy.

Two users: the issue-rate benchmark (:func:`simtgpu.verification.bench_rtl.bench_ipc`,
docs/performance.md) and the training run of a profile-guided model build (the driver's
:func:`simtgpu.driver_model.backend_rtl.train`), so that the profile follows what kernels
exercise (integer and FP lanes, global and shared memory, barriers, the schedulers) rather than
an idle GPU. The kernels run on a device that the caller opens (the driver's ``Device`` on the
RTL backend), so this module needs nothing above the simulation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from simtgpu.assembler.examples import example_asm
from simtgpu.isa.mma import mma_shape

__all__ = ["hgemm_mma", "hgemm_mma_reference", "issue_rate", "sgemm_tiled"]


def _per_core_ipc(res: Any, cores_used: int) -> float:
    return res.instructions / res.cycles / cores_used if res.cycles else 0.0


def sgemm_tiled(dev: Any, n: int, rng: np.random.Generator) -> tuple[Any, tuple[int, int]]:
    """An ``n`` x ``n`` x ``n`` examples/asm/sgemm_tiled.s on ``dev`` with the tile of
    examples/sgemm.py, of standard-normal float32 from ``rng``, checked against float64
    NumPy. Returns the launch and the tile (bx, by)."""
    cfg = dev.config
    bx = 16 if cfg.lanes >= 32 else 8 if cfg.lanes >= 8 else 4  # examples/sgemm.py's tiles
    by = max(1, min(bx, cfg.warps_per_core * cfg.lanes // bx))
    k = dev.load_module(example_asm("sgemm_tiled")).kernel("sgemm_tiled")
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    dA, dB, dC = dev.to_device(A), dev.to_device(B), dev.zeros(n * n, np.float32)
    r = dev.launch(k, grid=(-(-n // bx), -(-n // by)), block=(bx, by),
                   args=(dA, dB, dC, n, n, n))
    want = A.astype(np.float64) @ B.astype(np.float64)
    if np.max(np.abs(dC.to_host().reshape(n, n) - want)) > 1e-4 * n * max(
            1.0, float(np.max(np.abs(want)))):
        raise AssertionError("sgemm_tiled differs from NumPy")
    return r, (bx, by)


def issue_rate(dev: Any, sgemm_size: int = 64) -> list[dict]:
    """Issue rate of the RTL behind ``dev`` (a driver ``Device``; warp-instructions per cycle
    per core) on the targets of the microarchitecture: the ALU loop with one block of every
    warp of a core (whole launch, and the loop alone as the difference of two trip counts),
    sgemm_tiled of ``sgemm_size`` cubed, and the bus transactions of a coalesced warp load.
    One row (``what``, ``ipc``, ``detail``) per kernel."""
    rows: list[dict] = []
    cfg = dev.config
    block = cfg.warps_per_core * cfg.lanes
    k = dev.load_module(example_asm("alu_loop")).kernel("alu_loop")
    out = dev.zeros(block, np.int32)
    res = {it: dev.launch(k, grid=1, block=block, args=(out, it)) for it in (100, 300)}
    whole = _per_core_ipc(res[300], 1)
    loop = ((res[300].instructions - res[100].instructions)
            / (res[300].cycles - res[100].cycles))
    rows.append({"what": f"ALU loop, 1 block of {cfg.warps_per_core} warps, 300 trips",
                 "ipc": whole, "detail": f"loop alone {loop:.3f}; "
                 f"{res[300].instructions} warp-instr in {res[300].cycles} cycles"})

    n = sgemm_size
    r, (bx, by) = sgemm_tiled(dev, n, np.random.default_rng(2))
    c = r.counters
    cycles = r.cycles * cfg.cores
    rows.append({"what": f"sgemm_tiled {n}x{n}x{n}, tile {bx}x{by}", "ipc":
                 _per_core_ipc(r, cfg.cores), "detail": "stall shares of core-cycles: "
                 + ", ".join(f"{key[6:]} {c.get(key, 0) / cycles:.0%}" for key in
                             ("stall_scoreboard", "stall_memory", "stall_barrier",
                              "stall_structural", "stall_idle"))})

    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
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


def hgemm_mma(dev: Any, a: np.ndarray, b: np.ndarray, warps_per_block: int = 0
              ) -> tuple[np.ndarray, Any]:
    """``C = A @ B`` by examples/asm/hgemm_mma.s on ``dev``: ``a`` (m, k) and ``b`` (k, n)
    fp16 (``np.float16`` or their uint16 patterns), C float32. Blocks of
    ``warps_per_block`` warps (default: every warp of a core). Returns C and the launch."""
    cfg = dev.config
    s = mma_shape(cfg.lanes)
    bw = warps_per_block or cfg.warps_per_core
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or m % s.m or n % (2 * s.n * bw) or k % s.k or k == 0:
        raise ValueError(f"hgemm_mma: {m}x{k} @ {b.shape[0]}x{n} needs m a multiple of {s.m}, "
                         f"n of {2 * s.n * bw}, k of {s.k} (and k > 0)")
    a16 = np.ascontiguousarray(np.asarray(a).view(np.uint16))
    bt16 = np.ascontiguousarray(np.asarray(b).view(np.uint16).T)
    kern = dev.load_module(example_asm("hgemm_mma")).kernel("hgemm_mma")
    d_a, d_bt = dev.to_device(a16), dev.to_device(bt16)
    d_c = dev.zeros(m * n, np.float32)
    res = dev.launch(kern, grid=(n // (2 * s.n * bw), m // s.m), block=bw * cfg.lanes,
                     args=(d_a, d_bt, d_c, m, n, k))
    return d_c.to_host().reshape(m, n), res


def hgemm_mma_reference(a: np.ndarray, b: np.ndarray, lanes: int) -> np.ndarray:
    """What hgemm_mma.s computes at warp width ``lanes``, as FP32 bit patterns: D = +0.0,
    then ``D = numerics.mma("f16", A[:, kk:kk+k], B[kk:kk+k, :], D)`` per k step."""
    from simtgpu.sim import numerics as nx

    a16, b16 = np.asarray(a).view(np.uint16), np.asarray(b).view(np.uint16)
    step = mma_shape(lanes).k
    d = np.zeros((a16.shape[0], b16.shape[1]), np.uint32)
    for kk in range(0, a16.shape[1], step):
        d = np.asarray(nx.mma("f16", a16[:, kk:kk + step], b16[kk:kk + step], d), np.uint32)
    return d
