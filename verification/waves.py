"""Waveform tools: read a VCD, plot chosen signals, draw pipeline occupancy, write a Kanata log.

    python -m simtgpu.verification.waves signals build/waves/x.vcd -s gpu.core0.mem_wb.valid \\
        -s gpu.core0.mem_wb.pc -o build/waves/x.png [--from 100 --to 300]
    python -m simtgpu.verification.waves pipeline build/waves/x.vcd --core 0 --warps 2 \\
        --lanes 4 -o build/waves/x_pipeline.png --kanata build/waves/x.kanata

The pipeline view reads the core's stage-boundary registers (``sch_if if_id is_rr rr_ex1
ex1_ex2 ex2_mem mem_wb``; each holds ``valid``, ``warp`` and ``pc`` of the instruction in the
stage after it) and shows, per cycle, which warp occupies each stage. The Kanata log (the
format of the Konata pipeline viewer) follows each instruction from fetch to write-back: an
instruction seen in one boundary register is the same one seen in the next boundary one
cycle later with the same warp and PC.

Signals are matched by suffix, so ``core0.mem_wb.pc`` finds
``TOP.harness.gpu.core0.mem_wb.pc`` whatever the top scopes are. Struct fields that the
simulator kept as their own wires are used directly; otherwise the field is sliced out of the
packed boundary register with the layout's offsets (``rtl/layouts.py``). FST files are not
read here (there is no FST reader among the project's dependencies): dump VCD for these tools
(``SIMTGPU_WAVES=vcd``), FST for viewing.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from simtgpu.errors import SimtgpuError

__all__ = ["STAGES", "Vcd", "WaveError", "pipeline", "plot_pipeline", "plot_signals",
           "read_vcd", "write_kanata"]

BOUNDARIES = ("sch_if", "if_id", "is_rr", "rr_ex1", "ex1_ex2", "ex2_mem", "mem_wb")
STAGES = ("if", "id", "rr", "ex1", "ex2", "mem", "wb")
"""The stage each boundary register feeds (``sch_if`` holds what ``if`` works on, ...); the
instruction buffer between ``id`` and ``is`` has no single register, so ``is`` is the cycle
an instruction leaves the buffer (``is_rr``: what ``rr`` works on)."""


class WaveError(SimtgpuError):
    """A waveform file that cannot be read, or a signal it does not have."""


@dataclass
class Vcd:
    """Value changes of the signals read from a VCD file."""

    timescale: str
    names: dict[str, str]  # full dotted name -> id code
    widths: dict[str, int]  # id code -> width
    changes: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # id -> (t, v)
    end: int = 0

    def find(self, suffix: str) -> str:
        """The full name of the one signal whose name ends with ``suffix``."""
        suffix = suffix.strip(".")
        hits = [n for n in self.names if n == suffix or n.endswith("." + suffix)]
        if not hits:
            raise WaveError(f"no signal named *{suffix} in the waveform")
        hits.sort(key=len)
        return hits[0]

    def series(self, name: str) -> list[tuple[int, int]]:
        code = self.names[self.find(name)]
        return self.changes.get(code, [])

    def sample(self, name: str, times: Sequence[int]) -> list[int]:
        """Values of ``name`` at each of ``times`` (ascending)."""
        ch = self.series(name)
        out, i, cur = [], 0, 0
        for t in times:
            while i < len(ch) and ch[i][0] <= t:
                cur = ch[i][1]
                i += 1
            out.append(cur)
        return out


def read_vcd(path: str | Path, wanted: Iterable[str] | None = None,
             optional: bool = False) -> Vcd:
    """Parse a VCD; with ``wanted`` (name suffixes) only those signals' changes are kept
    (``optional``: names the file does not have are skipped instead of refused)."""
    path = Path(path)
    if path.suffix.lower() == ".fst":
        raise WaveError(f"{path}: FST is not read by these tools; dump VCD "
                        "(SIMTGPU_WAVES=vcd) or convert with GTKWave's fst2vcd")
    try:
        fh = open(path, errors="replace")
    except OSError as e:
        raise WaveError(f"{path}: {e.strerror}") from None
    names: dict[str, str] = {}
    widths: dict[str, int] = {}
    scope: list[str] = []
    timescale = ""
    with fh:
        for line in fh:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "$scope":
                scope.append(tok[2])
            elif tok[0] == "$upscope":
                scope.pop()
            elif tok[0] == "$var":
                width, code, ref = int(tok[2]), tok[3], tok[4]
                ref = re.sub(r"__DOT__", ".", ref.lstrip("\\"))
                names[".".join(scope + [ref])] = code
                widths[code] = width
            elif tok[0] == "$timescale":
                timescale = " ".join(t for t in tok[1:] if t != "$end")
                if not timescale:
                    timescale = next(fh).strip()
            elif tok[0] == "$enddefinitions":
                break
        vcd = Vcd(timescale, names, widths)
        keep = None
        if wanted is not None:
            keep = set()
            for w in wanted:
                try:
                    keep.add(vcd.names[vcd.find(w)])
                except WaveError:
                    if not optional:
                        raise
        t = 0
        changes = vcd.changes
        for line in fh:
            c = line[0] if line else ""
            if c == "#":
                t = int(line[1:])
                continue
            if c in "01xzXZ":
                code = line[1:].strip()
                if keep is None or code in keep:
                    changes.setdefault(code, []).append((t, 1 if c == "1" else 0))
            elif c in "bB":
                val, code = line[1:].split()
                if keep is None or code in keep:
                    v = int(re.sub(r"[xzXZ]", "0", val), 2)
                    changes.setdefault(code, []).append((t, v))
        vcd.end = t
    return vcd


def _clock_edges(vcd: Vcd, clock: str = "clk") -> list[int]:
    """Times of the rising clock edges (the cycle boundaries)."""
    ch = vcd.series(clock)
    return [t for (t, v), prev in zip(ch, [(0, 1)] + ch, strict=False) if v == 1 and prev[1] == 0]


def plot_signals(vcd: Vcd, signals: Sequence[str], out: str | Path,
                 t_from: int | None = None, t_to: int | None = None) -> Path:
    """A PNG with one step trace per signal (multi-bit values labelled in hex)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = t_from or 0
    t1 = t_to or vcd.end
    fig, axes = plt.subplots(len(signals), 1, figsize=(12, 0.7 * len(signals) + 1),
                             sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], signals, strict=True):
        full = vcd.find(name)
        width = vcd.widths[vcd.names[full]]
        pts = [(t, v) for t, v in vcd.series(name) if t0 <= t <= t1]
        before = [v for t, v in vcd.series(name) if t < t0]
        if before:
            pts.insert(0, (t0, before[-1]))
        pts.append((t1, pts[-1][1] if pts else 0))
        ts = [p[0] for p in pts]
        if width == 1:
            ax.step(ts, [p[1] for p in pts], where="post", color="tab:blue")
            ax.set_ylim(-0.2, 1.2)
            ax.set_yticks([])
        else:
            for (ta, va), (tb, _) in zip(pts, pts[1:], strict=False):
                ax.fill_between([ta, tb], 0, 1, color="tab:green", alpha=0.15)
                ax.plot([ta, ta], [0, 1], color="tab:green", lw=0.6)
                if tb - ta > (t1 - t0) / 60:
                    ax.text((ta + tb) / 2, 0.5, f"{va:x}", ha="center", va="center",
                            fontsize=7)
            ax.set_ylim(0, 1)
            ax.set_yticks([])
        ax.set_ylabel(name.split(".")[-2] + "." + name.split(".")[-1] if "." in name else name,
                      rotation=0, ha="right", fontsize=8)
    axes[-1, 0].set_xlabel(f"time ({vcd.timescale})")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


