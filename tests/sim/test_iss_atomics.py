"""Atomics: exact lane-order semantics under contention, global and shared.

``apply_atomics`` is checked against a plain sequential loop for random address patterns;
kernels then check the instructions end to end, with every lane of every warp on one
address."""

import numpy as np
import pytest
from int_ref import INT_REF, MASK32, s32
from sim_harness import GID, kernel, run
from simtgpu.sim import numerics as nx
from simtgpu.sim.semantics import apply_atomics


def sequential(space, name, idx, b, c):
    space = [int(v) for v in space]
    old, new, wrote = [], [], []
    for i, a in enumerate(idx):
        m = space[a]
        bb = int(b[i])
        if name in ("add", "min", "max"):
            v = INT_REF[name](m, bb)
        elif name == "exch":
            v = bb
        elif name == "fadd":
            v = int(nx.fadd(np.uint32(m), np.uint32(bb)))
        elif name in ("and", "or", "xor"):
            v = {"and": m & bb, "or": m | bb, "xor": m ^ bb}[name]
        elif name in ("fmin", "fmax"):
            v = float_minmax(name, m, bb)
        else:
            v = int(c[i]) if m == bb else m
        old.append(m)
        new.append(v)
        wrote.append(name != "cas" or m == bb)
        space[a] = v
    return space, old, new, wrote


def float_minmax(name: str, m: int, b: int) -> int:
    """Triton's float atomic max/min written from its lowering: by the sign of b as a float
    (b >= 0.0 includes -0.0), the signed or unsigned integer max/min; a NaN b keeps m."""
    fb = float(np.uint32(b).view(np.float32))
    if fb != fb:
        return m
    if fb >= 0.0:
        return (max if name == "fmax" else min)(s32(m), s32(b)) & MASK32
    return (min if name == "fmax" else max)(m, b)


@pytest.mark.parametrize("name", ["add", "min", "max", "exch", "cas", "fadd", "and", "or",
                                  "xor", "fmin", "fmax"])
