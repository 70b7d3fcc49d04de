"""Generate names with microgpt on the simulated GPU and report what every op cost.

    python examples/microgpt/generate.py --backend iss|rtl|cuda [--fused | --unfused]
    python examples/microgpt/generate.py --backend rtl --compare --chart build/microgpt.png
    python examples/microgpt/generate.py --scaling          # embedding 16, 64, 128 on the ISS
    python examples/microgpt/generate.py --retrain          # retrain weights.npz (names package)

Greedy by default: one name per prompt letter (``--prompts``); ``--temperature T`` samples
instead, from BOS, with a NumPy generator seeded by ``--seed``. Every token's logits are
checked against the float32 NumPy reference (microgpt_model.py); the exit status is 1 when
they differ by more than 1e-5 relative or the reference would have chosen another token.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import microgpt_model as model  # noqa: E402
import microgpt_runner as runner  # noqa: E402
from simtgpu.driver_model import BACKENDS, CONFIGS, Device, DriverError  # noqa: E402
from simtgpu.errors import SimtgpuError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5
DOC_CHART = ROOT / "docs" / "microgpt-fusion.png"


def run(backend: str, config: str, fused: bool, params, shape: model.Shape, prompts: list[str],
        temperature: float, seed: int, max_tokens: int | None = None
        ) -> tuple[runner.Generation, runner.Costs]:
    dev = Device(backend=backend, config=config)
    try:
        gm = runner.GpuModel(dev, params, shape, fused)
        gen = runner.generate(gm, params, prompts, temperature, seed, max_tokens)
        return gen, gm.costs
    finally:
        dev.close()


def _fmt_row(name: str, c: runner.OpCost, tokens: int, rtl: bool, cuda: bool) -> str:
    per = lambda v: v / tokens  # noqa: E731
    row = f"| {name} | {per(c.launches):.2f} | {per(c.instructions):,.0f} |"
    if rtl:
        ipc = c.instructions / c.cycles if c.cycles else 0.0
        row += f" {per(c.cycles):,.0f} | {ipc:.3f} |"
    if cuda:
        row += f" {per(c.kernel_s) * 1e6:,.1f} | {per(c.wall_s) * 1e6:,.0f} |"
    return row


def report(costs: runner.Costs, backend: str, by: str = "op") -> str:
    """A Markdown table of launches, warp-instructions, cycles and IPC (RTL) or microseconds
    (cuda) per token, by op or by stage, with the total."""
    rtl, cuda = backend == "rtl", backend == "cuda"
    head = f"| {by} | launches | warp-instr. |" + (" cycles | IPC |" if rtl else "") + \
        (" kernel µs | launch µs |" if cuda else "")
    lines = [head, "|" + " --- |" + " ---: |" * (head.count("|") - 2)]
    rows = costs.by_op() if by == "op" else costs.by_stage()
    for name, c in rows.items():
        if c.launches:
            lines.append(_fmt_row(name, c, costs.tokens, rtl, cuda))
    lines.append(_fmt_row("**total**", costs.total(), costs.tokens, rtl, cuda))
    return "\n".join(lines)


def verdict(gen: runner.Generation) -> tuple[bool, str]:
    ok = gen.max_rel_err <= TOLERANCE and gen.disagreements == 0
    return ok, (f"logits vs NumPy reference: max relative error {gen.max_rel_err:.2e} "
                f"(limit {TOLERANCE:g}); reference chose another token at "
                f"{gen.disagreements} step(s): {'PASS' if ok else 'FAIL'}")


def chart(results: dict[str, runner.Costs], backend: str, config: str, path: Path) -> None:
    """Grouped bars by stage, unfused against fused: launches and cycles (RTL) or
    warp-instructions (ISS, cuda) per token."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric, label = (("cycles", "cycles per token") if backend == "rtl"
                     else ("instructions", "warp-instructions per token"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    x = np.arange(len(runner.STAGES))
    for i, (name, costs) in enumerate(results.items()):
        st = costs.by_stage()
        for ax, field in zip(axes, ("launches", metric), strict=True):
            vals = [getattr(st[s], field) / costs.tokens for s in runner.STAGES]
            total = getattr(costs.total(), field) / costs.tokens
            ax.bar(x + (i - 0.5) * 0.4, vals, 0.4,
                   label=f"{name} (total {total:,.0f})" if field != "launches"
                   else f"{name} (total {total:.0f})")
    for ax, title in zip(axes, ("launches per token", label), strict=True):
        ax.set_xticks(x, runner.STAGES, rotation=25, ha="right")
        ax.set_title(title)
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"microgpt, one token: unfused against fused ({backend}, {config})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling(embeds: list[int], tokens: int, seed: int) -> tuple[bool, str]:
    """The cost per token on the ISS as the embedding grows (untrained weights, 4 heads,
    context 16): whether every run matched the reference, and a Markdown table."""
    ok = True
    lines = ["| embedding | parameters | version | launches | warp-instr. | thread-instr. |"
             " max rel. error |", "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for e in embeds:
        shape = model.Shape(n_embd=e)
        params = model.init_params(shape, seed)
        n = sum(v.size for v in params.values())
        for fused in (False, True):
            gen, costs = run("iss", "small", fused, params, shape, [""], 0.0, seed,
                             max_tokens=tokens)
            ok &= verdict(gen)[0]
            err = gen.max_rel_err
            t, k = costs.total(), costs.tokens
            lines.append(f"| {e} | {n:,} | {'fused' if fused else 'unfused'} | "
                         f"{t.launches / k:.0f} | {t.instructions / k:,.0f} | "
                         f"{t.thread_instructions / k:,.0f} | {err:.1e} |")
            print(lines[-1], flush=True)
    return ok, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="microgpt inference on the simulated GPU")
    p.add_argument("--backend", default="iss", choices=BACKENDS)
    p.add_argument("--config", default="small", choices=sorted(CONFIGS))
    g = p.add_mutually_exclusive_group()
    g.add_argument("--fused", dest="fused", action="store_true", default=True,
                   help="fused kernels (default)")
    g.add_argument("--unfused", dest="fused", action="store_false", help="one op per launch")
    g.add_argument("--compare", action="store_true",
                   help="run unfused and fused, check they generate the same names")
    p.add_argument("--prompts", default="a,m,j,s",
                   help="greedy mode: one name per comma-separated prompt (default a,m,j,s)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sample at this temperature instead of greedy (microgpt uses 0.5)")
    p.add_argument("--names", type=int, default=4, help="names to sample (with --temperature)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampling noise")
    p.add_argument("--by", choices=("op", "stage"), default="op", help="report rows")
    p.add_argument("--chart", type=Path, help="with --compare: write the chart (PNG) here")
    p.add_argument("--retrain", action="store_true",
                   help="train first (NumPy, under a minute) and overwrite weights.npz")
    p.add_argument("--steps", type=int, default=2000, help="training steps (with --retrain)")
    p.add_argument("--scaling", action="store_true",
                   help="cost per token on the ISS at embedding 16, 64 and 128")
    p.add_argument("--write-docs", action="store_true",
                   help="write the figures into docs/performance.md (and, with --compare, the "
                   "chart to docs/microgpt-fusion.png)")
    args = p.parse_args(argv)

    if args.retrain:
        t0 = time.perf_counter()
        try:
            params, loss = model.train(steps=args.steps)
        except model.NamesMissing as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        model.save(params, model.Shape())
        print(f"trained in {time.perf_counter() - t0:.1f} s, loss {loss:.3f}; "
              f"wrote {model.WEIGHTS.relative_to(ROOT)}")

    if args.scaling:
        ok, table = scaling([16, 64, 128], tokens=4, seed=args.seed)
        if args.write_docs:
            _write_section("microgpt-scaling", _scaling_doc(table),
                           "python examples/microgpt/generate.py --scaling --write-docs")
        return 0 if ok else 1

    params, shape = model.load()
    sampled = args.temperature > 0
    prompts = [""] * args.names if sampled else args.prompts.split(",")
    versions = [False, True] if args.compare else [args.fused]
    results: dict[str, runner.Costs] = {}
    names: dict[str, list[str]] = {}
    ok = True
    try:
        for fused in versions:
            label = "fused" if fused else "unfused"
            t0 = time.perf_counter()
            gen, costs = run(args.backend, args.config, fused, params, shape, prompts,
                             args.temperature, args.seed)
            good, line = verdict(gen)
            ok &= good
            results[label], names[label] = costs, gen.names
            print(f"\n## {label} on {args.backend} ({args.config}): {costs.tokens} tokens in "
                  f"{time.perf_counter() - t0:.1f} s\n")
            print("names:", ", ".join(gen.names))
            print(line + "\n")
            print(report(costs, args.backend, args.by))
    except DriverError as e:
        print(f"{args.backend} backend unavailable: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    if args.compare:
        same = names["fused"] == names["unfused"]
        ok &= same
        u, f = results["unfused"].total(), results["fused"].total()
        line = (f"\nfused against unfused: {u.launches / f.launches:.2f}x fewer launches, "
                f"{u.instructions / f.instructions:.2f}x fewer warp-instructions"
                + (f", {u.cycles / f.cycles:.2f}x fewer cycles" if f.cycles else "")
                + f"; same names: {'yes' if same else 'NO'}")
        print(line)
        chart_path = DOC_CHART if args.write_docs else args.chart
        if chart_path:
            chart(results, args.backend, args.config, chart_path)
            print(f"wrote {chart_path}")
        if args.write_docs:
            cmd = (f"python examples/microgpt/generate.py --backend {args.backend} "
                   f"--config {args.config} --compare --write-docs")
            _write_section("microgpt", _compare_doc(results, names, args, cmd), cmd)
    return 0 if ok else 1


def _write_section(name: str, body: str, owner: str) -> None:
    from simtgpu.cli.bench import PERF_DOC, write_section
    write_section(name, body, PERF_DOC, owner=owner)
    print(f"wrote section '{name}' of {PERF_DOC.relative_to(ROOT)}")


def _provenance() -> str:
    """'Commit abc1234, 2026-11-22 23:00 UTC.' for the figures written into the docs."""
    import datetime
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"Commit {commit}, {now}."


def _compare_doc(results: dict[str, runner.Costs], names: dict[str, list[str]], args,
                 cmd: str) -> str:
    cfg = CONFIGS[args.config]
    u, f = results["unfused"].total(), results["fused"].total()
    parts = [f"## microgpt: fused against unfused ({args.backend}, `{args.config}`)", "",
             "The inference step of the microgpt example ([microgpt.md](microgpt.md)): "
             "embedding 16, 4 heads, 1 layer, context 16, vocabulary 27, the committed "
             f"weights, greedy names from the prompts `{args.prompts}` "
             f"({', '.join(names['fused'])}; the same for both versions, every token's logits "
             "within 1e-5 of the NumPy reference). Figures are per generated token: every "
             "launch of the run summed and divided by the tokens. Cycles are the GPU's own "
             "counter for each launch, from the doorbell to completion "
             f"(`{args.config}`: {cfg.cores} cores, {cfg.warps_per_core} warps x "
             f"{cfg.lanes} lanes, device-memory latency {cfg.mem_latency} cycles); they do "
             "not depend on the machine running the simulation. Command:", "",
             f"```\n{cmd}\n```", "", _provenance(), "",
             f"Target (issue 14): fused at least 3x fewer launches and 2x fewer cycles per "
             f"token than unfused. Measured: **{u.launches / f.launches:.2f}x** fewer "
             f"launches, **{u.cycles / f.cycles:.2f}x** fewer cycles "
             f"({u.instructions / f.instructions:.2f}x fewer warp-instructions).", ""]
    for label, costs in results.items():
        parts += [f"**{label}**, by stage:", "", report(costs, args.backend, "stage"), ""]
    parts += ["![fused against unfused, by stage](microgpt-fusion.png)"]
    return "\n".join(parts)


def _scaling_doc(table: str) -> str:
    return "\n".join([
        "## microgpt: cost as the model grows (ISS)", "",
        "The same inference step with untrained weights (seed 0) at embedding 16, 64 and 128 "
        "(4 heads, context 16, vocabulary 27, the MLP 4x wider), four tokens from BOS on the "
        "ISS, `small` configuration; figures per token, and the largest relative error of the "
        "logits against the NumPy reference. Command:", "",
        "```\npython examples/microgpt/generate.py --scaling --write-docs\n```", "",
        _provenance(), "", table, "",
        "The unfused step is 26 launches at every size and the fused one 7. What fusion "
        "saves is fixed: the launches (on the RTL the smallest launch here, a ReLU of 64 "
        "values, takes about 160 cycles), the round trips of small vectors through memory, "
        "and above all the attention, which the fused kernel does in registers (at "
        "embedding 128, 3,800 warp-instructions per token against 20,800 for the eight "
        "unfused ops). The matrix-vector products grow with the square of the embedding "
        "and cost the same in both versions, a little more in the fused one, whose every "
        "program repeats the RMSNorm of its input. So the saving is largest at microgpt's "
        "own size and shrinks as the products take over."])


if __name__ == "__main__":
    sys.exit(main())
