"""The ISS runs the half-precision instructions and mma: register packing (which half), the
numerics module's results, the fragment layout (PTX m16n8k16 at 32 lanes, written out here
from the PTX manual's tables) and the fault of a partial-warp mma."""

from __future__ import annotations

import numpy as np
import pytest
from sim_harness import GID, kernel, run
from simtgpu.isa import FaultCause
from simtgpu.isa.mma import mma_shape
from simtgpu.sim import KernelFault
from simtgpu.sim import numerics as nx

HALF_OPS = """
    ldparam r3, a
    add r3, r3, r2
    ldg r4, [r3]
    ldparam r3, b
    add r3, r3, r2
    ldg r5, [r3]
    ldparam r6, out
    add r6, r6, r2
    {op}
    stg [r6], r7
"""


@pytest.mark.parametrize("op, ref", [
    ("hcvt.hl2f r7, r4", lambda a, b: nx.hcvt("hl2f", a)),
    ("hcvt.hh2f r7, r4", lambda a, b: nx.hcvt("hh2f", a)),
    ("hcvt.bl2f r7, r4", lambda a, b: nx.hcvt("bl2f", a)),
    ("hcvt.bh2f r7, r4", lambda a, b: nx.hcvt("bh2f", a)),
    ("hcvt.f2h r7, r4", lambda a, b: nx.f32_to_f16(a).astype(np.uint32)),
    ("hcvt.f2b r7, r4", lambda a, b: nx.f32_to_bf16(a).astype(np.uint32)),
    ("hcvt.f2h2 r7, r4, r5", lambda a, b: nx.f32_to_f16(a) | (nx.f32_to_f16(b).astype(
        np.uint32) << 16)),
    ("hcvt.f2b2 r7, r4, r5", lambda a, b: nx.f32_to_bf16(a) | (nx.f32_to_bf16(b).astype(
        np.uint32) << 16)),
    ("hadd2.f16 r7, r4, r5", lambda a, b: nx.half2("hadd2", "f16", a, b)),
    ("hsub2.bf16 r7, r4, r5", lambda a, b: nx.half2("hsub2", "bf16", a, b)),
    ("hmul2.f16 r7, r4, r5", lambda a, b: nx.half2("hmul2", "f16", a, b)),
    ("hfma2.f16 r7, r4, r5, r4", lambda a, b: nx.hfma2("f16", a, b, a)),
    ("hfma2.bf16 r7, r5, r4, r5", lambda a, b: nx.hfma2("bf16", b, a, b)),
])
def test_half_instructions(op, ref):
    rng = np.random.default_rng(len(op))
    a = rng.integers(0, 1 << 32, 64, dtype=np.uint32)
    b = nx.f32_to_bits(rng.standard_normal(64).astype(np.float32))
    res = run(kernel(GID + HALF_OPS.format(op=op), "a b out"), warp_size=8, block=(64, 1, 1),
              params=[("a", a), ("b", b), ("out", np.zeros(64, np.uint32))])
    assert (res.out["out"] == ref(a, b)).all()


def test_half_packing_by_hand():
    # 1.5 (f16 0x3e00) in the low half, -2.0 (0xc000) in the high half
    a = np.full(8, 0xC0003E00, np.uint32)
    b = np.full(8, 0x3C003C00, np.uint32)  # 1.0, 1.0
    res = run(kernel(GID + HALF_OPS.format(op="hadd2.f16 r7, r4, r5"), "a b out"),
              warp_size=8, block=(8, 1, 1), params=[("a", a), ("b", b),
                                                    ("out", np.zeros(8, np.uint32))])
    assert res.out["out"].tolist() == [0xBC004100] * 8  # -1.0 high, 2.5 low


def _ptx_m16n8k16(lane: int):
    """PTX ISA, 'Matrix fragments for mma.m16n8k16' (.f16/.bf16 A/B, .f32 C/D)."""
    g, t = lane >> 2, lane % 4
    a = [(g + 8 * (i % 4 >= 2), 2 * t + i % 2 + 8 * (i >= 4)) for i in range(8)]
    b = [(2 * t + i % 2 + 8 * (i >= 2), g) for i in range(4)]
    c = [(g + 8 * (i >= 2), 2 * t + i % 2) for i in range(4)]
    return a, b, c