@pytest.mark.parametrize("seed", range(6))
def test_apply_atomics_equals_sequential(name, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    nslots = int(rng.choice([1, 2, 5, 50]))
    idx = rng.integers(0, nslots, n)
    if name in ("fmin", "fmax"):
        pool = np.array([0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,
                         0x7FFFFFFF, 0xFFC00000, 1, 0x80000001], np.uint32)
        b = np.where(rng.random(n) < 0.3, rng.choice(pool, n),
                     rng.standard_normal(n).astype(np.float32).view(np.uint32))
        space = rng.choice(pool, nslots)
    elif name == "fadd":
        b = rng.standard_normal(n).astype(np.float32).view(np.uint32)
        space = rng.standard_normal(nslots).astype(np.float32).view(np.uint32)
    elif name == "cas":
        # compare values drawn from a small set so that many compares hit
        space = rng.integers(0, 3, nslots).astype(np.uint32)
        b = rng.integers(0, 3, n).astype(np.uint32)
    else:
        space = rng.integers(0, 1 << 32, nslots, dtype=np.uint64).astype(np.uint32)
        b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(0, 3, n).astype(np.uint32)
    want_space, want_old, want_new, want_wrote = sequential(space, name, idx, b, c)
    got_space = space.copy()
    old, new, wrote = apply_atomics(got_space, name, idx, b, c, nx.fadd)
    assert got_space.tolist() == want_space
    assert old.tolist() == want_old
    assert new.tolist() == want_new
    assert wrote.tolist() == want_wrote


ATOM = GID + """
    ldparam r3, cell
    ldparam r4, vals
    add r4, r4, r2
    ldg r4, [r4]
    ldparam r7, cmp
    add r7, r7, r2
    ldg r7, [r7]
    {op} r5, [r3], r4{extra}
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
"""


def contended(op: str, vals, init: int, warp: int, cmp=None, extra: str = ""):
    n = vals.size
    cmp = np.zeros(n, np.uint32) if cmp is None else cmp
    res = run(kernel(ATOM.format(op=op, extra=extra), "cell vals cmp out"), warp_size=warp,
              grid=(n // 64, 1, 1), block=(64, 1, 1),
              params=[("cell", np.array([init], np.uint32)), ("vals", vals), ("cmp", cmp),
                      ("out", np.zeros(n, np.uint32))])
    return res.out["cell"][0], res.out["out"], res


def lane_order(warp: int, n: int) -> list[list[int]]:
    """Threads grouped by warp (each warp's lanes in lane order)."""
    return [list(range(s, s + warp)) for s in range(0, n, warp)]


@pytest.mark.parametrize("wave_threads", [8192, 64])
@pytest.mark.parametrize("warp", [4, 8, 32])
def test_add_full_contention(warp, wave_threads, monkeypatch):
    import simtgpu.sim.iss as iss_mod

    monkeypatch.setattr(iss_mod, "WAVE_THREADS", wave_threads)  # one wave, or one per block
    rng = np.random.default_rng(warp)
    vals = rng.integers(0, 1 << 32, 256, dtype=np.uint64).astype(np.uint32)
    final, old, res = contended("atom.add", vals, 7, warp)
    assert int(final) == (7 + int(vals.astype(np.uint64).sum())) & MASK32
    for lanes in lane_order(warp, 256):  # within a warp, lanes act in lane order
        for a, b in zip(lanes, lanes[1:], strict=False):
            assert int(old[b]) == (int(old[a]) + int(vals[a])) & MASK32
    # across warps: the (old, old + val) steps chain from 7 to the final value
    steps = {int(o): (int(o) + int(v)) & MASK32 for o, v in zip(old, vals, strict=True)}
    cur = 7
    for _ in range(256):
        cur = steps.pop(cur)
    assert cur == int(final) and not steps
    assert res.stats.atomics == 256


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("warp", [4, 32])
def test_min_max_full_contention(op, warp):
    rng = np.random.default_rng(3)
    vals = rng.integers(-1000, 1000, 256).astype(np.int32).view(np.uint32)
    final, old, _ = contended(f"atom.{op}", vals, 0, warp)
    f = min if op == "min" else max
    sv = [s32(int(v)) for v in vals]
    assert s32(int(final)) == f(0, *sv)
    for lanes in lane_order(warp, 256):
        for a, b in zip(lanes, lanes[1:], strict=False):
            assert s32(int(old[b])) == f(s32(int(old[a])), sv[a])


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_exch_chain(warp):
    vals = np.arange(100, 356, dtype=np.uint32)
    final, old, _ = contended("atom.exch", vals, 5, warp)
    for lanes in lane_order(warp, 256):
        for a, b in zip(lanes, lanes[1:], strict=False):
            assert old[b] == vals[a]
    # every value but the last one written comes back to exactly one lane
    assert sorted(old.tolist() + [int(final)]) == sorted([5] + vals.tolist())


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_cas_mismatch_writes_nothing(warp):
    # atom.cas rd, [a], b, c: thread t compares with t + 1 (never the cell's 0), would store t
    n = 256
    t = np.arange(n, dtype=np.uint32)
    final, old, res = contended("atom.cas", t + 1, 0, warp, cmp=t, extra=", r7")
    assert old.tolist() == [0] * n and int(final) == 0


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_cas_ticket_chain(warp):
    n = 256
    t = np.arange(n, dtype=np.uint32)
    final, old, _ = contended("atom.cas", t, 0, warp, cmp=t + 1, extra=", r7")
    # thread t compares with t, stores t + 1: warps run in warp order and lanes in lane
    # order (the ISS schedule for one instruction), so every swap succeeds
    assert old.tolist() == t.tolist()
    assert int(final) == n


def test_fadd_full_contention_is_sequential():
    rng = np.random.default_rng(9)
    vals = (rng.standard_normal(128) * 1000).astype(np.float32).view(np.uint32)
    final, old, _ = contended("atom.fadd", vals, 0, 8)
    acc = np.uint32(0)
    for i in range(128):  # warps in order, lanes in order: thread order
        assert old[i] == acc
        acc = nx.fadd(acc, vals[i])
    assert final == acc


SHARED = GID + """
    s2r r3, tid.x
    movi r4, 1
    atoms.add r5, [r0], r4
    movi r8, 4
    atoms.max r9, [r8], r3
    bar
    isetp.eq p0, r3, r0
@!p0 exit
    lds r5, [r0]
    lds r9, [r8]
    shli r9, r9, 16
    or r5, r5, r9
    s2r r7, ctaid.x
    shli r7, r7, 2
    ldparam r6, out
    add r6, r6, r7
    stg [r6], r5
"""


@pytest.mark.parametrize("warp", [4, 32])
def test_shared_atomics_per_block(warp):
    res = run(kernel(SHARED, shared=8), warp_size=warp, grid=(3, 1, 1), block=(96, 1, 1),
              params=[("out", np.zeros(3, np.uint32))])
    assert res.out["out"].tolist() == [96 | (95 << 16)] * 3


def test_float_minmax_hand_computed():
    one, m_one, pz, nz = 0x3F800000, 0xBF800000, 0, 0x80000000
    two, m_two, inf, ninf, nan = 0x40000000, 0xC0000000, 0x7F800000, 0xFF800000, 0x7FFFFFFF
    cases = [  # (m, b, fmax, fmin)
        (one, two, two, one), (m_one, m_two, m_one, m_two), (m_one, one, one, m_one),
        (pz, m_one, pz, m_one), (ninf, inf, inf, ninf), (one, nan, one, one),
        (nan, one, nan, one),  # positive NaN in memory sorts above +inf
        (pz, nz, pz, nz), (nz, pz, pz, nz),
        (m_one, nz, m_one, nz),  # b = -0.0 acts as the smallest int32: Triton's lowering
    ]
    for m, b, want_max, want_min in cases:
        assert int(nx.atomic_fminmax(m, b, want_max=True)) == want_max, (m, b)
        assert int(nx.atomic_fminmax(m, b, want_max=False)) == want_min, (m, b)


@pytest.mark.parametrize("op", ["and", "or", "xor", "fmax", "fmin"])
def test_new_atomics_full_contention(op):
    rng = np.random.default_rng(11)
    if op.startswith("f"):
        vals = rng.standard_normal(256).astype(np.float32).view(np.uint32)
        init = 0xC2C80000  # -100.0
    else:
        vals = rng.integers(0, 1 << 32, 256, dtype=np.uint64).astype(np.uint32)
        init = 0x0F0F0F0F if op != "and" else 0xFFFFFFFF
    final, old, _ = contended(f"atom.{op}", vals, init, 8)
    acc = init
    for i in range(256):  # warps in order, lanes in order: thread order
        assert int(old[i]) == acc
        acc = sequential([acc], op, [0], vals[i:i + 1], None)[0][0]
    assert int(final) == acc
