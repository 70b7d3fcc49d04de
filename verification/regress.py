"""Random-program regression: generate, run on the RTL and the ISS, compare, sample coverage.

    python -m simtgpu.verification.regress --config tiny --seed 1 --count 200
    python -m simtgpu.verification.regress --config small --seed 7 --count 1   # one seed again
    python -m simtgpu.verification.regress --iss-only --count 400 --coverage docs/coverage.md

Program ``i`` of a run uses seed ``seed + i``; a failure prints its seed and the one-line
command that reruns exactly that program (with ``SIMTGPU_WAVES=fst``: a waveform under
build/waves/). While it runs, each finished batch prints one line on stderr: programs done,
mismatches so far, rate and time left; at the end a summary lists every failing seed with
its command. ``make regress`` runs this (the configurations in parallel with ``--jobs``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TextIO

from simtgpu.arch.config import MEMORY_SETTINGS
from simtgpu.isa import FaultCause

from .coverage import CoverageModel
from .indep_programs import indep_launch
from .launch import run_iss
from .random_programs import GenOptions, random_launch

__all__ = ["BatchProgress", "RegressResult", "iss_reproduce_command", "main", "run_random",
           "summary"]


WILD_BUDGET = 100_000
"""Warp-instructions an edited (``--wild``) program may take on the ISS; one that does not end
by then may never end (an edit can send a warp back over its own code) and is left out."""


@dataclass
class RegressResult:
    programs: int = 0
    failures: list[str] = field(default_factory=list)
    rtl_cycles: int = 0
    warp_instructions: int = 0
    seconds: float = 0.0
    endless: int = 0  # wild programs left out: they ran out of the ISS's budget


class BatchProgress:
    """One line per finished batch on ``stream`` (stderr): programs done of the total,
    mismatches so far, programs per second and the time left at that rate."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None):
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.monotonic()

    def __call__(self, done: int, mismatches: int) -> None:
        elapsed = max(time.monotonic() - self.t0, 1e-9)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else 0.0
        print(f"{self.label}: {done:,}/{self.total:,} programs, {mismatches} mismatch"
              f"{'' if mismatches == 1 else 'es'}, {rate:.1f} programs/s, "
              f"{_duration(elapsed)} so far, about {_duration(left)} left",
              file=self.stream, flush=True)


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def iss_reproduce_command(config: str, seed: int) -> str:
    """The one-line command that reruns the random program ``seed`` on the ISS alone."""
    return (f".venv/bin/python -m simtgpu.verification.regress --iss-only --config {config} "
            f"--seed {seed} --count 1")