def _fragments(lanes: int, a, b, c):
    """Per-register, per-lane words of the A, B, C fragments (the registers' contents)."""
    s = mma_shape(lanes)
    fa = np.zeros((s.regs_a, lanes), np.uint32)
    fb = np.zeros((s.regs_b, lanes), np.uint32)
    fc = np.zeros((s.regs_c, lanes), np.uint32)
    for ln in range(lanes):
        if lanes == 32:
            pa, pb, pc = _ptx_m16n8k16(ln)
        else:
            pa = [s.a_pos(i // 2, i % 2, ln) for i in range(2 * s.regs_a)]
            pb = [s.b_pos(i // 2, i % 2, ln) for i in range(2 * s.regs_b)]
            pc = [s.c_pos(i, ln) for i in range(s.regs_c)]
        for i, (r, col) in enumerate(pa):
            fa[i // 2, ln] |= np.uint32(a[r, col]) << (16 * (i % 2))
        for i, (r, col) in enumerate(pb):
            fb[i // 2, ln] |= np.uint32(b[r, col]) << (16 * (i % 2))
        for i, (r, col) in enumerate(pc):
            fc[i, ln] = c[r, col]
    return fa, fb, fc, pc


MMA_KERNEL = """
    s2r r1, laneid
    shli r2, r1, 2
    ldparam r3, frag
    add r3, r3, r2
{loads}
{guard}mma.{fmt} {d}, r8, r12, r16
    ldparam r3, out
    add r3, r3, r2
{stores}
"""


def _mma_kernel(lanes: int, fmt: str, d: str, guard: str = "") -> str:
    s = mma_shape(lanes)
    regs = ([8 + i for i in range(s.regs_a)] + [12 + i for i in range(s.regs_b)]
            + [16 + i for i in range(s.regs_c)])
    loads = "\n".join(f"    ldg r{r}, [r3]\n    addi r3, r3, {4 * lanes}" for r in regs)
    first = int(d[1:])
    stores = "\n".join(f"    stg [r3+{4 * lanes * i}], r{first + i}" for i in range(4))
    return kernel(MMA_KERNEL.format(loads=loads, guard=guard, fmt=fmt, d=d, stores=stores),
                  "frag out")


@pytest.mark.parametrize("lanes", [4, 8, 32])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("d", ["r20", "r16"])  # r16: D overwrites C in place
def test_mma_layout_and_result(lanes, fmt, d):
    s = mma_shape(lanes)
    rng = np.random.default_rng(lanes)
    x = rng.standard_normal(s.m * s.k + s.k * s.n).astype(np.float32)
    h = nx.f32_to_f16(nx.f32_to_bits(x)) if fmt == "f16" else nx.f32_to_bf16(
        nx.f32_to_bits(x))
    a, b = h[:s.m * s.k].reshape(s.m, s.k), h[s.m * s.k:].reshape(s.k, s.n)
    c = nx.f32_to_bits(rng.standard_normal((s.m, s.n)).astype(np.float32))
    fa, fb, fc, _ = _fragments(lanes, a, b, c)
    frag = np.concatenate([fa, fb, fc]).reshape(-1)
    res = run(_mma_kernel(lanes, fmt, d), warp_size=lanes, block=(lanes, 1, 1),
              params=[("frag", frag), ("out", np.zeros(4 * lanes, np.uint32))])
    want = nx.mma(fmt, a, b, c)
    _, _, fd, _ = _fragments(lanes, a, b, want)
    assert (res.out["out"].reshape(4, lanes) == fd).all()
    # and against float64 math within the documented bound
    got = np.zeros((s.m, s.n))
    for ln in range(lanes):
        for r in range(4):
            i, j = (_ptx_m16n8k16(ln)[2] if lanes == 32 else [s.c_pos(q, ln) for q in
                                                               range(4)])[r]
            got[i, j] = nx.bits_to_f32(res.out["out"][r * lanes + ln])
    exact = nx.half_to_f64(fmt, a) @ nx.half_to_f64(fmt, b) + nx.bits_to_f32(c)
    assert (np.abs(got - exact) <= nx.mma_error_bound(fmt, a, b, c)).all()


def test_partial_warp_mma_faults():
    s = mma_shape(8)
    src = _mma_kernel(8, "f16", "r20", guard="    movi r5, 5\n    isetp.ne p1, r1, r5\n@p1 ")
    frag = np.zeros(8 * (s.regs_a + s.regs_b + s.regs_c), np.uint32)
    with pytest.raises(KernelFault) as e:
        run(src, warp_size=8, block=(8, 1, 1),
            params=[("frag", frag), ("out", np.zeros(32, np.uint32))])
    rec = e.value.record
    assert rec.cause is FaultCause.DIVERGENT_MMA
    assert "mma.f16" in str(e.value)
