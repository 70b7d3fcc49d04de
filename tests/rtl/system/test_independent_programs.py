"""Random programs from an independent generator (verification/indep_programs.py), RTL
against the ISS.

The project's own random programs (test_rtl_random.py) come from
verification/random_programs.py; these come from a second generator written from the ISA
table and the docs alone, which draws every instruction with edge operands, keeps nine
randomly chosen registers for its pointers, hits words shared by a warp's lanes and by the
whole grid with atomics, and places barriers and ``mma`` inside uniform loops. Each program
is compared as the random regression compares its own: the retire trace per warp (every
destination value of every lane), the fault record, and every word of every buffer, which
the programs' epilogue fills with all 32 registers and the predicates of each thread.

``make test`` runs SAMPLE programs on ``tiny`` (well under a minute with the model built);
``SIMTGPU_LONG=1`` adds LONG_COUNT programs on every configuration of the suites, valid
and faulting, with the DRAM model at ``realistic`` timing too.
"""

from __future__ import annotations

import copy

import pytest
from rtl_common import CONFIGS, RANDOM_SEED
from simtgpu.verification.harness import check_launches, check_one, rtl_config
from simtgpu.verification.indep_programs import indep_launch
from simtgpu.verification.launch import run_iss

SAMPLE = 30
LONG_COUNT = 500
SEED = 70_000 + RANDOM_SEED
"""Seeds of this suite: away from test_rtl_random's, which count from SIMTGPU_SEED."""


def _check(config: str, seeds, fault: bool = False, memory: str | None = None):
    cfg = rtl_config(config)
    if memory is not None:
        cfg = cfg.with_(memory=cfg.gpu.with_memory(memory).memory)
    launches = [indep_launch(s, cfg.lanes, cfg.warps, cfg.cores, fault, cfg.shared_bytes)
                for s in seeds]
    goldens = [run_iss(ln, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth, cfg.cores)
               for ln in launches]
    name = f"indep_{config}{'_fault' if fault else ''}{'_' + memory if memory else ''}"
    failures, runs, goldens = check_launches(cfg, launches, name, goldens=goldens)
    return cfg, launches, failures, runs, goldens


def _fail_message(failures, count) -> str:
    return f"{len(failures)} of {count} independent programs differ:\n" + "\n".join(
        f.split("\n  reproduce:")[0] for f in failures[:5])


def test_independent_programs_tiny():
    """SAMPLE valid programs on ``tiny``; then the comparison itself is shown to catch a
    changed register value, a changed memory word and a missing retired instruction."""
    seeds = range(SEED, SEED + SAMPLE)
    cfg, launches, failures, runs, goldens = _check("tiny", seeds)
    assert not failures, _fail_message(failures, SAMPLE)
    assert all(g.fault is None for g in goldens), "the generator made a faulting program"
    # every program did real work: thousands of warp-instructions in all
    assert sum(len(g.trace) for g in goldens) > 50 * SAMPLE

    ln, gold, rtl = launches[0], goldens[0], runs[0]
    assert check_one(cfg, ln, gold, rtl) is None
    # one lane's register value changed in the RTL's trace
    bad = copy.deepcopy(rtl)
    line = next(t for t in bad.trace if t.get("values"))
    line["values"][0] ^= 1
    assert "values differs" in check_one(cfg, ln, gold, bad)
    # one word of a thread's epilogue (its registers) changed in the RTL's memory
    bad = copy.deepcopy(rtl)
    bad.buffers["thr"][-2] ^= 0x8000_0000
    assert "buffer 'thr'" in check_one(cfg, ln, gold, bad)
    # an instruction missing from the RTL's retire trace
    bad = copy.deepcopy(rtl)
    del bad.trace[len(bad.trace) // 2]
    assert check_one(cfg, ln, gold, bad) is not None


def test_independent_fault_programs_tiny():
    """SAMPLE programs with one warp's faulting construct each (indep_programs.FAULT_KINDS):
    the fault record and the faulting warp's retired instructions are the ISS's. This is
    where the generator found its RTL bugs (an SFU or ``mma`` instruction right behind a
    faulting access retired, and one a few instructions behind it could leave the core
    unable to drain, hanging every later launch; fixed in ad36168 and the change after it):
    a launch that does not drain fails here as "did not finish within the cycle limit"."""
    seeds = range(SEED + 5000, SEED + 5000 + SAMPLE)
    _, launches, failures, _, goldens = _check("tiny", seeds, fault=True)
    assert not failures, _fail_message(failures, len(launches))
    assert sum(g.fault is not None for g in goldens) > SAMPLE // 2


@pytest.mark.long
@pytest.mark.parametrize("memory", [None, "realistic"])
@pytest.mark.parametrize("fault", [False, True], ids=["valid", "fault"])
@pytest.mark.parametrize("config", CONFIGS)
def test_independent_programs_long(config, fault, memory):
    """LONG_COUNT programs per configuration, memory setting and kind (SIMTGPU_LONG=1)."""
    base = SEED + 100_000 + 10_000 * fault
    _, launches, failures, _, _ = _check(config, range(base, base + LONG_COUNT), fault,
                                         memory)
    assert not failures, _fail_message(failures, len(launches))