@dataclass
class StageSample:
    valid: int
    warp: int
    pc: int


def _field(vcd: Vcd, scope: str, boundary: str, name: str, offset: int, width: int,
           times: Sequence[int]) -> list[int]:
    try:
        return vcd.sample(f"{scope}.{boundary}.{name}", times)
    except WaveError:
        packed = vcd.sample(f"{scope}.{boundary}", times)
        return [(v >> offset) & ((1 << width) - 1) for v in packed]


def pipeline(vcd: Vcd, core: int = 0, warps: int = 2, lanes: int = 4
             ) -> tuple[list[int], dict[str, list[StageSample]]]:
    """Per rising clock edge (the cycle just finished), the occupant of every stage of
    ``core``: (cycle times, {stage: [StageSample per cycle]})."""
    from amaranth.hdl import Shape
    from simtgpu.rtl import layouts

    times = _clock_edges(vcd)
    scope = f"core{core}"
    out = {}
    for boundary, stage in zip(BOUNDARIES, STAGES, strict=True):
        if boundary in ("sch_if", "if_id"):
            lay = getattr(layouts, boundary)(warps)
        elif boundary == "is_rr":
            lay = layouts.is_rr(warps)
        else:
            lay = layouts.uop(warps, lanes)
        cols = []
        for name in ("valid", "warp", "pc"):
            f = lay[name]
            width = Shape.cast(f.shape).width
            cols.append(_field(vcd, scope, boundary, name, f.offset, width,
                               [t - 1 for t in times]))
        out[stage] = [StageSample(*x) for x in zip(*cols, strict=True)]
    return times, out