def run_random(config: str, seed: int, count: int, batch: int = 25,
               coverage: CoverageModel | None = None, iss_only: bool = False,
               run_name: str | None = None, memory: str | None = None,
               progress: Callable[[int, int], None] | None = None,
               l1: bool | None = None, l2: bool | None = None,
               faults: bool = False, wild: bool = False,
               generator: str = "random") -> RegressResult:
    """Programs ``seed .. seed+count-1`` for configuration ``config``, with the DRAM model at
    setting ``memory`` (default ``ideal``; docs/memory-system.md) and each core's L1 on
    (``l1`` True: the configuration's default cache), off (False) or as configured (None),
    and the shared L2 likewise (``l2``); with ``faults``, each program has one thread's
    faulting instruction injected (random_programs.FAULT_KINDS) and the fault record is
    compared too; with ``wild``, each program has control-flow edits outside the generator's
    rules (random_programs.WILD_EDITS) and runs as one block of one warp, and a program that
    does not end within WILD_BUDGET warp-instructions on the ISS is left out (counted in
    ``endless``); ``generator`` "indep" draws the programs from the independent generator
    (indep_programs.py; ``faults`` its faulting programs, no ``wild``) instead;
    ``progress(programs done, failures so far)`` is called after each batch."""
    from .harness import check_launches, rtl_config

    cfg = rtl_config(config)
    if memory is not None:
        cfg = cfg.with_(memory=cfg.gpu.with_memory(memory).memory)
    cfg = cfg.with_caches(l1, l2)
    res = RegressResult()
    t0 = time.perf_counter()
    for first in range(seed, seed + count, batch):
        seeds = range(first, min(first + batch, seed + count))
        opts = GenOptions(fault=faults, wild=wild)
        if wild:
            opts.max_blocks = 1  # with one warp: no scheduling choice among its faults
        if generator == "indep":
            launches = [indep_launch(s, cfg.lanes, cfg.warps, cfg.cores, faults,
                                     cfg.shared_bytes) for s in seeds]
        else:
            launches = [random_launch(s, cfg.lanes, 1 if wild else cfg.warps, opts)
                        for s in seeds]
        goldens = None  # the wild programs' ISS runs, kept for the comparison
        if wild:
            ends = [run_iss(ln, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth, cfg.cores,
                            instruction_budget=WILD_BUDGET) for ln in launches]
            kept = [(ln, g) for ln, g in zip(launches, ends, strict=True)
                    if g.fault is None or g.fault.cause is not FaultCause.WATCHDOG]
            res.endless += len(launches) - len(kept)
            res.programs += len(launches) - len(kept)
            launches, goldens = [ln for ln, _ in kept], [g for _, g in kept]
        if iss_only:
            if goldens is None:
                goldens = [run_iss(ln, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth,
                                   cfg.cores) for ln in launches]
            for ln, gold in zip(launches, goldens, strict=True):
                if gold.fault is not None and not (faults or wild):
                    res.failures.append(f"seed {ln.seed}: the ISS faulted on a random program "
                                        f"({gold.fault}); the generator made an invalid one"
                                        f"\n  reproduce: "
                                        f"{iss_reproduce_command(config, ln.seed)}")
                if coverage is not None:
                    coverage.sample(ln, gold.trace, cfg.lanes)
                res.warp_instructions += len(gold.trace)
        elif launches:
            name = run_name or f"random_{config}"
            failures, runs, goldens = check_launches(cfg, launches, f"{name}_{first}",
                                                     goldens=goldens)
            res.failures += failures
            for ln, rtl, gold in zip(launches, runs, goldens, strict=True):
                res.rtl_cycles += rtl.cycles
                res.warp_instructions += len(gold.trace)
                if coverage is not None:  # the ISS trace is in program order per warp
                    coverage.sample(ln, gold.trace, cfg.lanes)
        res.programs += len(launches)
        if progress is not None:
            progress(res.programs, len(res.failures))
    res.seconds = time.perf_counter() - t0
    return res


def _run_config(config: str, seed: int, count: int, batch: int, iss_only: bool,
                coverage: CoverageModel | None = None,
                memory: str | None = None,
                l1: bool | None = None, l2: bool | None = None, faults: bool = False,
                wild: bool = False, generator: str = "random") -> tuple[RegressResult, str]:
    """One configuration's share of a regression (in a worker process when parallel): its
    result and its coverage report."""
    cov = coverage if coverage is not None else CoverageModel(f"regress_{config}")
    label = f"regress {config}{' (ISS only)' if iss_only else ''}"
    res = run_random(config, seed, count, batch, cov, iss_only,
                     run_name=f"regress_{config}", memory=memory,
                     progress=BatchProgress(label, count), l1=l1, l2=l2, faults=faults,
                     wild=wild, generator=generator)
    return res, cov.report(f"Functional coverage of the random regression ({config})")


