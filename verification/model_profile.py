"""Where the Verilator model's work per simulated cycle goes, by module of the design.

``python -m simtgpu.verification.model_profile`` builds a debug-info copy of the harness model
(the same Verilog and Verilator and g++ options as the driver's plain build, plus ``-g``), runs
a kernel of the RTL throughput bench on it under valgrind (callgrind, the model's clock loop
only, costs per source line), and charges each line of the generated C++ to the design
instance its signals name (``harness__DOT__gpu__DOT__core0__DOT__lsu`` -> ``gpu/coreN/lsu``,
the copies of a unit added together; a line naming no signal goes to the last named one
above it in its function). Lines of Verilator's own headers show as ``lib:<file>``.

This is how docs/memory-system.md ("Simulation cost") found what to move off the clock: the
optimised model has no per-module profile of its own (``--prof-cfuncs`` makes a function per
statement, which inflates what it measures). Needs valgrind; the kernel runs about 50 times
slower under it, hence the small default sizes.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["line_costs", "module_costs", "profile"]

_POS = re.compile(r"^([+-]?\d+|\*)\s+(\d+)")
_NAME = re.compile(r"harness__DOT__(\w+)")


def line_costs(text: str) -> collections.Counter[tuple[str, int]]:
    """Self cost (instructions) per (source file, line) of a callgrind output written with
    ``--dump-line=yes`` and one event; the inclusive costs of calls are left out."""
    names: dict[str, str] = {}

    def name(ref: str) -> str:  # "(3) /path" defines id 3, "(3)" uses it
        m = re.match(r"\((\d+)\)(?: (.*))?", ref)
        if not m:
            return ref
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    costs: collections.Counter[tuple[str, int]] = collections.Counter()
    fl = cur = "?"
    last = 0
    after_call = False
    for line in text.splitlines():
        if line.startswith("fl="):
            fl = cur = name(line[3:])
        elif line.startswith(("fi=", "fe=")):
            cur = name(line[3:])
        elif line.startswith("fn="):
            cur = fl
        elif line.startswith(("cfi=", "cfl=")):
            name(line[4:])
        elif line.startswith("calls="):
            after_call = True
        elif m := _POS.match(line):
            pos = m.group(1)
            last = last if pos == "*" else last + int(pos) if pos[0] in "+-" else int(pos)
            if after_call:  # the cost line of a call: inclusive, not this line's own
                after_call = False
            else:
                costs[(cur, last)] += int(m.group(2))
    return costs


def _instance(ref: str, depth: int) -> str:
    """``gpu__DOT__core1__DOT__lsu__DOT__x`` -> ``gpu/coreN/lsu`` (``depth`` levels)."""
    return "/".join(re.sub(r"\d+$", "N", part) for part in ref.split("__DOT__")[:depth])


def module_costs(costs: collections.Counter[tuple[str, int]], cpp_dir: Path,
                 depth: int = 2) -> collections.Counter[str]:
    """``costs`` (from :func:`line_costs`) summed by design instance, ``depth`` levels deep,
    reading the generated C++ in ``cpp_dir`` to see which signals each line names."""
    owner: dict[tuple[str, int], str] = {}
    for path in sorted(cpp_dir.glob("*.cpp")):
        last = "?"
        for i, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            refs = _NAME.findall(text)
            if refs:
                last = collections.Counter(_instance(r, depth) for r in refs).most_common(1)[0][0]
            elif text.startswith(("void ", "VL_ATTR")):  # a new function
                last = "?"
            owner[(path.name, i)] = last
    out: collections.Counter[str] = collections.Counter()
    for (file, line), cost in costs.items():
        base = Path(file).name
        out[owner.get((base, line), f"lib:{base}")] += cost
    return out


def _build_debug_model(config: str, work: Path) -> Path:
    """The driver's plain model of ``config`` (both caches on) with debug information."""
    from simtgpu.arch.config import CONFIGS
    from simtgpu.rtl.configs import get_rtl_config
    from simtgpu.rtlsim import verilator_runner as vr

    cfg = get_rtl_config(CONFIGS[config].with_l1(True).with_l2(True))
    (work / "harness.v").write_bytes(vr.harness_verilog(cfg).read_bytes())
    (work / "main.cpp").write_text(vr.driver_cpp(cfg.cores, cfg.lanes))
    cflags = f"-DLINE_WORDS={cfg.line_words} {vr.cpu_cflags()} -g"
    env = vr.verilator_env()
    env["MAKEFLAGS"] += " " + vr.SPEED_MAKEFLAGS[False]
    cmd = [vr.verilator_exe(), "--cc", "--exe", "--top-module", "harness", "-Wno-fatal",
           "-Wno-lint", "-Wno-style", *vr.SPEED_FLAGS, "--Mdir", str(work / "obj"), "-o",
           str(work / "Vharness_run"), "-CFLAGS", cflags, str(vr.WAIVERS),
           str(work / "harness.v"), str(work / "main.cpp")]
    for step in (cmd, vr._make(work)):
        subprocess.run(step, env=env, check=True, cwd=work, stdout=subprocess.DEVNULL)
    return work / "Vharness_run"


def profile(config: str = "small", kernel: str = "vector_add", depth: int = 2,
            work: Path | None = None) -> tuple[int, collections.Counter[str]]:
    """Build the debug model, run ``kernel`` (``vector_add`` n=4096 or ``matmul`` 24x24x24)
    on it under callgrind; the simulated cycles and the instructions per design instance."""
    from .bench_rtl import bench_under_callgrind, require_valgrind

    require_valgrind()
    with tempfile.TemporaryDirectory() as tmp:
        work = work or Path(tmp)
        exe = _build_debug_model(config, work)
        out = work / "callgrind.out"
        row = bench_under_callgrind(out, config, kernel, l1=True, l2=True, lines=True, exe=exe)
        return row["cycles"], module_costs(line_costs(out.read_text()), work / "obj", depth)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.model_profile",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="small")
    p.add_argument("--kernel", choices=("vector_add", "matmul"), default="vector_add")
    p.add_argument("--depth", type=int, default=2, help="instance levels (2: gpu/coreN)")
    p.add_argument("--top", type=int, default=30, help="rows to print")
    args = p.parse_args(argv)
    cycles, costs = profile(args.config, args.kernel, args.depth)
    total = sum(costs.values())
    print(f"{args.kernel} on {args.config} (both caches): {cycles:,} cycles, "
          f"{total / cycles:,.0f} model instructions per cycle")
    print("| instance | per cycle | share |")
    print("| --- | ---: | ---: |")
    for name, cost in costs.most_common(args.top):
        print(f"| `{name}` | {cost / cycles:,.0f} | {100 * cost / total:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