def write_kanata(stages: dict[str, list[StageSample]], out: str | Path) -> Path:
    """A Kanata 0004 log (Konata viewer): one instruction per fetch, followed through the
    stages; lanes of the viewer = one lane."""
    order = list(STAGES)
    n = len(stages[order[0]])
    lines = ["Kanata\t0004", "C=\t0"]
    live: dict[int, tuple[int, int, str]] = {}  # id -> (warp, pc, stage)
    next_id = 0
    retired = 0
    for cyc in range(n):
        if cyc:
            lines.append("C\t1")
        occupants = {s: stages[s][cyc] for s in order}
        moved: dict[int, str] = {}
        for k in range(len(order) - 1, -1, -1):
            s = order[k]
            o = occupants[s]
            if not o.valid:
                continue
            prev = order[k - 1] if k else None
            match = None
            for iid, (w, pc, st) in live.items():
                if w == o.warp and pc == o.pc and st in (prev, s) and iid not in moved:
                    if match is None or iid < match:
                        match = iid
            if match is None:
                match = next_id
                next_id += 1
                lines.append(f"I\t{match}\t{match}\t{o.warp}")
                lines.append(f"L\t{match}\t0\tw{o.warp} pc {o.pc:#x}")
            w, pc, st = live.get(match, (o.warp, o.pc, None))
            if st != s:
                if st is not None:
                    lines.append(f"E\t{match}\t0\t{st}")
                lines.append(f"S\t{match}\t0\t{s}")
            live[match] = (o.warp, o.pc, s)
            moved[match] = s
        for iid in [i for i in live if i not in moved]:
            w, pc, st = live.pop(iid)
            lines.append(f"E\t{iid}\t0\t{st}")
            lines.append(f"R\t{iid}\t{retired}\t{0 if st == 'wb' else 1}")
            retired += 1
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return out


def plot_pipeline(times: Sequence[int], stages: dict[str, list[StageSample]],
                  out: str | Path, first: int = 0, count: int = 200) -> Path:
    """A PNG: stages down, cycles across, each cell coloured by the warp in it (blank when
    the stage is empty), with the stage occupancy in % on the left."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    order = list(STAGES)
    last = min(len(times), first + count)
    grid = np.full((len(order), max(0, last - first)), np.nan)
    for r, s in enumerate(order):
        for c in range(first, last):
            o = stages[s][c]
            if o.valid:
                grid[r, c - first] = o.warp
    fig, ax = plt.subplots(figsize=(min(18, 2 + (last - first) * 0.08), 3.2))
    ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="tab10", vmin=0, vmax=9)
    occ = [100.0 * sum(o.valid for o in stages[s]) / max(1, len(times)) for s in order]
    ax.set_yticks(range(len(order)), [f"{s} ({p:.0f}%)" for s, p in zip(order, occ,
                                                                        strict=True)])
    ax.set_xlabel(f"cycle (from {first}); colour = warp")
    ax.set_title("pipeline occupancy")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simtgpu.verification.waves",
                                description="plot signals or the pipeline from a VCD")
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("signals", help="plot chosen signals to a PNG")
    ps.add_argument("vcd")
    ps.add_argument("-s", "--signal", action="append", required=True)
    ps.add_argument("-o", "--output", required=True)
    ps.add_argument("--from", dest="t_from", type=int)
    ps.add_argument("--to", dest="t_to", type=int)
    pp = sub.add_parser("pipeline", help="pipeline occupancy PNG and Kanata log of a core")
    pp.add_argument("vcd")
    pp.add_argument("--core", type=int, default=0)
    pp.add_argument("--warps", type=int, required=True)
    pp.add_argument("--lanes", type=int, required=True)
    pp.add_argument("-o", "--output", required=True)
    pp.add_argument("--kanata")
    pp.add_argument("--first", type=int, default=None,
                    help="first cycle shown (default: the first with a valid stage)")
    pp.add_argument("--cycles", type=int, default=200)
    args = p.parse_args(argv)
    try:
        if args.cmd == "signals":
            vcd = read_vcd(args.vcd, args.signal)
            print(plot_signals(vcd, args.signal, args.output, args.t_from, args.t_to))
        else:
            want = ["clk"]
            for b in BOUNDARIES:
                want += [f"core{args.core}.{b}"] + [f"core{args.core}.{b}.{f}"
                                                    for f in ("valid", "warp", "pc")]
            vcd = read_vcd(args.vcd, want, optional=True)
            times, st = pipeline(vcd, args.core, args.warps, args.lanes)
            first = args.first
            if first is None:
                active = [c for c in range(len(times)) if any(st[s][c].valid for s in STAGES)]
                first = active[0] if active else 0
            print(plot_pipeline(times, st, args.output, first, args.cycles))
            if args.kanata:
                print(write_kanata(st, args.kanata))
    except WaveError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