def summary(results: dict[str, RegressResult], seed: int) -> str:
    """The end-of-run report: per configuration and in total, then every failure with the
    command that reruns it."""
    lines = ["", f"== regression summary (seed {seed}) =="]
    for config, r in results.items():
        rate = f", {r.rtl_cycles:,} RTL cycles" if r.rtl_cycles else ""
        if r.endless:
            rate += f" ({r.endless} edited programs left out: no end within the ISS's budget)"
        lines.append(f"{config}: {r.programs:,} programs, {r.warp_instructions:,} "
                     f"warp-instructions, {len(r.failures)} failures, {r.seconds:.1f} s{rate}")
    total = sum(r.programs for r in results.values())
    bad = sum(len(r.failures) for r in results.values())
    lines.append(f"total: {total:,} programs, {bad} failures")
    for config, r in results.items():
        for f in r.failures:
            lines.append(f"FAIL [{config}] {f}")
    lines.append("PASS" if not bad else f"FAILED: {bad} program(s); each 'reproduce:' line "
                 "above reruns one alone")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.regress",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--config", action="append", default=None,
                   help="tiny, small or full (repeatable; default tiny and small)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=100, help="programs per configuration")
    p.add_argument("--batch", type=int, default=25, help="programs per simulator run")
    p.add_argument("--iss-only", action="store_true",
                   help="run only the ISS (generator validity and coverage)")
    p.add_argument("--coverage", metavar="FILE.md", help="write the coverage report here")
    p.add_argument("--memory", choices=MEMORY_SETTINGS, default=None,
                   help="DRAM-model setting of the RTL runs (default ideal; "
                   "docs/memory-system.md)")
    p.add_argument("--l1", choices=("on", "off"), default=None,
                   help="each core's L1 data cache in the RTL runs (default: as the "
                   "configuration says; docs/memory-system.md)")
    p.add_argument("--l2", choices=("on", "off"), default=None,
                   help="the shared L2 in the RTL runs (default: as the configuration says; "
                   "docs/memory-system.md)")
    p.add_argument("--faults", action="store_true",
                   help="inject one thread's faulting instruction into each program and "
                   "compare the fault records too (docs/verification.md)")
    p.add_argument("--wild", action="store_true",
                   help="edit each program's control flow outside the generator's rules and "
                   "run it as one block of one warp (docs/verification.md)")
    p.add_argument("--generator", choices=("random", "indep"), default="random",
                   help="random: random_programs.py (default); indep: the independent "
                   "generator, indep_programs.py (docs/verification.md)")
    p.add_argument("--jobs", "-j", default="1",
                   help="configurations run in parallel processes (a number or 'auto'; "
                   "default 1, which also merges their coverage into one report)")
    args = p.parse_args(argv)
    configs = args.config or ["tiny", "small"]
    if args.count < 1:
        p.error("--count must be at least 1")
    if args.generator == "indep" and args.wild:
        p.error("--wild edits random_programs.py's programs; the indep generator has none")
    try:
        jobs = (os.cpu_count() or 1) if args.jobs == "auto" else int(args.jobs)
    except ValueError:
        p.error(f"--jobs takes a number or 'auto', not {args.jobs!r}")
    jobs = max(1, min(jobs, len(configs)))
    l1 = None if args.l1 is None else args.l1 == "on"
    l2 = None if args.l2 is None else args.l2 == "on"
    print(f"regress: {args.count:,} random programs per configuration ({', '.join(configs)}), "
          f"seeds {args.seed}..{args.seed + args.count - 1}"
          f"{', ISS only' if args.iss_only else ', RTL against the ISS'}; progress per batch "
          f"of {args.batch} on stderr", flush=True)
    results: dict[str, RegressResult] = {}
    reports: list[str] = []
    if jobs == 1:
        cov = CoverageModel()
        for config in configs:
            results[config], _ = _run_config(config, args.seed, args.count, args.batch,
                                             args.iss_only, cov, args.memory, l1, l2,
                                             args.faults, args.wild, args.generator)
        reports.append(cov.report("Functional coverage of the random regression"))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            futures = {c: pool.submit(_run_config, c, args.seed, args.count, args.batch,
                                      args.iss_only, None, args.memory, l1, l2,
                                      args.faults, args.wild, args.generator)
                       for c in configs}
            for config, fut in futures.items():
                results[config], report = fut.result()
                reports.append(report)
    print("\n\n".join(reports))
    if args.coverage:
        with open(args.coverage, "w") as fh:
            fh.write("\n\n".join(reports) + "\n")
    print(summary(results, args.seed))
    return 1 if any(r.failures for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
