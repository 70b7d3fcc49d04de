"""The L1 data cache in each core's memory path (docs/memory-system.md): the ISA's memory
semantics hold with it, and its counters count what a kernel's accesses make countable by
hand. Every value is checked against a hand-computed one and, where the program is race-free
in the ISA's sense, against the ISS."""

from __future__ import annotations

import json

import numpy as np
import pytest
from simtgpu.arch.command_queue import MAX_COUNTERS, CoreCounter
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main
from simtgpu.driver_model.device import Device


def _kernel(name: str, body: str) -> str:
    """A kernel of parameters (a, out) whose threads start with r4 = tid.x, r5 = 4 * tid.x and
    r10 = &a[tid.x]."""
    return (f".kernel {name}\n.param a, ptr\n.param out, ptr\n"
            "        s2r     r4, tid.x\n        shli    r5, r4, 2\n"
            "        ldparam r10, a\n        add     r10, r10, r5\n"
            f"{body}        exit\n.end\n")


# Each thread caches its word, stores word + 1 (write-through updates the cached copy), reads
# it back (a hit: its own store), fences (the L1 is invalidated) and reads it again (a miss:
# the store reached memory). out[2i], out[2i+1] = both reads.
OWN_STORES = _kernel("own_stores", """
        ldg     r1, [r10]
        addi    r2, r1, 1
        stg     [r10], r2
        ldg     r6, [r10]
        fence
        ldg     r7, [r10]
        ldparam r12, out
        shli    r13, r4, 3
        add     r12, r12, r13
        stg     [r12], r6
        stg     [r12+4], r7
""")

# A cached line, then an atomic on it (performed below the L1, which drops its copy), then a
# read: it sees the atomic's result. out[3i..3i+2] = the first read, the atomic's old value,
# the last read.
ATOMIC_ON_CACHED = _kernel("atomic_on_cached", """
        ldg     r1, [r10]
        movi    r9, 10
        atom.add r2, [r10], r9
        ldg     r3, [r10]
        ldparam r12, out
        muli    r13, r4, 12
        add     r12, r12, r13
        stg     [r12], r1
        stg     [r12+4], r2
        stg     [r12+8], r3
""")

# Two blocks of one thread on two cores. Block 0 stores 222 to data, fences (its store is in
# memory) and raises the flag. Block 1 caches data first, then polls the flag with a fence in
# the loop (the ISA's rule for polling: without it a cached flag would never change), fences
# and reads data: 222. out[0] = block 1's early read (racy: either value), out[1] = its read
# after the fence.
EXCHANGE = """
.kernel exchange
.param data, ptr
.param flag, ptr
.param out, ptr
        s2r     r1, ctaid.x
        ldparam r10, data
        ldparam r11, flag
        ldparam r12, out
        isetp.ne p0, r1, r0
   @p0  bra     reader
        movi    r2, 222
        stg     [r10], r2
        fence
        movi    r3, 1
        stg     [r11], r3
        exit
reader: ldg     r5, [r10]
poll:   ldg     r6, [r11]
        fence
        isetp.eq p1, r6, r0
   @p1  bra     poll
        ldg     r7, [r10]
        stg     [r12], r5
        stg     [r12+4], r7
        exit
.end
"""

# Every thread of one warp: a miss (its line of a), a hit (the same line, its address made to
# depend on the loaded zero so the fill has arrived), a miss on the next line, and the out
# parameter read after the first fill (a hit on the parameter line). Countable by hand.
COUNTED = _kernel("counted", """
        ldg     r1, [r10]
        add     r11, r10, r1
        ldg     r2, [r11]
        ldg     r3, [r11+32]
        ldparam r12, out
        add     r12, r12, r5
        add     r2, r2, r3
        stg     [r12], r2
""")


@pytest.fixture(scope="module")
def dev():
    with Device(backend="rtl", config="small", l1=True) as d:
        assert d.backend.sim.cfg.l1 is not None
        yield d


