"""Random ``mma`` tiles through a GPU's matrix unit, bit for bit against ``numerics.mma``.

    python -m simtgpu.verification.mma_check [--config small] [--tiles 1000000]

A kernel (generated for the configuration's warp width) has every warp load the A, B and
C fragments of its tiles from memory, issue one ``mma`` per tile and store D; the host
draws the tiles with :func:`simtgpu.verification.fp_vectors.mma_tiles` (moderate values
with specials, subnormals, arbitrary patterns and FP32 extremes in C), fp16 and bf16 in
turn, in batches that fit device memory, and compares every D element with
``numerics.mma``. ``make test`` runs a sample on ``tiny`` (tests/rtl/system); the million
tiles run behind ``SIMTGPU_LONG=1`` (docs/verification.md has the measured run).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
from simtgpu.isa.mma import mma_shape
from simtgpu.sim import numerics as nx

from .fp_vectors import mma_fragments, mma_tiles

__all__ = ["check_mma_tiles", "mma_tiles_kernel"]


def mma_tiles_kernel(lanes: int, fmt: str) -> str:
    """Assembly of ``mma_tiles(a, b, c, d, per)``: warp ``w`` (over the grid) computes tiles
    ``w * per`` .. ``+ per - 1``; each operand array holds per tile its fragment registers
    one after the other, each as ``lanes`` words."""
    s = mma_shape(lanes)
    reg = 4 * lanes  # bytes of one fragment register
    b_loads = "\n".join(f"        ldg     r{20 + r}, [r9+{r * reg}]" for r in range(s.regs_b))
    return f"""
        .kernel mma_tiles
        .param  a, ptr
        .param  b, ptr
        .param  c, ptr
        .param  d, ptr
        .param  per, i32
        s2r     r1, ctaid.x
        s2r     r2, nwarps
        mul     r1, r1, r2
        s2r     r2, warpid
        add     r1, r1, r2
        ldparam r3, per
        mul     r1, r1, r3              ; the warp's first tile
        s2r     r5, laneid
        shli    r5, r5, 2
        muli    r6, r1, {4 * reg}
        add     r6, r6, r5              ; its A, C, D offset
        muli    r7, r1, {s.regs_b * reg}
        add     r7, r7, r5              ; its B offset
        ldparam r8, a
        add     r8, r8, r6
        ldparam r9, b
        add     r9, r9, r7
        ldparam r10, c
        add     r10, r10, r6
        ldparam r11, d
        add     r11, r11, r6
tile:
        ldg     r16, [r8]
        ldg     r17, [r8+{reg}]
        ldg     r18, [r8+{2 * reg}]
        ldg     r19, [r8+{3 * reg}]
{b_loads}
        ldg     r24, [r10]
        ldg     r25, [r10+{reg}]
        ldg     r26, [r10+{2 * reg}]
        ldg     r27, [r10+{3 * reg}]
        mma.{fmt} r28, r16, r20, r24
        stg     [r11], r28
        stg     [r11+{reg}], r29
        stg     [r11+{2 * reg}], r30
        stg     [r11+{3 * reg}], r31
        addi    r8, r8, {4 * reg}
        addi    r9, r9, {s.regs_b * reg}
        addi    r10, r10, {4 * reg}
        addi    r11, r11, {4 * reg}
        addi    r3, r3, -1
        isetp.gt p0, r3, r0
   @p0  bra     tile
        exit
        .end
"""


def check_mma_tiles(dev: Any, tiles: int, seed: int = 0, batch: int = 8192) -> dict:
    """Run ``tiles`` random tiles (half fp16, half bf16) through ``dev``'s ``mma`` and
    count the D elements that differ from ``numerics.mma``. Returns ``tiles``,
    ``mismatches``, ``cycles`` and the first few mismatches (format, tile, register, lane,
    got, want)."""
    cfg = dev.config
    s = mma_shape(cfg.lanes)
    warps = cfg.warps_per_core
    per = 4
    unit = warps * per * cfg.cores  # tiles per grid step: every core busy
    tile_bytes = (s.regs_a + s.regs_b + 8) * cfg.lanes * 4  # A, B, C, D fragments
    batch = min(batch, cfg.memory_bytes // (4 * tile_bytes))  # a quarter of the memory
    batch = max(unit, batch // unit * unit)
    rng = np.random.default_rng(seed)
    kernels = {fmt: dev.load_module(mma_tiles_kernel(cfg.lanes, fmt)).kernel("mma_tiles")
               for fmt in ("f16", "bf16")}
    done, bad, cycles, first = 0, 0, 0, []
    while done < tiles:
        fmt = ("f16", "bf16")[(done // batch) % 2]
        n = -(-min(batch, tiles - done) // unit) * unit
        a, b, c = mma_tiles(rng, n, s.m, s.n, s.k, fmt)
        fa, fb, fc = mma_fragments(s, a, b, c)
        want = np.asarray(nx.mma(fmt, a, b, c), np.uint32)
        _, _, fw = mma_fragments(s, a, b, want)
        bufs = [dev.to_device(x) for x in (fa, fb, fc)]
        d = dev.empty(fc.shape, np.uint32)
        res = dev.launch(kernels[fmt], grid=n // (warps * per), block=warps * cfg.lanes,
                         args=(*bufs, d, per))
        got = d.to_host()
        for buf in (*bufs, d):
            dev.free(buf)
        cycles += res.cycles
        diff = np.argwhere(got != fw)
        bad += len(diff)
        first += [(fmt, done + int(t), int(r), int(ln), hex(got[t, r, ln]), hex(fw[t, r, ln]))
                  for t, r, ln in diff[:5 - len(first)]]
        done += n
    return {"tiles": done, "mismatches": bad, "cycles": cycles, "first": first}


def main(argv: list[str] | None = None) -> int:
    from simtgpu.driver_model.device import Device

    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.mma_check")
    p.add_argument("--config", default="small")
    p.add_argument("--tiles", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.monotonic()
    with Device(backend="rtl", config=args.config) as dev:
        r = check_mma_tiles(dev, args.tiles, args.seed)
    print(f"{r['tiles']:,} tiles on {args.config}: {r['mismatches']} mismatching elements, "
          f"{r['cycles']:,} cycles, {time.monotonic() - t0:.0f} s wall")
    for m in r["first"]:
        print("  mismatch", m)
    return 1 if r["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
