"""Shuffles (all modes, out-of-range and non-executing sources), votes and special
registers, against per-lane Python references."""

import numpy as np
import pytest
from sim_harness import GID, kernel, run

SHFL = GID + """
    ldparam r4, bs
    add r4, r4, r2
    ldg r4, [r4]
    muli r3, r1, 10
    addi r3, r3, 7
    li r5, 0xaaaa
    movi r8, 5
    divu_placeholder
    isetp.ne p1, r9, r8
@p1 shfl.{mode} r5, r3, r4
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
"""
# p1 = (gid & 7) != 5 : lanes with gid & 7 == 5 do not execute
GUARD = "andi r9, r1, 7"


def shfl_ref(mode: str, warp: int, n: int, b: np.ndarray) -> list[int]:
    gid = np.arange(n)
    a = gid * 10 + 7
    ex = (gid & 7) != 5
    out = []
    for t in range(n):
        if not ex[t]:
            out.append(0xAAAA)
            continue
        lane, base = t % warp, t - t % warp
        bb = int(b[t])
        src = {"idx": bb & (warp - 1), "up": lane - bb, "down": lane + bb, "xor": lane ^ bb}[mode]
        ok = 0 <= src < warp and ex[base + src]
        out.append(int(a[base + src]) if ok else int(a[t]))
    return out


@pytest.mark.parametrize("warp", [4, 8, 32])
@pytest.mark.parametrize("mode", ["idx", "up", "down", "xor"])
def test_shuffle(mode, warp):
    n = 128
    rng = np.random.default_rng(1)
    b = rng.choice([0, 1, 2, 3, 5, 7, 13, 31, 32, 33, 0xFFFFFFFF, 0x80000001], n)
    b = b.astype(np.uint32)
    src = SHFL.replace("divu_placeholder", GUARD).replace("{mode}", mode)
    res = run(kernel(src, "bs out"), warp_size=warp, grid=(2, 1, 1), block=(64, 1, 1),
              params=[("bs", b), ("out", np.zeros(n, np.uint32))])
    assert res.out["out"].tolist() == shfl_ref(mode, warp, n, b)


VOTE = GID + """
    ldparam r4, ps
    add r4, r4, r2
    ldg r4, [r4]
    isetp.ne p2, r4, r0
    andi r9, r1, 3
    movi r8, 2
    isetp.ne p1, r9, r8
    li r5, 0xffffffff
    pclr p3
    pset p4
@p1 vote.any p3, p2
@p1 vote.all p4, !p2
@p1 vote.ballot r5, p2
    movi r7, 1
    sel r10, r7, r0, p3
    sel r11, r7, r0, p4
    ldparam r6, out
    shli r12, r2, 1
    add r6, r6, r12
    stg [r6], r5
    shli r11, r11, 1
    or r10, r10, r11
    stg [r6+4], r10
"""


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_votes(warp):
    n = 64
    rng = np.random.default_rng(warp)
    p = (rng.random(n) < 0.3).astype(np.uint32)
    p[:warp] = 0  # one warp where no executing lane has the predicate
    p[warp:2 * warp] = 1  # and one where every lane has it
    res = run(kernel(VOTE, "ps out"), warp_size=warp, block=(n, 1, 1),
              params=[("ps", p), ("out", np.zeros(2 * n, np.uint32))])
    out = res.out["out"].reshape(n, 2)
    ex = (np.arange(n) & 3) != 2
    for w in range(n // warp):
        lanes = range(w * warp, (w + 1) * warp)
        e = [t for t in lanes if ex[t]]
        ballot = sum(1 << (t - w * warp) for t in e if p[t])
        anyp = any(p[t] for t in e)
        allnot = all(not p[t] for t in e)
        for t in lanes:
            if ex[t]:
                assert out[t, 0] == ballot
                assert out[t, 1] == int(anyp) | (int(allnot) << 1)
            else:
                assert out[t, 0] == 0xFFFFFFFF and out[t, 1] == 0b10


SREGS = ["tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", "ctaid.x", "ctaid.y",
         "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid", "nwarps",
         "warpsize", "coreid", "tid", "clock", "clockhi"]


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_special_registers(warp):
    grid, block = (3, 2, 2), (5, 3, 2)
    nthreads = 30
    nblocks = 12
    body = """
    s2r r1, tid
    s2r r2, ctaid.x
    s2r r3, ctaid.y
    s2r r4, nctaid.x
    mul r3, r3, r4
    add r2, r2, r3
    s2r r3, ctaid.z
    s2r r4, nctaid.y
    mul r3, r3, r4
    s2r r4, nctaid.x
    mul r3, r3, r4
    add r2, r2, r3
    muli r2, r2, 30
    add r1, r1, r2
    muli r1, r1, 80
    ldparam r6, out
    add r6, r6, r1
"""
    for i, name in enumerate(SREGS):
        body += f"    s2r r7, {name}\n    stg [r6+{4 * i}], r7\n"
    res = run(kernel(body), warp_size=warp, grid=grid, block=block, num_cores=5,
              params=[("out", np.zeros(nblocks * nthreads * 20, np.uint32))])
    out = res.out["out"].reshape(nblocks, nthreads, 20)
    nwarps = -(-nthreads // warp)
    for b in range(nblocks):
        cx, cy, cz = b % 3, (b // 3) % 2, b // 6
        for t in range(nthreads):
            x, y, z = t % 5, (t // 5) % 3, t // 15
            want = dict(zip(SREGS, [x, y, z, 5, 3, 2, cx, cy, cz, 3, 2, 2, t % warp, t // warp,
                                    nwarps, warp, b % 5, t], strict=False))
            got = dict(zip(SREGS, out[b, t].tolist(), strict=True))
            for k, v in want.items():
                assert got[k] == v, (k, b, t)
            # the ISS clock counts the warp's retired instructions (17 before the first
            # s2r, then two per special register)
            assert got["clock"] == 17 + 2 * SREGS.index("clock")
            assert got["clockhi"] == 0


def test_undefined_special_register_is_illegal():
    from simtgpu.isa import FaultCause, encode
    from simtgpu.sim import KernelFault

    src = kernel(GID + f"    .word {0x00192b88}\n")
    with pytest.raises(KernelFault) as e:
        run(src, warp_size=4, block=(8, 1, 1), params=[("out", np.ones(8, np.uint32))])
    assert e.value.record.cause is FaultCause.ILLEGAL_INSTRUCTION
    assert encode("s2r", {"rd": 5, "rs1": 19}) & 0x7F == 0x00192b88 & 0x7F  # it is an s2r
