"""Run kernel launches on the RTL GPU (rtlsim/harness.py under Verilator, driven by cocotb).

::

    from simtgpu.verification.harness import rtl_config, run_rtl
    cfg = rtl_config("tiny")
    runs = run_rtl(cfg, [launch1, launch2], run_name="directed_tiny")

Every launch of one call runs in one simulator process (one build per configuration, cached
by :func:`simtgpu.verification.toolchain.build`), so starting the simulator is paid once.
:func:`check_launches` runs the same launches on the ISS and compares retire traces and final
memory (step-and-compare).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np
from simtgpu.isa import FaultCause
from simtgpu.rtl.configs import RtlConfig, get_rtl_config

from .compare import Mismatch, compare_memory, compare_traces, retire_to_trace
from .launch import PARAM_ADDR, IssRun, KernelLaunch, run_iss
from .toolchain import BUILD_ROOT, Build, build, run_cocotb, waves_format

__all__ = ["RtlRun", "build_harness", "check_launches", "compare_faulting", "rtl_config",
           "run_rtl", "run_uvm"]

SIM_MEMORY_BYTES = 1 << 20
"""Device memory of verification builds: 1 MiB keeps the Verilog and the model small."""


def rtl_config(name: str, **changes) -> RtlConfig:
    """A named configuration with the verification memory size (and any other changes)."""
    changes.setdefault("memory_bytes", SIM_MEMORY_BYTES)
    changes.setdefault("watchdog_cycles", 1 << 20)
    changes.setdefault("barrier_watchdog_cycles", 1 << 14)
    return get_rtl_config(name).with_(**changes)


def build_harness(cfg: RtlConfig, waves: str | None = None) -> Build:
    """The Verilator build of the simulation harness for ``cfg`` (cached); every memory
    setting of a configuration shares it (the bench programs the DRAM timing at reset).
    Its Verilog comes from the cache keyed by the hardware sources (generating `small`'s
    takes about 20 s, which every batch of a random regression used to pay again)."""
    from simtgpu.rtlsim.verilator_runner import harness_verilog

    text = harness_verilog(cfg.for_build(), "harness").read_text()
    return build(f"harness_{cfg.name}", text, "harness", waves=waves)


@dataclass
class RtlRun:
    """What the RTL did with one launch."""

    trace: list[dict]
    buffers: dict[str, np.ndarray]
    regs: dict[str, int]
    cycles: int
    timed_out: bool
    fence_ok: bool
    raw: list[tuple] = field(default_factory=list)  # retire samples incl. core and cycle

    @property
    def fault_cause(self) -> FaultCause | None:
        if not self.regs["STATUS"] & 2:
            return None
        return FaultCause(self.regs["FAULT_CAUSE"])


def run_rtl(cfg: RtlConfig, launches: list[KernelLaunch], run_name: str,
            max_cycles: int = 200_000, waves: bool | None = None) -> list[RtlRun]:
    """Run ``launches`` in order on the harness of ``cfg``; ``waves`` (default: as
    ``SIMTGPU_WAVES`` says) dumps the waveform to build/waves/<run_name>.<fmt>."""
    fmt = waves_format() if waves is None or waves else None
    if waves and fmt is None:
        fmt = "fst"
    bld = build_harness(cfg, fmt)
    queue_base = cfg.sim_memory_bytes - 0x1000
    jobs = []
    for i, ln in enumerate(launches):
        if ln.memory_end() > queue_base:
            raise ValueError(f"launch {ln.name} needs memory up to {ln.memory_end():#x}, past "
                             f"the ring at {queue_base:#x}")
        jobs.append({
            "index": i, "code": ln.code, "entry": ln.entry, "grid": ln.grid, "block": ln.block,
            "shared_bytes": ln.shared_bytes, "param_addr": PARAM_ADDR,
            "param_bytes": ln.param_bytes, "memory_end": ln.memory_end(),
            "buffers": {k: (a, w.astype("<u4").tobytes()) for k, (a, w) in ln.buffers.items()},
            "max_cycles": max_cycles,
        })
    job = {"lanes": cfg.lanes, "cores": cfg.cores, "line_words": cfg.line_words,
           "queue_base": queue_base, "launches": jobs,
           "memory_timing": cfg.timing_command() if cfg.gpu.memory is not None else None}
    results = _run_job(bld, "simtgpu.verification.cocotb_harness", job, "results.pkl",
                       run_name)
    runs = []
    for ln, res in zip(launches, results, strict=True):
        trace = [retire_to_trace(rec, cfg.lanes) for rec in res["retired"]]
        bufs = {k: np.frombuffer(v, dtype="<u4").copy() for k, v in res["buffers"].items()}
        runs.append(RtlRun(trace, bufs, res["regs"], res["cycles"], res["timed_out"],
                           res["fence"] == res["expected_fence"], res["retired"]))
        del ln
    return runs


def check_one(cfg: RtlConfig, launch: KernelLaunch, golden: IssRun, rtl: RtlRun
              ) -> Mismatch | None:
    """Compare one RTL run with the ISS: fault, retire trace (per warp), final memory."""
    head = f"{launch.name}"
    if launch.seed is not None:
        head += f" (seed {launch.seed})"
    if rtl.timed_out:
        return Mismatch(f"{head}: the RTL did not finish within the cycle limit "
                        f"({rtl.cycles} cycles)")
    want_fault = golden.fault.cause if golden.fault is not None else None
    got_fault = rtl.fault_cause
    if want_fault != got_fault:
        detail = ""
        if got_fault is not None:
            r = rtl.regs
            detail = (f" (rtl: warp {r['FAULT_WARP']} pc {r['FAULT_PC']:#x} lanes "
                      f"{r['FAULT_LANES']:#x} block {r['FAULT_BLOCK_X']})")
        exp = f"{want_fault.name} at pc {golden.fault.pc:#x}" if want_fault else "no fault"
        return Mismatch(f"{head}: expected {exp}, rtl "
                        f"{got_fault.name if got_fault else 'no fault'}{detail}")
    if got_fault is not None:
        r = rtl.regs
        f = golden.fault
        got = (r["FAULT_PC"], r["FAULT_WARP"], r["FAULT_LANES"],
               (r["FAULT_BLOCK_X"], r["FAULT_BLOCK_Y"], r["FAULT_BLOCK_Z"]))
        want = (f.pc, f.warp, f.lane_mask, tuple(f.block))
        if got != want:
            return Mismatch(f"{head}: fault {got_fault.name} record differs: "
                            f"(pc, warp, lanes, block) expected {want}, rtl {got}")
    if got_fault is None and not rtl.fence_ok:
        return Mismatch(f"{head}: the completion fence was not written")
    if got_fault is None:
        mm = compare_traces(launch, golden.trace, rtl.trace, cfg.lanes)
    else:
        mm = compare_faulting(launch, golden, rtl.trace, cfg.lanes)
    if mm is not None:
        return Mismatch(f"{head}: {mm}")
    if got_fault is None:
        mm = compare_memory(launch, golden.buffers, rtl.buffers)
        if mm is not None:
            return Mismatch(f"{head}: {mm}")
    return None


def compare_faulting(launch: KernelLaunch, golden: IssRun, got: list[dict], lanes: int
                     ) -> Mismatch | None:
    """The retire traces of a launch that faulted on both sides (``golden.fault``).

    Faults are precise: the faulting warp retires on the RTL exactly what it retired on the
    ISS, everything older than the fault and nothing younger. The ISS stops the whole grid
    at the fault; the other warps may have gone further or less far on the RTL (a scheduling
    choice), so for them only the instructions both retired are compared."""
    from simtgpu.sim.trace import per_warp

    from .compare import EXTRA_PC

    f = golden.fault
    want_lines, got_lines = common_part(golden.trace, got)
    keep = [i for i, (w, g) in enumerate(zip(want_lines, got_lines, strict=True))
            if w["pc"] != EXTRA_PC or (tuple(g["block"]), g["warp"]) == (tuple(f.block), f.warp)]
    mm = compare_traces(launch, [want_lines[i] for i in keep], [got_lines[i] for i in keep],
                        lanes)
    if mm is not None:
        return mm
    # nothing older is lost (the ISS lines the RTL did not retire are not compared above)
    key = (*f.block, f.warp)
    want_pcs, got_pcs = (sorted(t["pc"] for t in per_warp(tr).get(key, []))
                         for tr in (golden.trace, got))
    if want_pcs != got_pcs:
        missing = sorted(set(want_pcs) - set(got_pcs))
        return Mismatch(f"block ({f.block[0]},{f.block[1]},{f.block[2]}) warp {f.warp}, the "
                        f"faulting warp, retired {len(got_pcs)} instructions before its fault "
                        f"on the rtl, {len(want_pcs)} on the ISS"
                        + (f"; the first missing one is at pc {missing[0]:#x}" if missing
                           else ""))
    return None


def common_part(want: list[dict], got: list[dict]) -> tuple[list[dict], list[dict]]:
    """The ISS lines that the RTL also retired (matched per warp by PC in program order,
    see compare.match_program_order), and the RTL lines in that order."""
    from simtgpu.sim.trace import per_warp

    from .compare import EXTRA_PC, match_program_order

    ww, gw = per_warp(want), per_warp(got)
    out_w: list[dict] = []
    out_g: list[dict] = []
    for key in set(ww) | set(gw):
        wl, gl = ww.get(key, []), gw.get(key, [])
        pairs = []
        for g, i in zip(gl, match_program_order(wl, gl), strict=True):
            # an extra line (no ISS partner) goes after every matched one: reported
            pairs.append((len(wl) + len(pairs) if i is None else i, g))
        pairs.sort(key=lambda p: p[0])
        out_w += [wl[i] if i < len(wl) else {**g, "pc": EXTRA_PC} for i, g in pairs]
        out_g += [g for _, g in pairs]
    return out_w, out_g


def check_launches(cfg: RtlConfig, launches: list[KernelLaunch], run_name: str,
                   max_cycles: int = 200_000, goldens: list[IssRun] | None = None
                   ) -> tuple[list[str], list[RtlRun], list[IssRun]]:
    """Run ``launches`` on the RTL and the ISS and compare; returns (failure messages, RTL
    runs, ISS runs). ``goldens``: the launches' traced ISS runs where the caller has them
    already. A failure message ends with the command that reproduces it."""
    if goldens is None:
        goldens = [run_iss(ln, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth, cfg.cores)
                   for ln in launches]
    runs = run_rtl(cfg, launches, run_name, max_cycles=max_cycles)
    failures = []
    for ln, gold, rtl in zip(launches, goldens, runs, strict=True):
        mm = check_one(cfg, ln, gold, rtl)
        if mm is not None:
            failures.append(f"{mm}\n  reproduce: {reproduce_command(cfg, ln)}")
    return failures, runs, goldens


def run_uvm(config: str, seed: int, count: int, run_name: str,
            max_cycles: int = 200_000) -> dict:
    """Run the pyuvm environment (:mod:`simtgpu.verification.uvm_env`) with random programs
    ``seed .. seed+count-1`` on ``config``; returns its verdicts (seed, failure or None), the
    coverage report and the monitor's counts."""
    cfg = rtl_config(config)
    fmt = waves_format()
    bld = build_harness(cfg, fmt)
    job = {"config": config, "lanes": cfg.lanes, "warps": cfg.warps, "cores": cfg.cores,
           "line_words": cfg.line_words, "queue_base": cfg.sim_memory_bytes - 0x1000,
           "seed": seed, "count": count, "max_cycles": max_cycles}
    return _run_job(bld, "simtgpu.verification.uvm_env", job, "uvm_results.pkl", run_name)


