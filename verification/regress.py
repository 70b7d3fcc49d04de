"""Random-program regression: generate, run on the RTL and the ISS, compare, sample coverage.

    python -m simtgpu.verification.regress --config tiny --seed 1 --count 200
    python -m simtgpu.verification.regress --config small --seed 7 --count 1   # one seed again
    python -m simtgpu.verification.regress --iss-only --count 400 --coverage docs/coverage.md

Program ``i`` of a run uses seed ``seed + i``; a failure prints its seed and the command that
reruns exactly that program (add ``SIMTGPU_WAVES=fst`` for a waveform under build/waves/).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field

from simtgpu.arch.config import MEMORY_SETTINGS

from .coverage import CoverageModel
from .launch import run_iss
from .random_programs import random_launch

__all__ = ["RegressResult", "main", "run_random"]


@dataclass
class RegressResult:
    programs: int = 0
    failures: list[str] = field(default_factory=list)
    rtl_cycles: int = 0
    warp_instructions: int = 0
    seconds: float = 0.0


def run_random(config: str, seed: int, count: int, batch: int = 25,
               coverage: CoverageModel | None = None, iss_only: bool = False,
               run_name: str | None = None, memory: str | None = None) -> RegressResult:
    """Programs ``seed .. seed+count-1`` for configuration ``config``, with the DRAM model at
    setting ``memory`` (default ``ideal``; docs/memory-system.md)."""
    from .harness import check_launches, rtl_config

    cfg = rtl_config(config)
    if memory is not None:
        cfg = cfg.with_(memory=cfg.gpu.with_memory(memory).memory)
    res = RegressResult()
    t0 = time.perf_counter()
    for first in range(seed, seed + count, batch):
        seeds = range(first, min(first + batch, seed + count))
        launches = [random_launch(s, cfg.lanes, cfg.warps) for s in seeds]
        if iss_only:
            for ln in launches:
                gold = run_iss(ln, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth, cfg.cores)
                if gold.fault is not None:
                    res.failures.append(f"seed {ln.seed}: the ISS faulted on a random program "
                                        f"({gold.fault}); the generator made an invalid one")
                if coverage is not None:
                    coverage.sample(ln, gold.trace, cfg.lanes)
                res.warp_instructions += len(gold.trace)
        else:
            name = run_name or f"random_{config}"
            failures, runs, goldens = check_launches(cfg, launches, f"{name}_{first}")
            res.failures += failures
            for ln, rtl, gold in zip(launches, runs, goldens, strict=True):
                res.rtl_cycles += rtl.cycles
                res.warp_instructions += len(gold.trace)
                if coverage is not None:  # the ISS trace is in program order per warp
                    coverage.sample(ln, gold.trace, cfg.lanes)
        res.programs += len(launches)
    res.seconds = time.perf_counter() - t0
    return res


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
    args = p.parse_args(argv)
    configs = args.config or ["tiny", "small"]
    cov = CoverageModel()
    bad = 0
    for config in configs:
        r = run_random(config, args.seed, args.count, args.batch, cov, args.iss_only,
                       memory=args.memory)
        rate = f", {r.rtl_cycles:,} RTL cycles" if r.rtl_cycles else ""
        print(f"{config}: {r.programs} programs, {r.warp_instructions} warp-instructions, "
              f"{len(r.failures)} failures, {r.seconds:.1f} s{rate}")
        for f in r.failures:
            print(f)
        bad += len(r.failures)
    print(cov.report("Functional coverage of the random regression"))
    if args.coverage:
        with open(args.coverage, "w") as fh:
            fh.write(cov.report("Functional coverage of the random regression") + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
