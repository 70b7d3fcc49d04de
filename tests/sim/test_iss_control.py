"""Divergence and reconvergence: if/else, nesting, loops with per-thread trip counts,
early exits, exits inside divergent code, guards; checked against hand-computed values."""

import numpy as np
import pytest
import simtgpu.sim.iss as iss_mod
from sim_harness import GID, kernel, run

WARPS = [4, 8, 32]
STORE = """
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
"""
SENTINEL = 0xDEAD


def launch(body: str, warp: int, n: int = 96, block: int = 32, **kw):
    out = np.full(n, SENTINEL, np.uint32)
    return run(kernel(GID + body + STORE), warp_size=warp, grid=(n // block, 1, 1),
               block=(block, 1, 1), params=[("out", out)], **kw)


def odd_even(even: str, odd: str, join: str, setup: str = "") -> str:
    """Threads of odd global index run ``odd``, the others ``even`` (each path ends in
    ``sync`` or ``exit``), then ``join``; ``setup`` runs before the split."""
    return f"""
    andi r3, r1, 1
    isetp.ne p0, r3, r0
    {setup}
    ssy JOIN
@p0 bra ODD
    {even}
ODD:
    {odd}
JOIN:
    {join}
"""


@pytest.mark.parametrize("warp", WARPS)
def test_if_else(warp):
    res = launch(odd_even("addi r5, r1, 100\n    sync", "muli r5, r1, 3\n    sync",
                          "addi r5, r5, 1"), warp)
    gid = np.arange(96)
    assert res.out["out"].tolist() == np.where(gid & 1, gid * 3, gid + 100).__add__(1).tolist()
    assert res.stats.divergence_events == 96 // warp
    assert res.stats.max_stack_depth == 2


def nested(depth: int, level: int = 0, tag: list | None = None) -> str:
    tag = tag if tag is not None else [0]
    if level == depth:
        return ""
    tag[0] += 1
    t = tag[0]
    return f"""
    shri r3, r1, {level}
    andi r3, r3, 1
    isetp.ne p0, r3, r0
    ssy J{t}
@p0 bra T{t}
    addi r5, r5, {2 << (2 * level)}
{nested(depth, level + 1, tag)}
    sync
T{t}:
    addi r5, r5, {1 << (2 * level)}
{nested(depth, level + 1, tag)}
    sync
J{t}:
    addi r5, r5, 1000
"""


@pytest.mark.parametrize("warp", WARPS)
def test_nested_four_deep(warp):
    res = launch("movi r5, 0\n" + nested(4), warp, n=64)
    gid = np.arange(64)
    want = sum(np.where((gid >> d) & 1, 1 << (2 * d), 2 << (2 * d)) for d in range(4))
    assert res.out["out"].tolist() == (want + 4 * 1000).tolist()
    # every level pushes SYNC; a level whose bit varies inside a warp also pushes DIV
    assert res.stats.max_stack_depth == 4 + min(4, warp.bit_length() - 1)


def test_nested_overflows_a_shallow_stack():
    from simtgpu.isa import FaultCause
    from simtgpu.sim import KernelFault

    with pytest.raises(KernelFault) as e:
        launch("movi r5, 0\n" + nested(4), 32, n=64, stack_depth=7)
    assert e.value.record.cause is FaultCause.STACK_OVERFLOW


LOOP = """
    movi r7, 5
    rem_placeholder
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
    addi r5, r5, 1000
"""


def trips(gid: np.ndarray) -> np.ndarray:
    return (gid & 7) ^ ((gid >> 4) & 3)


@pytest.mark.parametrize("warp", WARPS)
def test_loop_per_thread_trip_counts(warp):
    trip = """
    andi r3, r1, 7
    shri r9, r1, 4
    andi r9, r9, 3
    xor r3, r3, r9
"""
    res = launch(LOOP.replace("rem_placeholder", trip), warp, n=96)
    gid = np.arange(96)
    t = trips(gid) + 1  # the body runs while i <= trip: trip + 1 times
    assert res.out["out"].tolist() == (t * (t + 1) // 2 + 1000).tolist()
    # the merge rule keeps the leavers of every iteration in one DIV entry
    assert res.stats.max_stack_depth == 2


@pytest.mark.parametrize("warp", WARPS)
def test_early_exit_of_some_lanes(warp):
    res = launch("""
    andi r9, r1, 5
    movi r8, 4
    isetp.eq p1, r9, r8
@p1 exit
    addi r5, r1, 7
""", warp)
    gid = np.arange(96)
    want = np.where(gid & 5 == 4, SENTINEL, gid + 7)
    assert res.out["out"].tolist() == want.tolist()


@pytest.mark.parametrize("warp", WARPS)
@pytest.mark.parametrize("odd_path, want", [
    # some lanes of the taken path exit, the others reach JOIN
    ("""
    andi r3, r1, 2
    isetp.ne p1, r3, r0
@p1 exit
    addi r5, r5, 20
    sync""", lambda gid: np.where(gid & 1, np.where(gid & 2, SENTINEL, 125), 115)),
    # every lane of the taken path exits: the warp pops to the other path, then to JOIN
    ("exit", lambda gid: np.where(gid & 1, SENTINEL, 115)),
], ids=["some_lanes", "whole_path"])
def test_exit_inside_divergent_code(warp, odd_path, want):
    res = launch(odd_even("addi r5, r5, 10\n    sync", odd_path, "addi r5, r5, 100",
                          setup="movi r5, 5"), warp)
    assert res.out["out"].tolist() == want(np.arange(96)).tolist()


@pytest.mark.parametrize("warp", WARPS)
def test_all_lanes_exit_inside_divergence(warp):
    res = launch(odd_even("exit", "exit", "movi r5, 1"), warp)
    assert (res.out["out"] == SENTINEL).all()


def test_uniform_branches_do_not_diverge():
    res = launch("""
    movi r5, 1
    ssy J
    bra SKIP
    movi r5, 2
SKIP:
@!pt bra J
    sync
J:
""", 8)
    assert (res.out["out"] == 1).all()
    assert res.stats.divergence_events == 0


@pytest.mark.parametrize("warp", WARPS)
def test_guarded_loads_and_stores_make_no_access(warp):
    # lanes at or past n would read address 0 (the null guard) and write past the buffer:
    # guarded off, they neither fault nor write
    res = launch("""
    movi r8, 50
    isetp.lt p2, r1, r8
    movi r9, 0
@p2 ldparam r9, out
    add r9, r9, r2
@p2 ldg r5, [r9]
@!p2 movi r5, 77
@p2 addi r5, r5, 1
@!p2 exit
""", warp)
    gid = np.arange(96)
    assert res.out["out"].tolist() == np.where(gid < 50, SENTINEL + 1, SENTINEL).tolist()
    assert res.stats.global_loads == 50


def test_thread_instruction_counts():
    res = launch("movi r5, 3\n@p6 movi r5, 4", 8, n=32, block=32)
    # GID is 6 instructions, then movi, guarded movi (no lane), 3 of STORE and exit
    assert res.stats.warp_instructions == 4 * 12
    assert res.stats.thread_instructions == 32 * 11
    assert res.stats.per_opcode["movi"] == 8


def test_waves_do_not_change_results(monkeypatch):
    body = LOOP.replace("rem_placeholder", "andi r3, r1, 7")
    big = launch(body, 8, n=256)
    monkeypatch.setattr(iss_mod, "WAVE_THREADS", 40)  # 1 block per wave, then a partial one
    small = launch(body, 8, n=256)
    assert np.array_equal(big.out["out"], small.out["out"])
    assert big.stats.warp_instructions == small.stats.warp_instructions