def _run(dev, src, name, grid, block, arrays, out_words):
    """Launch on the RTL device and on the ISS; the RTL's out and launch result."""
    def on(d):
        k = d.load_module(src).kernel(name)
        out = d.zeros(out_words, np.int32)
        r = d.launch(k, grid, block, (*[d.to_device(a) for a in arrays], out))
        return out.to_host(), r

    rtl, res = on(dev)
    with Device(backend="iss", config=dev.config.name) as iss:
        gold, _ = on(iss)
    return rtl, gold, res


def check_own_stores(dev, threads: int) -> None:
    """OWN_STORES: each thread reads back its store before and after a fence (on the RTL and
    the ISS)."""
    a = np.arange(100, 100 + threads, dtype=np.int32)
    rtl, iss, _ = _run(dev, OWN_STORES, "own_stores", 1, threads, [a], 2 * threads)
    want = np.repeat(a + 1, 2)
    assert np.array_equal(rtl, want) and np.array_equal(iss, want)


def check_atomic_on_cached(dev) -> None:
    """ATOMIC_ON_CACHED: a read after an atomic on a cached line sees the atomic's result."""
    a = np.arange(7, 15, dtype=np.int32)
    rtl, iss, _ = _run(dev, ATOMIC_ON_CACHED, "atomic_on_cached", 1, 8, [a], 24)
    want = np.stack([a, a, a + 10], axis=1).reshape(-1)
    assert np.array_equal(rtl, want) and np.array_equal(iss, want)


def check_exchange(dev):
    """EXCHANGE: block 1 reads block 0's data after the flag and a fence; the launch result."""
    data = np.array([111], dtype=np.int32)
    flag = np.zeros(1, dtype=np.int32)
    rtl, iss, res = _run(dev, EXCHANGE, "exchange", 2, 1, [data, flag], 2)
    assert rtl[1] == 222 and iss[1] == 222
    assert rtl[0] in (111, 222)
    return res


def test_own_stores_and_fence(dev):
    check_own_stores(dev, 16)


def test_atomic_on_cached_line(dev):
    check_atomic_on_cached(dev)


def test_two_cores_exchange_through_fence(dev):
    res = check_exchange(dev)
    # both cores ran a block (one block per core at a time, and block 1 waits for block 0)
    assert all(pc["instructions"] > 0 for pc in res.per_core)


