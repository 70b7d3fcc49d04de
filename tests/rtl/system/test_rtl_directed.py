"""Step-and-compare of the directed kernels on the RTL GPU (Verilator) against the ISS.

Per configuration, all directed launches run in one simulator process (a module fixture);
each launch is then its own test, which fails with the first mismatching instruction (warp,
PC, disassembly, lane, expected and actual) or memory word, and the command to rerun it.
"""

from __future__ import annotations

import pytest
from rtl_common import CONFIGS
from simtgpu.arch.config import l1_default, l2_default
from simtgpu.verification.directed import ALL_GROUPS, fault_launches
from simtgpu.verification.harness import check_launches, compare_faulting, rtl_config


def _launches(cfg, groups=tuple(ALL_GROUPS)):
    out = []
    for name in groups:
        # the residency kernels size their shared areas by the core's
        extra = (cfg.shared_bytes,) if name == "residency" else ()
        out += ALL_GROUPS[name](cfg.lanes, cfg.warps, *extra)
    return out


_cache: dict = {}


def _results(config: str):
    if config not in _cache:
        cfg = rtl_config(config)
        launches = _launches(cfg)
        failures, runs, goldens = check_launches(cfg, launches, f"directed_{config}")
        by_name = {ln.name: None for ln in launches}
        for f in failures:
            name = f.split(":")[0].split(" (seed")[0]
            by_name[name] = f
        _cache[config] = (by_name, runs, goldens, launches)
    return _cache[config]


def _ids(cfg_name: str) -> list[str]:
    cfg = rtl_config(cfg_name)
    return [ln.name for ln in _launches(cfg)]


@pytest.mark.parametrize("config,name", [(c, n) for c in CONFIGS for n in _ids(c)])
def test_directed(config, name):
    by_name, *_ = _results(config)
    assert by_name[name] is None, by_name[name]


@pytest.mark.parametrize("config", CONFIGS)
def test_directed_counters(config):
    """The retired-instruction counters agree with the ISS's count of warp-instructions and
    thread-instructions, and every launch took cycles."""
    by_name, runs, goldens, launches = _results(config)
    for ln, rtl, gold in zip(launches, runs, goldens, strict=True):
        if gold.fault is not None:
            continue
        assert rtl.regs["INSTRUCTIONS"] == len(gold.trace), ln.name
        threads = sum(bin(t["exec"]).count("1") for t in gold.trace)
        assert rtl.regs["THREAD_INSTRUCTIONS"] == threads, ln.name
        assert rtl.regs["CYCLES_LO"] > 0, ln.name


