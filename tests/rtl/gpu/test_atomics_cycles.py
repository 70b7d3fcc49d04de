"""The atomics bench kernel on the RTL: every kind matches the ISS (checked inside
``bench_atomics``), and a shared FP atomic waits for the adder's four segments and no more."""

from __future__ import annotations

from simtgpu.rtl.fpu import ATOMIC_LATENCY
from simtgpu.verification.bench_rtl import ATOMIC_KINDS, bench_atomics


def test_atomics_bench_matches_the_iss_and_fadd_waits_for_its_adder() -> None:
    iters = 2
    rows = {r["atomic"]: r for r in bench_atomics("tiny", iters=iters)}
    assert list(rows) == list(ATOMIC_KINDS)
    threads = rows["atoms.add"]["threads"]
    assert threads == 8  # tiny: 2 warps x 4 lanes, one block
    assert all(r["atomics"] == threads * iters for r in rows.values())
    # the LSU performs a shared atomic one lane at a time; atoms.fadd stays in its compute
    # phase until the adder's sum is out: ATOMIC_LATENCY cycles instead of 1 (the integer
    # ops'), so every lane takes ATOMIC_LATENCY - 1 cycles more
    extra = rows["atoms.fadd"]["cycles"] - rows["atoms.add"]["cycles"]
    assert extra == (ATOMIC_LATENCY - 1) * threads * iters
