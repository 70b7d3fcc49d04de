"""Statistics on the RTL: IPC and stall shares from the hardware's counters, the sampled
timeline adds up to the launch and leaves its cycle count unchanged, the per-core counters
add up to the GPU-wide ones and put a one-block launch on the core that ran it, and
``simtgpu run --json --backend rtl`` reports the same figures as a direct launch."""

from __future__ import annotations

import json

import numpy as np
import pytest
from simtgpu.arch.command_queue import MAX_COUNTERS, CoreCounter, Mmio
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.statistics import STALLS, CounterTimeline, launch_statistics

N = 300


@pytest.fixture(scope="module")
def dev():
    with Device(backend="rtl", config="tiny") as d:
        yield d


def _launch(dev, timeline=None, n=N, block=8):
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, n).astype(np.float32)
    b = rng.uniform(0, 1, n).astype(np.float32)
    dc = dev.zeros(n, np.float32)
    if timeline is not None:
        dev.backend.timeline = timeline
    try:
        res = dev.launch(k, -(-n // block), block, (dev.to_device(a), dev.to_device(b), dc, n))
    finally:
        if timeline is not None:
            dev.backend.timeline = None
    assert np.array_equal(dc.to_host(), a + b)
    return res


def _sums_match(res) -> None:
    """Every per-core counter, summed over the cores, is the GPU-wide counter (a maximum: the
    largest of the cores')."""
    assert res.per_core is not None and len(res.per_core) > 0
    for c in CoreCounter:
        name = c.name.lower()
        total = max if c.total in MAX_COUNTERS else sum
        assert total(pc[name] for pc in res.per_core) == res.counters[name], name


def test_ipc_shares_and_timeline(dev):
    plain = _launch(dev)
    tl = CounterTimeline(interval=32)
    res = _launch(dev, tl)
    # sampling reads registers between stretches of cycles: the launch is the same
    assert (res.cycles, res.instructions, res.counters) == \
        (plain.cycles, plain.instructions, plain.counters)
    s = launch_statistics(res, dev.config, tl)
    stalls = {x: res.counters[f"stall_{x}"] for x in STALLS}
    assert s["stalls"] == stalls and s["cycles"] == res.cycles > 0
    assert s["ipc"] == round(res.instructions / res.cycles, 4)
    assert s["scheduler_slots"] == res.instructions + sum(stalls.values())
    # one core (tiny): every cycle the kernel runs is one slot, issue or one stall reason
    assert s["scheduler_slots"] <= res.cycles
    assert abs(sum(s["shares_percent"].values()) - 100) < 0.05
    samples = s["timeline"]["samples"]
    assert len(samples) > 5
    assert sum(x["instructions"] for x in samples) == res.instructions
    for name in STALLS:
        assert sum(x["stalls"][name] for x in samples) == stalls[name]
    assert samples[-1]["end_cycle"] == sum(x["cycles"] for x in samples)
    # one core: its window is the whole GPU
    _sums_match(res)
    assert s["per_core"][0]["shares_percent"] == s["shares_percent"]


def test_one_block_on_two_cores_runs_on_one():
    """``small`` has 2 cores; a one-block launch retires on one of them only. The dispatcher's
    choice rotates from core 0 on a fresh device, so the first launch runs on core 0 and the
    second on core 1. The core that ran it retired the ISS's dynamic instruction count; the
    other retired nothing and spent every slot idle."""
    n = 32  # one block of 32 threads: small's 4 warps x 8 lanes
    with Device(backend="iss", config="small") as iss:
        ref = _launch(iss, n=n, block=n)
    with Device(backend="rtl", config="small") as dev:
        runs = [_launch(dev, n=n, block=n) for _ in range(2)]
        for busy, res in enumerate(runs):
            _sums_match(res)
            idle = 1 - busy
            ran, other = res.per_core[busy], res.per_core[idle]
            assert ran["instructions"] == ref.instructions > 0
            assert ran["thread_instructions"] == ref.thread_instructions
            assert other["instructions"] == other["thread_instructions"] == 0
            assert other["mem_transactions"] == 0
            s = launch_statistics(res, dev.config)
            assert s["per_core"][idle]["shares_percent"]["idle"] == 100.0
            assert s["per_core"][busy]["ipc"] == round(ref.instructions / res.cycles, 4)
            # every core charges each running cycle to exactly one slot, idle or not
            slots = [c["scheduler_slots"] for c in s["per_core"]]
            assert slots[0] == slots[1] == other["stall_idle"] < res.cycles


def test_timeline_merges_when_long():
    tl = CounterTimeline(interval=1, max_samples=4)

    class Fake:  # counters that grow by one instruction per snapshot
        n = 0

        def mmio_read(self, reg):
            if reg == Mmio.CYCLES_LO:
                self.n += 1
                return self.n * 10
            return self.n if reg == Mmio.INSTRUCTIONS else 0

    fake = Fake()
    for _ in range(9):
        tl.snapshot(fake)
    assert len(tl.samples) <= 4 and tl.interval > 1
    assert tl.samples[0][0] == 10 and tl.samples[-1][0] == 90  # first and last kept
    assert sum(x["instructions"] for x in tl.intervals()) == 8


def test_cycle_count_read_across_a_wrap_of_the_low_word():
    """CYCLES is read as high, low, high: a low word that wraps between the reads is read
    again, so a snapshot is never 2**32 cycles off."""
    class Wrapping:  # the clock advances 8 cycles per register read, from just below 2**32
        t = (1 << 32) - 12

        def mmio_read(self, reg):
            self.t += 8
            if reg == Mmio.CYCLES_LO:
                return self.t & 0xFFFFFFFF
            return self.t >> 32 if reg == Mmio.CYCLES_HI else 0

    for start in range(-40, 8):
        dev = Wrapping()
        dev.t += start
        tl = CounterTimeline()
        tl.snapshot(dev)
        cycles = tl.samples[0][0]
        assert abs(cycles - dev.t) < 64, (start, cycles, dev.t)


def test_cli_json_on_rtl_matches_a_direct_launch(dev, capsys, tmp_path):
    plain = _launch(dev)
    png = tmp_path / "rtl.png"
    rc = main(["run", str(example_asm("vector_add")), "-k", "vector_add", "--grid",
               str(-(-N // 8)), "--block", "8", "--config", "tiny", "--backend", "rtl",
               "--seed", "1", "--arg", f"a=f32[{N}]:rand", f"b=f32[{N}]:rand", f"c=f32[{N}]",
               f"n=i32:{N}", "--json", "--plot", str(png)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    s = json.loads(cap.out)
    # vector add's schedule does not depend on the data: the same cycles as the direct run
    assert s["cycles"] == plain.cycles and s["warp_instructions"] == plain.instructions
    assert s["backend"] == "rtl" and s["timeline"]["samples"]
    assert [c["warp_instructions"] for c in s["per_core"]] == \
        [pc["instructions"] for pc in plain.per_core]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "the issue rate and the slot shares over time" in cap.err