@pytest.mark.parametrize("config", CONFIGS)
def test_resident_blocks(config):
    """Blocks smaller than a core share it, as far as warps and shared memory allow: one-warp
    blocks keep more than one block per core resident on average; blocks whose shared
    memory fits k times in a core never have more than k resident (RESIDENT_BLOCKS, summed
    over the cycles). Every block is resident for at least the cycles it retires in."""
    by_name, runs, goldens, launches = _results(config)
    cfg = rtl_config(config)
    got = {ln.name: rtl for ln, rtl in zip(launches, runs, strict=True)}
    gold_fault = {ln.name: gold.fault for ln, gold in zip(launches, goldens, strict=True)}
    row = 4 * cfg.lanes
    for name in ("resident_one_warp", "resident_shared_bound", "resident_half"):
        ln = next(x for x in launches if x.name == name)
        assert gold_fault[name] is None, (name, gold_fault[name])  # the kernels run through
        r = got[name].regs
        cycles = r["CYCLES_LO"]
        wpb = -(-ln.block[0] // cfg.lanes)
        rows = -(-ln.shared_bytes // row)
        fit = min(cfg.warps // wpb, cfg.shared_bytes // row // rows, cfg.max_blocks)
        assert r["RESIDENT_BLOCKS"] <= cycles * cfg.cores * fit, (name, r, fit)
        assert r["RESIDENT_WARPS"] <= r["RESIDENT_BLOCKS"] * wpb, (name, r)
        assert r["RESIDENT_WARPS"] >= r["INSTRUCTIONS"], (name, r)  # an issue needs a warp
        if name == "resident_one_warp" and cfg.max_blocks > 1:
            assert r["RESIDENT_BLOCKS"] > cycles * cfg.cores, (name, r)
        if name == "resident_shared_bound":
            assert fit < cfg.warps, "the shared size must bind before the warp slots"


CACHED_CONFIG = "tiny"
CACHED_GROUPS = ("residency", "barriers", "atomics")
"""The groups that run again with both caches on, whatever ``L1_DEFAULT_ON`` and
``L2_DEFAULT_ON`` say: several resident blocks, barriers and atomics, where the caches' timing
and the L2's atomics meet the core's block and fault logic."""


def _cached_config():
    cfg = rtl_config(CACHED_CONFIG)
    return cfg.with_(l1=l1_default(cfg.gpu), l2=l2_default(cfg.gpu))


def _cached_launches() -> list:
    return _launches(_cached_config(), CACHED_GROUPS)


_cached_cache: dict = {}


@pytest.mark.parametrize("name", [ln.name for ln in _cached_launches()])
def test_directed_with_caches(name):
    """Step-and-compare against the ISS with each core's L1 and the L2 on, whatever the
    default switches say. resident_half (when it still met a divergent ``bar``) failed here:
    two resident blocks reached the faulting ``bar`` on consecutive cycles (the caches'
    timing lines them up), and the second block's ``bar`` retired, because only the recorded
    warp's instructions were dropped (tests/rtl/core test_second_warps_fault_is_precise_too
    keeps that case)."""
    if not _cached_cache:
        cfg = _cached_config()
        assert cfg.l1 is not None and cfg.l2 is not None
        launches = _cached_launches()
        failures, _, _ = check_launches(cfg, launches, f"directed_{CACHED_CONFIG}_caches")
        _cached_cache.update({ln.name: None for ln in launches})
        for f in failures:
            _cached_cache[f.split(":")[0]] = f
    assert _cached_cache[name] is None, _cached_cache[name]


_fault_cache: dict = {}


def _fault_results(config: str):
    if config not in _fault_cache:
        cfg = rtl_config(config)
        pairs = fault_launches(cfg.lanes, cfg.warps)
        _, runs, goldens = check_launches(cfg, [ln for ln, _ in pairs], f"faults_{config}")
        _fault_cache[config] = {ln.name: (ln, cause, rtl, gold) for (ln, cause), rtl, gold
                                in zip(pairs, runs, goldens, strict=True)}
    return rtl_config(config), _fault_cache[config]


@pytest.mark.parametrize("config,name", [(c, ln.name) for c in CONFIGS
                                         for ln, _ in fault_launches(4, 2)])
def test_fault(config, name):
    """Every fault cause stops the launch with the ISS's cause, the instructions both
    retired agree, and the fault record (pc, warp, lanes, block) is the ISS's."""
    cfg, results = _fault_results(config)
    ln, cause, rtl, gold = results[name]
    assert gold.fault is not None and gold.fault.cause == cause, \
        f"{name}: the ISS gives {gold.fault}, the kernel was written for {cause.name}"
    assert rtl.fault_cause == cause, f"{name}: rtl fault {rtl.fault_cause}, expected {cause}"
    # precise for the faulting warp, what both retired for the others (compare_faulting)
    mm = compare_faulting(ln, gold, rtl.trace, cfg.lanes)
    assert mm is None, f"{name}: {mm}"
    r, f = rtl.regs, gold.fault
    got = (r["FAULT_PC"], r["FAULT_WARP"], r["FAULT_LANES"],
           (r["FAULT_BLOCK_X"], r["FAULT_BLOCK_Y"], r["FAULT_BLOCK_Z"]))
    want = (f.pc, f.warp, f.lane_mask, tuple(f.block))
    assert got == want, f"{name}: (pc, warp, lanes, block) expected {want}, rtl {got}"
