"""Barriers and per-block shared memory: a tree reduction, zeroed shared memory per block,
and the barrier faults."""

import numpy as np
import pytest
from sim_harness import GID, kernel, run
from simtgpu.isa import FaultCause
from simtgpu.sim import KernelFault

REDUCE = GID + """
    s2r r3, tid.x
    shli r4, r3, 2
    muli r5, r1, 3
    addi r5, r5, 1
    lds r10, [r4]
    add r5, r5, r10
    sts [r4], r5
    bar
    movi r6, 32
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
"""


@pytest.mark.parametrize("warp", [4, 8, 32])
def test_tree_reduction(warp):
    blocks = 5
    res = run(kernel(REDUCE, shared=256), warp_size=warp, grid=(blocks, 1, 1),
              block=(64, 1, 1), params=[("out", np.zeros(blocks, np.uint32))])
    vals = (np.arange(blocks * 64) * 3 + 1).reshape(blocks, 64)
    assert res.out["out"].tolist() == vals.sum(axis=1).tolist()
    assert res.stats.barriers == blocks * 7  # one before the loop, six in it


def test_reduction_with_blocks_in_separate_waves(monkeypatch):
    import simtgpu.sim.iss as iss_mod

    monkeypatch.setattr(iss_mod, "WAVE_THREADS", 64)
    res = run(kernel(REDUCE, shared=256), warp_size=8, grid=(3, 1, 1), block=(64, 1, 1),
              params=[("out", np.zeros(3, np.uint32))])
    vals = (np.arange(3 * 64) * 3 + 1).reshape(3, 64)
    assert res.out["out"].tolist() == vals.sum(axis=1).tolist()


def test_partial_last_warp_reaches_barrier():
    # 20 threads in warps of 8: the last warp has 4 live lanes and still completes the barrier
    body = GID + """
    s2r r3, tid.x
    shli r4, r3, 2
    sts [r4], r1
    bar
    xori r5, r3, 1
    shli r5, r5, 2
    movi r8, 80
    isetp.lt p0, r5, r8
    movi r9, 0
@p0 lds r9, [r5]
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r9
"""
    res = run(kernel(body, shared=80), warp_size=8, block=(20, 1, 1),
              params=[("out", np.zeros(20, np.uint32))])
    tid = np.arange(20)
    assert res.out["out"].tolist() == (tid ^ 1).tolist()


def test_divergent_barrier_faults():
    body = GID + """
    andi r3, r1, 1
    isetp.ne p0, r3, r0
    ssy J
@p0 bra ODD
    bar
    sync
ODD:
    sync
J:
"""
    with pytest.raises(KernelFault) as e:
        run(kernel(body), warp_size=8, block=(16, 1, 1), params=[("out", np.zeros(1, np.uint32))])
    rec = e.value.record
    assert rec.cause is FaultCause.DIVERGENT_BARRIER
    assert rec.warp == 0 and rec.lane_mask == 0x55
    assert rec.instruction.startswith("bar")


def test_barrier_guard_is_ignored():
    # bar acts on the whole warp (like ssy and sync): a guard false in some lanes does not
    # make it divergent, and the warp still arrives
    body = GID + """
    movi r3, 1
    isetp.eq p1, r1, r3
@p1 bar
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r1
"""
    res = run(kernel(body), warp_size=4, block=(8, 1, 1), params=[("out", np.zeros(8, np.uint32))])
    assert res.out["out"].tolist() == list(range(8))
    assert res.stats.barriers == 1


def test_lost_lanes_at_exit_underflow():
    # lanes taken by a bra without ssy leave through sync and are then on no stack entry;
    # when the others exit, the warp has live lanes and nothing to pop
    body = GID + """
    andi r3, r1, 1
    isetp.ne p0, r3, r0
@p0 bra ODD
    exit
ODD:
    sync
    exit
"""
    with pytest.raises(KernelFault) as e:
        run(kernel(body), warp_size=4, block=(4, 1, 1), params=[("out", np.zeros(1, np.uint32))])
    rec = e.value.record
    assert rec.cause is FaultCause.STACK_UNDERFLOW and rec.lane_mask == 0b0101
    assert rec.instruction == "exit"


def test_barrier_after_a_warp_exited_deadlocks():
    body = GID + """
    s2r r3, warpid
    isetp.eq p0, r3, r0
@p0 exit
    bar
"""
    with pytest.raises(KernelFault) as e:
        run(kernel(body), warp_size=8, grid=(2, 1, 1), block=(24, 1, 1),
            params=[("out", np.zeros(1, np.uint32))])
    rec = e.value.record
    assert rec.cause is FaultCause.BARRIER_DEADLOCK
    assert rec.block == (0, 0, 0) and rec.warp == 1 and rec.lane_mask == 0xFF
    assert rec.instruction == "bar"


def test_shared_memory_is_per_block_and_zeroed():
    body = GID + """
    s2r r3, tid.x
    shli r4, r3, 2
    lds r5, [r4]
    s2r r7, ctaid.x
    addi r7, r7, 1
    add r5, r5, r7
    sts [r4], r5
    bar
    lds r5, [r4]
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
"""
    res = run(kernel(body, shared=128), warp_size=8, grid=(4, 1, 1), block=(32, 1, 1),
              params=[("out", np.zeros(128, np.uint32))])
    assert res.out["out"].tolist() == np.repeat(np.arange(1, 5), 32).tolist()
