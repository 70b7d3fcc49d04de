"""Launch statistics for people: IPC, where the scheduler's slots went, and how that changed
over the launch; as text (``simtgpu run --stats``), as JSON (``--json``, ``--stats-json``;
schema in docs/statistics.md) and as a picture (``--plot``).

Every figure comes from the device's own performance counters (the deltas in
:attr:`LaunchResult.counters <simtgpu.driver_model.launch.LaunchResult>` and, per core,
``LaunchResult.per_core``), so the ISS and the RTL report through the same code. Each core's
scheduler, every cycle of a launch, either issues or charges the cycle to exactly one stall
reason: the shares are of those scheduler slots (issued warp-instructions plus stall slots),
per core from its own counter window and in total from the GPU-wide counters. The ISS is
functional: it counts instructions but has no cycles, no stalls and no per-core counters (it
does not model which core runs a block), and says so.

On the RTL, :class:`CounterTimeline` samples the counters while the launch runs (it reads
registers between stretches of simulated cycles, which does not change the launch's cycle
count), giving the issue rate and the stall shares over time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simtgpu.arch.command_queue import Mmio
from simtgpu.arch.config import GpuConfig

from .errors import DriverError
from .launch import LaunchResult

__all__ = ["SCHEMA", "STALLS", "CounterTimeline", "launch_statistics", "plot_statistics",
           "render_statistics", "write_statistics_json"]

SCHEMA = "simtgpu.launch-statistics/2"
STALLS = ("scoreboard", "memory", "barrier", "structural", "idle")
"""The stall reasons of the performance counters (``STALL_<REASON>``), in report order."""

_SAMPLED = (Mmio.INSTRUCTIONS, *(Mmio[f"STALL_{s.upper()}"] for s in STALLS))


@dataclass
class CounterTimeline:
    """Counter snapshots taken every ``interval`` cycles while a launch runs on a backend
    that can stop its clock (the RTL). Past ``max_samples`` snapshots the interval doubles
    and every other snapshot is dropped: snapshots are cumulative, so dropping one merges
    two intervals exactly.

    ``samples`` holds ``(cycles, instructions, {stall: count})`` snapshots, absolute
    counter values; :meth:`intervals` gives their differences.
    """

    interval: int = 16
    max_samples: int = 256
    samples: list[tuple[int, int, dict[str, int]]] = field(default_factory=list)

    def snapshot(self, backend: Any) -> None:
        """Read the counters now (a few MMIO reads) and keep them."""
        # the clock runs on while registers are read: high, low, high again; if the high
        # word moved, the low word wrapped in between and is read again
        hi = backend.mmio_read(Mmio.CYCLES_HI)
        lo = backend.mmio_read(Mmio.CYCLES_LO)
        if backend.mmio_read(Mmio.CYCLES_HI) != hi:
            hi = backend.mmio_read(Mmio.CYCLES_HI)
            lo = backend.mmio_read(Mmio.CYCLES_LO)
        cycles = hi << 32 | lo
        v = {m: backend.mmio_read(m) for m in _SAMPLED}
        self.samples.append((cycles, v[Mmio.INSTRUCTIONS],
                             {s: v[Mmio[f"STALL_{s.upper()}"]] for s in STALLS}))
        if len(self.samples) > self.max_samples:
            self.samples = self.samples[::2] if len(self.samples) % 2 else \
                [*self.samples[:-1:2], self.samples[-1]]
            self.interval *= 2

    def intervals(self) -> list[dict[str, Any]]:
        """Per stretch between two snapshots: its end cycle (from the first snapshot), its
        length, instructions and stall slots (counters wrap modulo 2**32)."""
        out = []
        if not self.samples:
            return out
        c0 = self.samples[0][0]
        for (ca, ia, sa), (cb, ib, sb) in zip(self.samples, self.samples[1:], strict=False):
            if cb == ca:
                continue
            out.append({"end_cycle": cb - c0, "cycles": cb - ca,
                        "instructions": (ib - ia) & 0xFFFFFFFF,
                        "stalls": {s: (sb[s] - sa[s]) & 0xFFFFFFFF for s in STALLS}})
        return out


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _slots(instructions: int, stalls: dict[str, int]) -> tuple[int, dict[str, Any] | None]:
    """Scheduler slots (issued + stalled) and the share of each, in percent (None: no slots)."""
    slots = instructions + sum(stalls.values())
    if not slots:
        return slots, None
    shares = {"issue": _pct(instructions, slots)}
    shares.update({s: _pct(n, slots) for s, n in stalls.items()})
    return slots, shares


def _core_statistics(core: int, c: dict[str, int], cycles: int) -> dict[str, Any]:
    """One core's figures from its counter window deltas (``LaunchResult.per_core[core]``)."""
    stalls = {s: c[f"stall_{s}"] for s in STALLS}
    slots, shares = _slots(c["instructions"], stalls)
    return {"core": core, "warp_instructions": c["instructions"],
            "thread_instructions": c["thread_instructions"],
            "ipc": round(c["instructions"] / cycles, 4), "scheduler_slots": slots,
            "stalls": stalls, "shares_percent": shares,
            "mem_transactions": c["mem_transactions"],
            "divergence_events": c["divergence_events"], "barriers": c["barriers"]}


