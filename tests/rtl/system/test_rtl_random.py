"""Constrained-random programs on the RTL GPU, step-and-compare against the ISS.

``make test`` runs RANDOM_PER_CONFIG programs (default 100) on each of two configurations in
batches of 25 per simulator process; ``make regress N=... SEED=...`` runs the long version
(tests marked ``regress``). Every failure names its seed and the command that reruns it.
Coverage of the RTL retire traces is sampled on the way and written to
build/coverage_make_test.md.
"""

from __future__ import annotations

import pytest
from rtl_common import CONFIGS, RANDOM_PER_CONFIG, RANDOM_SEED
from simtgpu.verification.coverage import CoverageModel
from simtgpu.verification.regress import run_random
from simtgpu.verification.toolchain import BUILD_ROOT

BATCH = 25


@pytest.mark.parametrize("first", range(0, RANDOM_PER_CONFIG, BATCH))
@pytest.mark.parametrize("config", CONFIGS)
def test_random_programs(config, first):
    cov = CoverageModel(f"rand_{config}_{first}")
    count = min(BATCH, RANDOM_PER_CONFIG - first)
    res = run_random(config, RANDOM_SEED + first, count, batch=BATCH, coverage=cov,
                     run_name=f"random_{config}")
    BUILD_ROOT.mkdir(exist_ok=True)
    (BUILD_ROOT / f"coverage_{config}_{first}.md").write_text(cov.report())
    assert res.programs == count
    assert not res.failures, f"{len(res.failures)} of {count} programs differ:\n" + \
        "\n".join(res.failures[:5])


@pytest.mark.regress
@pytest.mark.parametrize("config", CONFIGS)
def test_regress(request, config):
    """The long random regression (``make regress N=... SEED=...``): N programs per config."""
    n = request.config.getoption("--regress-n")
    seed = request.config.getoption("--regress-seed")
    cov = CoverageModel(f"regress_{config}")
    res = run_random(config, seed, n, batch=50, coverage=cov, run_name=f"regress_{config}")
    (BUILD_ROOT / f"coverage_regress_{config}.md").write_text(cov.report())
    print(f"{config}: {res.programs} programs, {res.rtl_cycles} cycles, "
          f"{res.seconds:.0f} s")
    assert not res.failures, f"{len(res.failures)} of {n} programs differ:\n" + \
        "\n".join(res.failures[:10])


def test_random_programs_with_faults():
    """Step-and-compare of random programs with one thread's fault injected (out-of-range
    and misaligned accesses, an illegal word, a divergent ``bar``, a lane left out of its
    warp): the fault record (cause, pc, warp, lanes, block) is the ISS's, the faulting warp
    retires exactly what it retired on the ISS, the others agree where both retired.
    ``python -m simtgpu.verification.regress --faults`` (``make regress FAULTS=1``) runs the
    long version."""
    res = run_random("tiny", RANDOM_SEED + 9000, BATCH, batch=BATCH, faults=True,
                     run_name="random_tiny_faults")
    assert res.programs == BATCH
    assert not res.failures, f"{len(res.failures)} of {BATCH} programs differ:\n" + \
        "\n".join(res.failures[:5])


def test_random_programs_wild():
    """Step-and-compare of random programs whose control flow is edited outside the
    generator's rules (random_programs.WILD_EDITS), one warp each: stack underflows and
    overflows, pops of dead entries, ``bar`` in divergent code, exits anywhere. ``python -m
    simtgpu.verification.regress --wild`` (``make regress WILD=1``) runs the long version."""
    res = run_random("tiny", RANDOM_SEED + 9500, BATCH, batch=BATCH, wild=True,
                     run_name="random_tiny_wild")
    assert res.programs == BATCH
    assert not res.failures, f"{len(res.failures)} of {BATCH} programs differ:\n" + \
        "\n".join(res.failures[:5])


@pytest.mark.parametrize("config", CONFIGS)
def test_random_programs_l1(config):
    """Step-and-compare with each core's L1 on (its own model build): hits, misses, merges and
    evictions under every program's loads, stores and atomics must not change what it
    computes. ``python -m simtgpu.verification.regress --l1 on`` runs the long version."""
    res = run_random(config, RANDOM_SEED + 7000, BATCH, batch=BATCH, l1=True,
                     run_name=f"random_{config}_l1")
    assert res.programs == BATCH
    assert not res.failures, f"{len(res.failures)} of {BATCH} programs differ:\n" + \
        "\n".join(res.failures[:5])


@pytest.mark.parametrize("memory", ["realistic"])
def test_random_programs_slow_memory(memory):
    """Step-and-compare with the DRAM model at a DRAM-like setting on ``tiny`` (same model
    build; the timing is programmed at reset): long latency, the bandwidth cap and
    back-pressure at the in-flight limit must not change what any program computes."""
    res = run_random("tiny", RANDOM_SEED + 5000, BATCH, batch=BATCH, memory=memory,
                     run_name=f"random_tiny_{memory}")
    assert res.programs == BATCH
    assert not res.failures, f"{len(res.failures)} of {BATCH} programs differ:\n" + \
        "\n".join(res.failures[:5])


@pytest.mark.parametrize("l1", [
    pytest.param(False, id="l2", marks=pytest.mark.long),  # a model build of its own
    pytest.param(True, id="l1_l2")])
def test_random_programs_l2(l1):
    """Step-and-compare on ``tiny`` with the shared L2 on, alone and below each core's L1
    (atomics performed in the L2, bank conflicts, write-through), at the ``realistic`` DRAM
    setting so that misses overlap. ``python -m simtgpu.verification.regress --l2 on`` runs
    the long version."""
    res = run_random("tiny", RANDOM_SEED + 8000, BATCH, batch=BATCH, l1=l1, l2=True,
                     memory="realistic", run_name=f"random_tiny_{'l1_' if l1 else ''}l2")
    assert res.programs == BATCH
    assert not res.failures, f"{len(res.failures)} of {BATCH} programs differ:\n" + \
        "\n".join(res.failures[:5])
