"""The shared L2 below the interconnect (docs/memory-system.md) on ``tiny``, with each core's
L1 on too (one model build): the ISA's memory semantics hold through both caches (own stores,
``fence``, atomics performed in the L2, host writes between launches), and the L2's counters
count what the kernels make countable. Values are checked against hand-computed ones and the
ISS; the directed kernels are the L1 bench's."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.driver_model.device import Device
from test_rtl_l1 import check_atomic_on_cached, check_exchange, check_own_stores, run_matmul
from test_rtl_l1 import test_host_and_kernel_writes_between_launches as host_writes_checked

# Every thread adds 1 to one counter and keeps the old value: performed one at a time in the
# L2, the old values are a permutation of 0 .. threads-1 and the counter ends at threads.
CONTENDED = """
.kernel contended
.param count, ptr
.param out, ptr
        s2r     r1, tid.x
        s2r     r2, ctaid.x
        s2r     r3, ntid.x
        mul     r2, r2, r3
        add     r1, r1, r2
        shli    r5, r1, 2
        ldparam r10, count
        movi    r9, 1
        atom.add r4, [r10], r9
        ldparam r12, out
        add     r12, r12, r5
        stg     [r12], r4
        exit
.end
"""


@pytest.fixture(scope="module")
def dev():
    with Device(backend="rtl", config="tiny", l1=True, l2=True) as d:
        cfg = d.backend.sim.cfg
        assert cfg.l1 is not None and cfg.l2 is not None
        yield d


def test_fence_write_then_read(dev):
    """Own stores read back before and after a ``fence`` (the L1 dropped, the L2 holding the
    written line)."""
    check_own_stores(dev, 8)


def test_atomic_on_cached_line(dev):
    check_atomic_on_cached(dev)


def test_exchange_through_fence(dev):
    check_exchange(dev)


def test_contended_atomics_in_l2(dev):
    k = dev.load_module(CONTENDED).kernel("contended")
    threads = 64
    count = dev.zeros(1, np.int32)
    out = dev.zeros(threads, np.int32)
    res = dev.launch(k, threads // 8, 8, (count, out))
    assert count.to_host()[0] == threads
    assert sorted(out.to_host().tolist()) == list(range(threads))
    c = res.counters
    line = 4 * dev.config.lanes
    # the counter's line is fetched once, then every atomic finds it in the L2; every line
    # read from DRAM is an L2 miss (an atomic never reaches DRAM)
    assert c["l2_misses"] >= 1 and c["ext_read_bytes"] == line * c["l2_misses"]
    assert c["ext_write_bytes"] >= line * threads  # each atomic's word written through


def test_host_writes_between_launches(dev):
    host_writes_checked(dev)


def test_matmul_hits_in_l2(dev):
    """The naive matmul is NumPy's; lines the L1 lost are found in the L2."""
    cnt = run_matmul(dev, 16, (4, 2)).counters
    assert cnt["l2_hits"] > 0 and cnt["l2_misses"] > 0
    assert cnt["ext_read_bytes"] == 4 * dev.config.lanes * cnt["l2_misses"]