def launch_statistics(res: LaunchResult, config: GpuConfig,
                      timeline: CounterTimeline | None = None) -> dict[str, Any]:
    """The statistics of one launch as a JSON-ready dict (schema: docs/statistics.md)."""
    c = res.counters
    timed = res.cycles > 0
    stalls = {s: c.get(f"stall_{s}", 0) for s in STALLS} if timed else None
    slots, shares = _slots(res.instructions, stalls) if stalls is not None else (0, None)
    cores = config.cores
    per_core = None
    if timed and res.per_core is not None:
        per_core = [_core_statistics(i, pc, res.cycles) for i, pc in enumerate(res.per_core)]
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "kernel": res.kernel,
        "backend": res.backend,
        "config": {"name": config.name, "cores": cores, "warps_per_core": config.warps_per_core,
                   "lanes": config.lanes},
        "grid": list(res.grid),
        "block": list(res.block),
        "warp_instructions": res.instructions,
        "thread_instructions": res.thread_instructions,
        "cycles": res.cycles if timed else None,
        "ipc": round(res.instructions / res.cycles, 4) if timed else None,
        "ipc_per_core": round(res.instructions / res.cycles / cores, 4) if timed else None,
        "scheduler_slots": slots if timed else None,
        "stalls": stalls,
        "shares_percent": shares,
        "divergence_events": res.divergence_events,
        "mem_transactions": c.get("mem_transactions", 0) if timed else None,
        "barriers": c.get("barriers", 0),
        "wall_s": round(res.wall_s, 6),
        "counters": dict(c),
        "per_opcode": dict(res.per_opcode),
        "per_core": per_core,
        "memory": _memory_statistics(c) if timed else None,
        "timeline": None,
        "notes": [],
    }
    if not timed:
        why = " (the ISS is functional)" if res.backend == "iss" else ""
        out["notes"].append(f"the {res.backend} backend counts no cycles{why}, so no IPC, "
                            "stalls, per-core figures or timeline")
    elif per_core is None:
        out["notes"].append(f"the {res.backend} backend has no per-core counters: "
                            "ipc_per_core is the average over the cores")
    else:
        out["notes"].append("per_core: each core's own counters (they add up to the GPU-wide "
                            "ones); ipc_per_core is their average")
    if timeline is not None and timed:
        out["timeline"] = {"interval_cycles": timeline.interval,
                           "samples": timeline.intervals()}
    return out


def _memory_statistics(c: dict[str, int]) -> dict[str, Any]:
    """The cores' memory paths: L1 hit rate (hits over reads; a read merged into an
    outstanding miss is not a hit; None without an L1), DRAM bytes, load latency."""
    reads = c.get("l1_hits", 0) + c.get("l1_misses", 0) + c.get("l1_merges", 0)
    loads = c.get("loads", 0)
    return {
        "l1_hit_rate_percent": round(100 * c.get("l1_hits", 0) / reads, 2) if reads else None,
        "l1_mshr_full_cycles": c.get("l1_mshr_full", 0),
        "dram_read_bytes": c.get("dram_read_bytes", 0),
        "dram_write_bytes": c.get("dram_write_bytes", 0),
        "loads": loads,
        "load_latency_avg": round(c.get("load_latency_sum", 0) / loads, 2) if loads else None,
        "load_latency_max": c.get("load_latency_max", 0),
    }