def _run_job(bld: Build, test_module: str, job: dict, results_name: str, run_name: str):
    """Hand ``job`` to the cocotb module ``test_module`` (``$SIMTGPU_JOB`` names its pickle)
    on ``bld``, with a waveform when ``bld`` traces; return what it left in ``results_name``
    of the run directory."""
    run_dir = BUILD_ROOT / "cocotb" / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    job_file = run_dir / "job.pkl"
    with open(job_file, "wb") as fh:
        pickle.dump(job, fh)
    res_file = run_dir / results_name
    res_file.unlink(missing_ok=True)
    run_cocotb(bld, test_module, run_name=run_name, env={"SIMTGPU_JOB": str(job_file)},
               waves=bld.waves is not None)
    with open(res_file, "rb") as fh:
        return pickle.load(fh)


def reproduce_command(cfg: RtlConfig, launch: KernelLaunch) -> str:
    """A one-line shell command that reruns this launch alone (with a waveform)."""
    if launch.seed is not None:
        note = launch.note or ""
        flags = (" --generator indep" if note.startswith("indep") else "") + \
            (" --faults" if "fault_" in note else "") + (" --wild" if "wild" in note else "")
        # and the run's memory setting and caches where they are not the configuration's own
        memory, named = cfg.gpu.memory, rtl_config(cfg.name)
        if memory is not None and memory.name != "ideal":
            flags += f" --memory {memory.name}"
        for level in ("l1", "l2"):
            if getattr(cfg, level) != getattr(named, level):
                flags += f" --{level} {'on' if getattr(cfg, level) else 'off'}"
        return (f"SIMTGPU_WAVES=fst .venv/bin/python -m simtgpu.verification.regress "
                f"--config {cfg.name} --seed {launch.seed} --count 1{flags}")
    return f"SIMTGPU_WAVES=fst .venv/bin/pytest -q tests/rtl -k '{launch.name}'"