def test_host_and_kernel_writes_between_launches(dev):
    """Launch-start invalidation: a launch sees what the host wrote and what an earlier
    launch's stores (from any core) put in memory, although its cores cached the old lines."""
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    n = 256
    tpb = min(16, dev.config.max_threads_per_block)
    a = dev.to_device(np.arange(n, dtype=np.float32))
    zero = dev.zeros(n, np.float32)
    c = dev.zeros(n, np.float32)
    dev.launch(k, n // tpb, tpb, (a, zero, c, n))  # both cores cache lines of a
    assert np.array_equal(c.to_host(), np.arange(n, dtype=np.float32))
    a.copy_from_host(np.full(n, 5, np.float32))  # the host writes memory directly
    dev.launch(k, n // tpb, tpb, (a, zero, c, n))
    assert np.array_equal(c.to_host(), np.full(n, 5, np.float32))
    ones = dev.to_device(np.ones(n, np.float32))
    dev.launch(k, n // tpb, tpb, (ones, ones, a, n))  # a kernel's stores overwrite a
    dev.launch(k, n // tpb, tpb, (a, zero, c, n))
    assert np.array_equal(c.to_host(), np.full(n, 2, np.float32))


def test_counters_by_hand(dev):
    a = np.zeros(16, dtype=np.int32)
    a[8:] = np.arange(1, 9)
    k = dev.load_module(COUNTED).kernel("counted")
    out = dev.zeros(8, np.int32)
    res = dev.launch(k, 1, 8, (dev.to_device(a), out))
    assert np.array_equal(out.to_host(), np.arange(1, 9))
    c = res.counters
    line = 4 * dev.config.lanes
    # loads: ldparam a, ldg (miss), ldg (hit), ldg (next line: miss), ldparam out (hit)
    assert (c["loads"], c["l1_hits"], c["l1_misses"], c["l1_merges"], c["l1_mshr_full"]) == \
        (5, 2, 3, 0, 0)
    assert c["dram_read_bytes"] == 3 * line and c["dram_write_bytes"] == line
    # three misses wait at least the memory latency, a hit at least a cycle
    latency = dev.config.mem_latency
    assert c["load_latency_max"] >= latency
    assert c["load_latency_sum"] >= 3 * latency + 2
    assert c["load_latency_max"] <= c["load_latency_sum"]
    assert c["mem_transactions"] == 5 + 1
    for name in CoreCounter:
        key = name.name.lower()
        values = [pc[key] for pc in res.per_core]
        if name.total in MAX_COUNTERS:
            assert max(values) == c[key], key
        else:
            assert sum(values) == c[key], key


def run_matmul(dev, m: int, block: tuple[int, int]):
    """The naive matmul (examples/asm/matmul.s) of two m x m integer-valued matrices, checked
    against NumPy; its launch result."""
    k = dev.load_module(example_asm("matmul")).kernel("matmul")
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (m, m)).astype(np.float32)
    b = rng.integers(-3, 4, (m, m)).astype(np.float32)
    c = dev.zeros((m, m), np.float32)
    res = dev.launch(k, (m // block[0], m // block[1]), block,
                     (dev.to_device(a), dev.to_device(b), c, m, m, m))
    assert np.array_equal(c.to_host(), a @ b)
    return res


def test_examples_match_numpy_with_l1(dev):
    """Naive matmul rereads rows and columns: the L1 serves most of them, and the result is
    NumPy's."""
    res = run_matmul(dev, 16, (8, 4))
    assert res.counters["l1_hits"] > res.counters["l1_misses"] > 0


def test_cli_stats_with_l1(dev, capsys):
    """``simtgpu run --backend rtl --l1 on --json``: the memory figures come from the same
    counters as a direct launch of the same kernel on the same build."""
    n = 256
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    bufs = [dev.to_device(np.ones(n, np.float32)) for _ in range(2)]
    direct = dev.launch(k, n // 32, 32, (*bufs, dev.zeros(n, np.float32), n))
    rc = main(["run", str(example_asm("vector_add")), "-k", "vector_add", "--grid",
               str(n // 32), "--block", "32", "--config", "small", "--backend", "rtl",
               "--l1", "on", "--arg", f"a=f32[{n}]:rand", f"b=f32[{n}]:rand", f"c=f32[{n}]",
               f"n=i32:{n}", "--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    mem = json.loads(cap.out)["memory"]
    c = direct.counters
    line = 4 * dev.config.lanes
    # every line of a and b is read by one warp once: a miss each (the parameter lines add
    # a few); every line request down is a miss (no atomics); c is n words of stores
    assert c["l1_misses"] >= 2 * n * 4 // line
    assert c["dram_read_bytes"] == line * c["l1_misses"]
    assert c["dram_write_bytes"] == 4 * n
    reads = c["l1_hits"] + c["l1_misses"] + c["l1_merges"]
    # the L2 is as the configuration's default says (L2_DEFAULT_ON): no rate without one
    l2_reads = c.get("l2_hits", 0) + c.get("l2_misses", 0) + c.get("l2_merges", 0)
    assert (dev.backend.sim.cfg.l2 is not None) == (l2_reads > 0)
    assert mem == {
        "l1_hit_rate_percent": round(100 * c["l1_hits"] / reads, 2),
        "l1_mshr_full_cycles": c["l1_mshr_full"],
        "l2_hit_rate_percent": round(100 * c["l2_hits"] / l2_reads, 2) if l2_reads else None,
        "l2_mshr_full_cycles": c.get("l2_mshr_full", 0),
        "ext_read_bytes": c["ext_read_bytes"], "ext_write_bytes": c["ext_write_bytes"],
        "dram_read_bytes": c["dram_read_bytes"], "dram_write_bytes": c["dram_write_bytes"],
        "loads": c["loads"], "load_latency_avg": round(c["load_latency_sum"] / c["loads"], 2),
        "load_latency_max": c["load_latency_max"]}