def render_statistics(stats: dict[str, Any]) -> str:
    """The IPC and stall-share lines of ``simtgpu run --stats`` (after the launch report)."""
    cfg = stats["config"]
    if stats["cycles"] is None:
        return f"  IPC, stall shares     n/a: {stats['notes'][0]}"
    lines = [f"  IPC (GPU)            {stats['ipc']:.3f} warp-instructions/cycle "
             f"over {cfg['cores']} core{'s' if cfg['cores'] != 1 else ''}",
             f"  IPC per core         {stats['ipc_per_core']:.3f} (average)",
             f"  scheduler slots      {stats['scheduler_slots']:,} (issue + stall, all cores)"]
    mem = stats.get("memory")
    if mem is not None:
        hit, avg = mem["l1_hit_rate_percent"], mem["load_latency_avg"]
        hits = "n/a (no L1)" if hit is None else f"{hit:.1f} %"
        lines.append(f"  memory               L1 hits {hits}"
                     f", DRAM {mem['dram_read_bytes']:,} B read, "
                     f"{mem['dram_write_bytes']:,} B written, load latency "
                     f"{'n/a' if avg is None else f'{avg:.1f}'} avg / "
                     f"{mem['load_latency_max']} max cycles")
    shares = stats["shares_percent"] or {}
    for name, pct in shares.items():
        n = stats["warp_instructions"] if name == "issue" else stats["stalls"][name]
        label = "issued" if name == "issue" else f"stall {name}"
        lines.append(f"    {label:<18} {pct:6.2f} %  ({n:,})")
    if stats["per_core"] is None:
        lines.append(f"  per core             n/a: {stats['notes'][0]}")
        return "\n".join(lines)
    lines.append("  per core (shares in % of the core's scheduler slots)")
    head = ["IPC", "issued", *STALLS, "slots"]
    lines.append("    " + f"{'core':<6}" + "".join(f"{h:>11}" for h in head))
    total = {"core": "all", "ipc": stats["ipc"], "shares_percent": shares,
             "scheduler_slots": stats["scheduler_slots"]}
    for row in (*stats["per_core"], total):
        pct = row["shares_percent"] or {}
        cells = [f"{row['ipc']:.3f}", *(_fmt_pct(pct.get(k)) for k in ("issue", *STALLS)),
                 f"{row['scheduler_slots']:,}"]
        lines.append("    " + f"{row['core']!s:<6}" + "".join(f"{c:>11}" for c in cells))
    return "\n".join(lines)


def _fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def write_statistics_json(stats: dict[str, Any], path: str | Path) -> None:
    """Write ``stats`` as JSON to ``path`` (``-``: stdout)."""
    text = json.dumps(stats, indent=2) + "\n"
    if str(path) == "-":
        print(text, end="")
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    except OSError as e:
        raise DriverError(f"--stats-json {path}: {e.strerror}") from None


_COLOURS = {"issue": "#2ca02c", "scoreboard": "#ff7f0e", "memory": "#1f77b4",
            "barrier": "#9467bd", "structural": "#d62728", "idle": "#7f7f7f"}


