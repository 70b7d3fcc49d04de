"""Integer, multiply, compare, select, predicate-logic and constant instructions against
Python integer arithmetic, lane by lane, at several warp sizes."""

import numpy as np
import pytest
from int_ref import CMP_REF, IMM_REF, INT_REF, MASK32
from sim_harness import elementwise, run

WARPS = [4, 8, 32]
EDGE = [0, 1, 2, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678,
        0xFFFF0000, 0x0000FFFF, 255, 64, 0x80000001]


def operands(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    k = len(EDGE)
    for i, x in enumerate(EDGE):
        a[i * k:(i + 1) * k] = x
        b[i * k:(i + 1) * k] = EDGE
    return a, b


N = 512


def _run_rr(body: str, warp: int, seed: int = 1):
    a, b = operands(N, seed)
    res = run(elementwise(body, {"a": 3, "b": 4}), warp_size=warp, grid=(N // 64, 1, 1),
              block=(64, 1, 1), params=[("a", a), ("b", b), ("out", np.zeros(N, np.uint32))])
    return a, b, res.out["out"]


@pytest.mark.parametrize("warp", WARPS)
@pytest.mark.parametrize("op", sorted(INT_REF))
def test_register_register(op, warp):
    a, b, out = _run_rr(f"{op} r5, r3, r4", warp)
    want = [INT_REF[op](int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert out.tolist() == want


@pytest.mark.parametrize("imm", [0, 1, -1, 5, 31, 33, -1024, 1023])
@pytest.mark.parametrize("op", sorted(IMM_REF))
def test_register_immediate(op, imm):
    a, _, out = _run_rr(f"{op} r5, r3, {imm}", 8)
    assert out.tolist() == [IMM_REF[op](int(x), imm) for x in a]


@pytest.mark.parametrize("warp", [4, 32])
@pytest.mark.parametrize("cond", sorted(CMP_REF))
def test_compare_and_select(cond, warp):
    body = f"isetp.{cond} p3, r3, r4\n    movi r7, 7\n    sel r5, r7, r4, p3"
    a, b, out = _run_rr(body, warp, seed=2)
    want = [7 if CMP_REF[cond](int(x), int(y)) else int(y) for x, y in zip(a, b, strict=True)]
    assert out.tolist() == want
    # the same compare, negated predicate source of sel
    body = f"isetp.{cond} p3, r3, r4\n    movi r7, 7\n    sel r5, r7, r4, !p3"
    a, b, out = _run_rr(body, warp, seed=2)
    want = [int(y) if CMP_REF[cond](int(x), int(y)) else 7 for x, y in zip(a, b, strict=True)]
    assert out.tolist() == want


@pytest.mark.parametrize("op, fn", [("pand", lambda x, y: x & y), ("por", lambda x, y: x | y),
                                    ("pxor", lambda x, y: x ^ y)])
def test_predicate_logic(op, fn):
    # p1 = bit 0 of a, p2 = bit 0 of b; every combination of negated sources
    for n1 in ("", "!"):
        for n2 in ("", "!"):
            body = f"""andi r3, r3, 1
    andi r4, r4, 1
    isetp.ne p1, r3, r0
    isetp.ne p2, r4, r0
    {op} p5, {n1}p1, {n2}p2
    movi r7, 1
    sel r5, r7, r0, p5"""
            a, b, out = _run_rr(body, 8, seed=3)
            x = (a & 1).astype(bool) ^ (n1 == "!")
            y = (b & 1).astype(bool) ^ (n2 == "!")
            assert out.tolist() == fn(x, y).astype(int).tolist()


def test_pt_sources_and_writes_to_pt_and_r0():
    body = """pand p1, pt, pt
    pxor p2, pt, pt
    pand pt, !pt, !pt
    movi r7, 1
    sel r5, r7, r0, p1
    sel r8, r7, r0, p2
    shli r8, r8, 1
    or r5, r5, r8
    sel r8, r7, r0, pt
    shli r8, r8, 2
    or r5, r5, r8
    movi r0, 99
    add r5, r5, r0"""
    _, _, out = _run_rr(body, 4)
    assert (out == 0b101).all()


@pytest.mark.parametrize("warp", WARPS)
def test_constants(warp):
    body = """movi r5, -2
    movi r8, 0x7fff
    add r5, r5, r8
    lui r8, 0xabcd
    lli r8, 0x1234
    xor r5, r5, r8
    lui r9, 0xffff
    add r5, r5, r9
    li r10, 0xdeadbeef
    xor r5, r5, r10"""
    _, _, out = _run_rr(body, warp)
    want = ((((-2 + 0x7FFF) & MASK32) ^ 0xABCD1234) + 0xFFFF0000) & MASK32 ^ 0xDEADBEEF
    assert (out == want).all()


def test_lli_keeps_upper_half_per_lane():
    _, _, out = _run_rr("mov r5, r3\n    lli r5, 0x00ff", 8)
    a, _ = operands(N, 1)
    assert out.tolist() == [(int(x) & 0xFFFF0000) | 0xFF for x in a]