def plot_statistics(stats: dict[str, Any], path: str | Path) -> str:
    """Draw the statistics into a PNG at ``path``; returns a sentence saying what is drawn.

    With cycles (RTL): the scheduler slots of the launch split into issue and the stall
    reasons, and, from the timeline, the issue rate and the shares over time. Without (ISS):
    the instruction mix, the only thing a functional simulator measures per launch."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise DriverError("--plot needs matplotlib: pip install 'simtgpu[plot]'") from None
    cfg = stats["config"]
    cores = f"{cfg['cores']} core{'s' if cfg['cores'] != 1 else ''}"
    title = (f"{stats['kernel']} on {stats['backend']} ({cfg['name']}: {cores}, "
             f"{cfg['warps_per_core']} warps x {cfg['lanes']} lanes)")
    if stats["cycles"] is None:
        ops = sorted(stats["per_opcode"].items(), key=lambda kv: -kv[1])
        fig, ax = plt.subplots(figsize=(8, 0.3 * max(len(ops), 4) + 1.5))
        ax.barh([k for k, _ in ops][::-1], [v for _, v in ops][::-1], color="#1f77b4")
        ax.set_xlabel("warp-instructions")
        ax.set_title(f"{title}\ninstruction mix (the ISS has no cycles: no stalls or IPC)",
                     fontsize=10)
        what = "the instruction mix per opcode (the ISS has no cycles, so no stalls)"
    else:
        samples = (stats["timeline"] or {}).get("samples") or []
        # one stacked bar per core (its own counters), then the GPU total, top to bottom
        bars = [(f"core {r['core']}  IPC {r['ipc']:.3f}", r["shares_percent"])
                for r in stats["per_core"] or []]
        bars.append((f"{'all ' + cores if cfg['cores'] > 1 else cores}  IPC "
                     f"{stats['ipc']:.3f}", stats["shares_percent"]))
        top = 0.45 * len(bars) + 1.6
        fig, axes = plt.subplots(3 if samples else 1, 1,
                                 figsize=(9, top + (5.4 if samples else 0)), squeeze=False,
                                 gridspec_kw={"height_ratios": [top, 2.7, 2.7][
                                     :3 if samples else 1]})
        ax = axes[0][0]
        bars.reverse()  # barh draws the first bar at the bottom
        labels = [label for label, _ in bars]
        left = [0.0] * len(bars)
        for name in ("issue", *STALLS):
            row = [(sh or {}).get(name) or 0.0 for _, sh in bars]
            ax.barh(labels, row, left=left, color=_COLOURS[name],
                    label=("issued" if name == "issue" else name))
            for y, (x0, pct) in enumerate(zip(left, row, strict=True)):
                if pct >= 4:
                    ax.text(x0 + pct / 2, y, f"{pct:.0f}%", ha="center", va="center",
                            fontsize=8, color="white")
            left = [x0 + pct for x0, pct in zip(left, row, strict=True)]
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of scheduler slots (%)")
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        per = ("per core from each core's counters" if stats["per_core"] is not None
               else "no per-core counters on this backend")
        ax.set_title(f"{title}\n{stats['cycles']:,} cycles, IPC {stats['ipc']:.3f} "
                     f"({stats['ipc_per_core']:.3f} per core); {per}", fontsize=10)
        what = ("the stall breakdown per core and of all cores" if stats["per_core"] is not None
                else "the stall breakdown of all cores")
        if samples:  # one bar per sampled stretch, as wide as its cycles
            ends = [s["end_cycle"] for s in samples]
            widths = [s["cycles"] for s in samples]
            starts = [e - w for e, w in zip(ends, widths, strict=True)]
            ipc = [s["instructions"] / s["cycles"] for s in samples]
            ax1 = axes[1][0]
            ax1.bar(starts, ipc, width=widths, align="edge", color=_COLOURS["issue"],
                    edgecolor="white", linewidth=0.3)
            ax1.axhline(stats["ipc"], ls="--", color="black", lw=0.8,
                        label=f"launch average {stats['ipc']:.3f}")
            ax1.set_ylabel("warp-instr / cycle (GPU)")
            ax1.set_ylim(0, max(cfg["cores"], max(ipc) * 1.1))
            ax1.legend(fontsize=8)
            ax1.set_title(f"issue rate over time ({len(samples)} stretches of about "
                          f"{sum(widths) / len(widths):.0f} cycles between counter reads)",
                          fontsize=10)
            ax2 = axes[2][0]
            bottom = [0.0] * len(samples)
            for name in ("issue", *STALLS):
                row = []
                for s in samples:
                    total = s["instructions"] + sum(s["stalls"].values())
                    n = s["instructions"] if name == "issue" else s["stalls"][name]
                    row.append(100.0 * n / total if total else 0.0)
                ax2.bar(starts, row, width=widths, bottom=bottom, align="edge",
                        color=_COLOURS[name], linewidth=0)
                bottom = [b + r for b, r in zip(bottom, row, strict=True)]
            ax2.set_ylim(0, 100)
            ax2.set_xlim(0, ends[-1])
            ax1.set_xlim(0, ends[-1])
            ax2.set_xlabel("cycle of the launch")
            ax2.set_ylabel("share of slots (%)")
            ax2.set_title("scheduler slots over time", fontsize=10)
            what += "; the issue rate and the slot shares over time"
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise DriverError(f"--plot {path}: {e.strerror}") from None
    finally:
        plt.close(fig)
    return what
