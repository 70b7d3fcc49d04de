"""Waveform tools: read a dump (FST or VCD), plot signals and the pipeline on a cycle axis,
write a Konata pipeline log and viewer layouts. ``simtgpu waves`` is the command line.

Dumps are read through pywellen (one reader for both formats). The configuration (cores,
warps, lanes) is read from the dump's signal names: ``gpu.core<i>``, ``core0.w<w>_pc`` and the
width of ``core0.w0_active``. Cycles are numbered by the rising edges of ``clk``: the value a
register holds in cycle ``c`` is sampled just before the edge that ends it. The driver's
dumps (``simtgpu run --waves``) use 10 ns per cycle with cycle ``c`` starting at ``10 c`` ns, so
their cycle numbers are the model's cycle counter.

The pipeline view follows the instructions of one core through its nine stages, read from
the stage-boundary registers (``rtl/stages.py``) and the issue decision:

========  ===================================================================================
``sch``   ``sch_if_d``: the warp picked to fetch this cycle
``if``    ``sch_if``: the fetch being read from instruction memory
``id``    ``if_id``: the word being decoded (``id_word``); ``accept`` low drops it
``is``    ``is_rr_d``: the instruction issued this cycle (it waited in the buffer before)
``rr``    ``is_rr``; ``ex1`` ``rr_ex1``; ``ex2`` ``ex1_ex2``; ``mem`` ``ex2_mem``; ``wb`` ``mem_wb``
========  ===================================================================================

and the reasons: ``stalls.stall_<reason>`` (why ``is`` issued nothing, the stall counters'
classification) and ``w<w>_wait`` (each warp's :class:`~simtgpu.rtl.warp_wait.WarpWait`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simtgpu.errors import SimtgpuError

__all__ = ["STAGES", "STALL_REASONS", "WAIT_NAMES", "Dump", "DumpConfig", "Pipeline",
           "Record", "WaveError", "konata_records", "open_dump", "pipeline", "plot_pipeline",
           "plot_signals", "write_gtkw", "write_konata", "write_surfer"]

STAGES = ("sch", "if", "id", "is", "rr", "ex1", "ex2", "mem", "wb")
"""The nine stages, in order (docs/microarchitecture.md)."""

STAGE_SIGNALS = {"sch": "sch_if_d", "if": "sch_if", "id": "if_id", "is": "is_rr_d",
                 "rr": "is_rr", "ex1": "rr_ex1", "ex2": "ex1_ex2", "mem": "ex2_mem",
                 "wb": "mem_wb"}
"""The register (or, for ``sch`` and ``is``, the register's input) that holds each stage's
occupant: ``valid``, ``warp``, ``pc``."""

STALL_REASONS = ("idle", "memory", "structural", "scoreboard", "barrier")
"""``stalls.stall_<reason>``: one is high in every cycle in which ``is`` issues nothing."""


def _wait_names() -> tuple[str, ...]:
    from simtgpu.rtl.warp_wait import WarpWait

    return tuple(w.name.lower() for w in sorted(WarpWait, key=lambda w: w.value))


WAIT_NAMES = _wait_names()
"""``w<w>_wait`` values by number (:class:`simtgpu.rtl.warp_wait.WarpWait`)."""


class WaveError(SimtgpuError):
    """A waveform file that cannot be read, or a signal it does not have."""


@dataclass(frozen=True)
class DumpConfig:
    """What the dump says about the design: cores, warps per core, lanes per warp."""

    cores: int
    warps: int
    lanes: int


@dataclass
class Dump:
    """A waveform file: its variables by full dotted name, and value changes once loaded."""

    path: Path
    timescale: str
    vars: dict[str, Any]  # full name -> pywellen.Var
    wave: Any  # pywellen.Waveform
    changes: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _edges: list[int] | None = None

    def find(self, suffix: str) -> str:
        """The full name of the shortest signal whose name ends with ``suffix``."""
        suffix = suffix.strip(".")
        hits = [n for n in self.vars if n == suffix or n.endswith("." + suffix)]
        if not hits:
            raise WaveError(f"{self.path}: no signal named *{suffix}")
        return min(hits, key=len)

    def has(self, suffix: str) -> bool:
        try:
            self.find(suffix)
        except WaveError:
            return False
        return True

    def width(self, name: str) -> int:
        return int(self.vars[self.find(name)].bitwidth or 1)

    def load(self, names: Iterable[str]) -> None:
        """Read the value changes of ``names`` (suffixes) in one pass over the file."""
        full = [self.find(n) for n in names]
        todo = [n for n in dict.fromkeys(full) if n not in self.changes]
        if not todo:
            return
        by_id: dict[int, list[str]] = {}
        for n in todo:
            by_id.setdefault(_sid(self.vars[n]), []).append(n)
            self.changes[n] = []
        out: dict[int, list[tuple[int, int]]] = {k: [] for k in by_id}

        def take(t: int, sid, value) -> None:
            out[_sid_of(sid)].append((t, _int(value)))

        self.wave.stream_changes(take, [self.vars[n] for n in todo])
        for k, names_k in by_id.items():
            for n in names_k:
                self.changes[n] = out[k]

    def series(self, name: str) -> list[tuple[int, int]]:
        full = self.find(name)
        if full not in self.changes:
            self.load([full])
        return self.changes[full]

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

    def edges(self) -> list[int]:
        """Times of the rising edges of ``clk``."""
        if self._edges is None:
            ch = self.series("clk")
            prev = 1
            self._edges = []
            for t, v in ch:
                if v == 1 and prev == 0:
                    self._edges.append(t)
                prev = v
        return self._edges

    def first_cycle(self) -> int:
        """The cycle number of the first rising edge's cycle (10 time units per cycle in the
        driver's dumps; 0 where the edges are not on that grid)."""
        e = self.edges()
        if len(e) < 2:
            return 0
        period = e[1] - e[0]
        return max(0, e[0] // period - 1) if period and e[0] % period == 0 else 0

    def cycles(self) -> tuple[list[int], list[int]]:
        """(cycle numbers, sample times): one per rising edge, the time just before it."""
        e = self.edges()
        c0 = self.first_cycle()
        return [c0 + i for i in range(len(e))], [t - 1 for t in e]

    def config(self) -> DumpConfig:
        """Cores, warps and lanes, from the signal names."""
        cores = {int(m.group(1)) for n in self.vars
                 if (m := re.search(r"\.core(\d+)\.w0_pc$", n))}
        warps = {int(m.group(1)) for n in self.vars
                 if (m := re.search(r"\.core0\.w(\d+)_pc$", n))}
        if not cores or not warps:
            raise WaveError(f"{self.path}: not a dump of the simtgpu harness (no "
                            "gpu.core<i>.w<w>_pc signals)")
        return DumpConfig(cores=max(cores) + 1, warps=max(warps) + 1,
                          lanes=self.width("core0.w0_active"))


def _sid(var) -> int:
    return _sid_of(var.signal_ref)


def _sid_of(sid) -> int:
    text = str(sid)  # "SignalId(12)"; the objects themselves do not compare equal
    m = re.search(r"(\d+)", text)
    return int(m.group(1)) if m else hash(text)


def _int(value) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(re.sub(r"[^01]", "0", value), 2) if value else 0
        except ValueError:
            return 0
    return int(value or 0)


def open_dump(path: str | Path) -> Dump:
    """Open an FST or VCD file (the variables are read now, value changes when asked for)."""
    try:
        import pywellen
    except ImportError:
        raise WaveError("reading waveforms needs pywellen: pip install pywellen (it comes "
                        "with simtgpu's dev extra)") from None

    path = Path(path)
    if not path.exists():
        raise WaveError(f"{path}: no such file")
    try:
        wave = pywellen.Waveform(str(path))
    except Exception as e:  # pywellen raises its own types for malformed files
        raise WaveError(f"{path}: cannot read it as FST or VCD ({e})") from None
    names = {}
    for v in wave.all_vars():
        # pywellen shows an element ``a[0]`` of a bus as ``a.[0]``; viewers say ``a[0]``
        names.setdefault(v.full_name.replace(".[", "["), v)
    ts = wave.timescale
    timescale = f"{ts.factor}{ts.unit}".replace("TimescaleUnit.", "").lower() if ts else ""
    return Dump(path, timescale, names, wave)


# --- signals -------------------------------------------------------------------------------

def plot_signals(dump: Dump, signals: Sequence[str], out: str | Path,
                 first: int | None = None, last: int | None = None) -> Path:
    """A PNG with one trace per signal against cycles (multi-bit values labelled in hex)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dump.load(signals)
    cycles, times = dump.cycles()
    if not cycles:
        raise WaveError(f"{dump.path}: no clock edges (no clk signal toggling)")
    c0 = cycles[0] if first is None else max(first, cycles[0])
    c1 = cycles[-1] if last is None else min(last, cycles[-1])
    if c1 < c0:
        raise WaveError(f"cycles {first}..{last} are outside the dump ({cycles[0]}.."
                        f"{cycles[-1]})")
    sel = slice(c0 - cycles[0], c1 - cycles[0] + 1)
    xs = cycles[sel]
    fig, axes = plt.subplots(len(signals), 1, figsize=(12, 0.7 * len(signals) + 1.2),
                             sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], signals, strict=True):
        width = dump.width(name)
        full = dump.find(name)
        vals = dump.sample(name, times)[sel]
        if full.rsplit(".", 1)[-1] == "clk":  # sampled once a cycle: draw the edges instead
            ax.step([x + h for x in xs for h in (0, 0.5)] + [xs[-1] + 1],
                    [v for _ in xs for v in (1, 0)] + [1], where="post", color="tab:blue")
            ax.set_ylim(-0.2, 1.2)
        elif width == 1:
            ax.step(xs + [xs[-1] + 1], vals + vals[-1:], where="post", color="tab:blue")
            ax.set_ylim(-0.2, 1.2)
        else:
            start = 0
            for i in range(1, len(xs) + 1):
                if i == len(xs) or vals[i] != vals[start]:
                    ax.fill_between([xs[start], xs[i - 1] + 1], 0, 1, color="tab:green",
                                    alpha=0.15)
                    ax.plot([xs[start], xs[start]], [0, 1], color="tab:green", lw=0.6)
                    v = vals[start]
                    text = (WAIT_NAMES[v] if full.endswith("_wait") and v < len(WAIT_NAMES)
                            else f"{v:x}")
                    if (i - start) > len(xs) * max(2, len(text)) / 110:  # room for the text
                        ax.text((xs[start] + xs[i - 1] + 1) / 2, 0.5, text, ha="center",
                                va="center", fontsize=7)
                    start = i
            ax.set_ylim(0, 1)
        ax.set_yticks([])
        short = ".".join(full.split(".")[-2:])
        ax.set_ylabel(short, rotation=0, ha="right", fontsize=8)
    axes[-1, 0].set_xlabel("cycle")
    fig.suptitle(f"{dump.path.name}: cycles {c0}..{c1}", fontsize=9)
    fig.tight_layout()
    return _save(fig, out)


def _save(fig, out: str | Path) -> Path:
    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# --- pipeline --------------------------------------------------------------------------------

@dataclass
class Pipeline:
    """One core's pipeline, per cycle: every stage's occupant ``(warp, pc)`` or None, the
    reason ``is`` issued nothing (None when it issued), each warp's wait reason, and what the
    retire port, ``accept`` and the decoder showed."""

    core: int
    config: DumpConfig
    cycles: list[int]
    stages: dict[str, list[tuple[int, int] | None]]
    stall: list[str | None]
    waits: list[list[str]]  # [warp][cycle]
    retire: list[tuple[int, int] | None]  # (warp slot, pc) the retire port showed
    accept: list[int]
    word: list[int]  # id_word (the word being decoded in id)
    deferred: list[int]  # mem_wb.deferred (a late write-back retires it later)


def pipeline(dump: Dump, core: int = 0) -> Pipeline:
    """Read the pipeline of ``core`` from ``dump`` (one pass over the file)."""
    cfg = dump.config()
    if not 0 <= core < cfg.cores:
        raise WaveError(f"--core {core}: the dump has cores 0..{cfg.cores - 1}")
    p = f"core{core}."
    # the retire port names a warp by its index in its block; the stage registers, like the
    # late write-back unit's own retire port, by its warp slot (several blocks per core)
    names = ["clk", f"{p}accept", f"{p}id_word", f"{p}mem_wb.deferred",
             f"retire__{core}__valid", f"{p}late_wb.retire__warp", f"retire__{core}__pc"]
    for reg in STAGE_SIGNALS.values():
        names += [f"{p}{reg}.valid", f"{p}{reg}.warp", f"{p}{reg}.pc"]
    names += [f"{p}stalls.stall_{r}" for r in STALL_REASONS]
    names += [f"{p}w{w}_wait" for w in range(cfg.warps)]
    dump.load(names)
    cycles, times = dump.cycles()
    stages = {}
    for st, reg in STAGE_SIGNALS.items():
        v, w, pc = (dump.sample(f"{p}{reg}.{f}", times) for f in ("valid", "warp", "pc"))
        stages[st] = [(w[i], pc[i]) if v[i] else None for i in range(len(times))]
    strobes = [dump.sample(f"{p}stalls.stall_{r}", times) for r in STALL_REASONS]
    stall = [next((r for r, s in zip(STALL_REASONS, col, strict=True) if s), None)
             for col in zip(*strobes, strict=True)]
    waits = []
    for w in range(cfg.warps):
        waits.append([WAIT_NAMES[x] for x in dump.sample(f"{p}w{w}_wait", times)])
    rv, rw, rpc = (dump.sample(name, times) for name in (
        f"retire__{core}__valid", f"{p}late_wb.retire__warp", f"retire__{core}__pc"))
    retire = [(rw[i], rpc[i]) if rv[i] else None for i in range(len(times))]
    return Pipeline(core, cfg, cycles, stages, stall, waits, retire,
                    dump.sample(f"{p}accept", times), dump.sample(f"{p}id_word", times),
                    dump.sample(f"{p}mem_wb.deferred", times))


WARP_COLOURS = "tab10"
REASON_COLOURS = {"issue": "#222222", "ready": "#969696", "idle": "#eeeeee",
                  "fetch": "#a6cee3", "memory": "#8b0000", "hazard": "#ffd92f",
                  "scoreboard": "#ffd92f", "sfu": "#6a3d9a", "structural": "#6a3d9a",
                  "barrier": "#b15928"}
"""Colours of the stall and wait reasons (``issue``: it issued)."""


def plot_pipeline(pipe: Pipeline, out: str | Path, first: int | None = None,
                  count: int = 200) -> Path:
    """A PNG of ``count`` cycles from cycle ``first`` (default: the first with a fetch): the
    nine stages coloured by the warp in them, the reason ``is`` stalled, and each warp's wait
    reason; stage occupancy over the whole dump in %; legends for both colourings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    n = len(pipe.cycles)
    if first is None:
        busy = [i for i in range(n) if pipe.stages["if"][i] is not None]
        i0 = busy[0] if busy else 0
    else:
        i0 = first - pipe.cycles[0] if pipe.cycles else 0
        if not 0 <= i0 < n:
            raise WaveError(f"--first {first}: the dump has cycles {pipe.cycles[0]}.."
                            f"{pipe.cycles[-1]}")
    i1 = min(n, i0 + count)
    W = pipe.config.warps
    cmap = plt.get_cmap(WARP_COLOURS)
    reasons = list(REASON_COLOURS)
    rows = len(STAGES) + 1 + W
    import numpy as np

    img = np.ones((rows, max(1, i1 - i0), 4))
    for r, st in enumerate(STAGES):
        for i in range(i0, i1):
            occ = pipe.stages[st][i]
            if occ is not None:
                img[r, i - i0] = cmap(occ[0] % 10)
    r_stall = len(STAGES)
    for i in range(i0, i1):
        reason = pipe.stall[i] or "issue"
        img[r_stall, i - i0] = to_rgba(REASON_COLOURS[reason])
    for w in range(W):
        for i in range(i0, i1):
            img[r_stall + 1 + w, i - i0] = to_rgba(REASON_COLOURS[pipe.waits[w][i]])
    fig, ax = plt.subplots(figsize=(min(20, 3 + (i1 - i0) * 0.07), 1.2 + 0.32 * rows))
    x0, x1 = pipe.cycles[i0] if n else 0, (pipe.cycles[i1 - 1] + 1) if n else 1
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=(x0, x1, rows, 0))
    occ = [100.0 * sum(o is not None for o in pipe.stages[s]) / max(1, n) for s in STAGES]
    labels = [f"{s} ({p:.0f}%)" for s, p in zip(STAGES, occ, strict=True)]
    labels += ["is stall"] + [f"w{w} wait" for w in range(W)]
    ax.set_yticks([r + 0.5 for r in range(rows)], labels, fontsize=8)
    ax.axhline(len(STAGES), color="black", lw=0.8)
    ax.set_xlabel("cycle")
    ax.set_title(f"{pipe.config.cores} core(s) x {W} warps x {pipe.config.lanes} lanes: "
                 f"core {pipe.core}, cycles {x0}..{x1 - 1} (stage occupancy over all "
                 f"{n} cycles)", fontsize=9)
    warp_leg = [Patch(color=cmap(w % 10), label=f"warp {w}") for w in range(W)]
    shown = {pipe.stall[i] or "issue" for i in range(i0, i1)}
    shown |= {pipe.waits[w][i] for w in range(W) for i in range(i0, i1)}
    reason_leg = [Patch(color=REASON_COLOURS[r], label=r) for r in reasons if r in shown]
    leg1 = ax.legend(handles=warp_leg, title="stage: warp", loc="upper left",
                     bbox_to_anchor=(1.01, 1.0), fontsize=7, title_fontsize=8)
    ax.add_artist(leg1)
    ax.legend(handles=reason_leg, title="stall / wait", loc="lower left",
              bbox_to_anchor=(1.01, 0.0), fontsize=7, title_fontsize=8)
    fig.tight_layout()
    return _save(fig, out)


# --- Konata ----------------------------------------------------------------------------------

@dataclass
class Record:
    """One fetched instruction: its stages ``(name, first cycle index)`` in order, and how it
    ended (``retired`` True, or squashed) at which cycle index."""

    warp: int
    pc: int
    start: int
    word: int | None = None
    stages: list[tuple[str, int]] = field(default_factory=list)
    end: int | None = None
    retired: bool = False

    def enter(self, stage: str, i: int) -> None:
        if not self.stages or self.stages[-1][0] != stage:
            self.stages.append((stage, i))


BACK_END = ("rr", "ex1", "ex2", "mem", "wb")


def konata_records(pipe: Pipeline) -> list[Record]:  # noqa: C901 - one pass, stage by stage
    """Follow every fetch of the core from ``if`` to retirement (or its squash).

    A fetch is a record from ``if``; in ``id`` it is dropped (squashed) unless ``accept``
    is high; then it waits in its warp's instruction buffer, in order, named after what
    holds it (``ib`` behind an older instruction, else its warp's wait reason) until ``is``
    issues it; each back-end register holds one instruction, taken from the stage before or
    kept while stalled; ``wb`` retires it, unless it is deferred (``lwb``: until the retire
    port shows its late write-back). An instruction that leaves the pipeline any other way
    (a fault, a flush) is squashed there."""
    n = len(pipe.cycles)
    out: list[Record] = []
    fetch: dict[str, Record | None] = {"if": None, "id": None}
    buffers: dict[int, list[Record]] = {}
    back: dict[str, Record | None] = dict.fromkeys(BACK_END)
    late: list[Record] = []

    def squash(rec: Record, i: int) -> None:
        rec.end, rec.retired = i, False

    for i in range(n):
        # back end, from wb backwards so each stage sees the previous cycle's occupants
        new_back: dict[str, Record | None] = dict.fromkeys(BACK_END)
        for k, st in enumerate(BACK_END):
            occ = pipe.stages[st][i]
            if occ is None:
                continue
            prev_st = BACK_END[k - 1] if k else None
            cands = [back[st]] + ([back[prev_st]] if prev_st else [])
            if prev_st is None:
                cands.append(_issued(pipe, buffers, i - 1))
            rec = next((c for c in reversed(cands)
                        if c is not None and (c.warp, c.pc) == occ), None)
            if rec is None:  # not seen earlier (the dump starts mid-run): begin here
                rec = Record(occ[0], occ[1], i)
                out.append(rec)
            rec.enter(st, i)
            new_back[st] = rec
        placed = {id(r) for r in new_back.values() if r is not None}
        for st, rec in back.items():
            if rec is None or id(rec) in placed:
                continue
            if st == "wb":
                if pipe.deferred[i - 1]:
                    rec.enter("lwb", i)
                    late.append(rec)
                else:
                    rec.end, rec.retired = i, True
            else:
                squash(rec, i)
        # an instruction issued in cycle i-1 that rr does not hold now was squashed
        issued = _issued(pipe, buffers, i - 1, pop=True)
        if issued is not None and id(issued) not in placed:
            squash(issued, i)
        back = new_back
        # the port shows a late write-back in a cycle in which wb retires nothing of its own
        r = pipe.retire[i]
        wb_retires = back["wb"] is not None and not pipe.deferred[i]
        if r is not None and late and not wb_retires:
            match = next((x for x in late if (x.warp, x.pc) == r), None)
            if match is not None:
                late.remove(match)
                match.end, match.retired = i + 1, True
        # front end: id takes what if held; if takes a new fetch
        prev_if, prev_id = fetch["if"], fetch["id"]
        if prev_id is not None:
            if pipe.accept[i - 1]:
                buffers.setdefault(prev_id.warp, []).append(prev_id)
            else:
                squash(prev_id, i)
        fetch["id"] = None
        occ = pipe.stages["id"][i]
        if occ is not None:
            rec = prev_if if prev_if is not None and (prev_if.warp, prev_if.pc) == occ else None
            if rec is None:
                rec = Record(occ[0], occ[1], i)
                out.append(rec)
            rec.enter("id", i)
            rec.word = pipe.word[i]
            fetch["id"] = rec
        elif prev_if is not None:
            squash(prev_if, i)
        occ = pipe.stages["if"][i]
        fetch["if"] = None
        if occ is not None:
            rec = Record(occ[0], occ[1], i)
            rec.enter("if", i)
            out.append(rec)
            fetch["if"] = rec
        # the buffers: the head waits for a reason, the others behind it; is issues one
        is_occ = pipe.stages["is"][i]
        for w, buf in buffers.items():
            for j, rec in enumerate(buf):
                if is_occ is not None and j == 0 and is_occ == (rec.warp, rec.pc):
                    rec.enter("is", i)
                elif j == 0:
                    rec.enter(pipe.waits[w][i] if w < len(pipe.waits) else "is", i)
                else:
                    rec.enter("ib", i)
        if is_occ is not None:
            buf = buffers.get(is_occ[0], [])
            # older entries of that warp not at the head were flushed (a new block)
            while buf and (buf[0].warp, buf[0].pc) != is_occ:
                squash(buf.pop(0), i)
    for rec in out:
        if rec.end is None:
            rec.end = n
    return out


def _issued(pipe: Pipeline, buffers: dict[int, list[Record]], i: int,
            pop: bool = False) -> Record | None:
    """The record ``is`` issued in cycle ``i`` (the head of its warp's buffer)."""
    if i < 0:
        return None
    occ = pipe.stages["is"][i]
    if occ is None:
        return None
    buf = buffers.get(occ[0], [])
    if buf and (buf[0].warp, buf[0].pc) == occ:
        return buf.pop(0) if pop else buf[0]
    return None


def write_konata(pipe: Pipeline, out: str | Path) -> tuple[Path, list[Record]]:
    """A Kanata 0004 log for the Konata viewer: one record per fetch, labelled with the
    disassembly, its stages (waits in the buffer named by their reason), retired (``R`` type
    0) or squashed (type 1). Returns the path and the records."""
    from simtgpu.assembler import disassemble_word

    recs = konata_records(pipe)
    events: dict[int, list[str]] = {}
    recs_sorted = sorted(recs, key=lambda r: (r.start, r.stages[0][1] if r.stages else 0))
    retire_no = 0
    ends = sorted((r.end, k) for k, r in enumerate(recs_sorted))
    order = {k: None for k in range(len(recs_sorted))}
    for _, k in ends:
        if recs_sorted[k].retired:
            order[k] = retire_no
            retire_no += 1
    for k, r in enumerate(recs_sorted):
        ev = events.setdefault(r.start, [])
        ev.append(f"I\t{k}\t{k}\t{r.warp}")
        text = _label(disassemble_word, r)
        ev.append(f"L\t{k}\t0\tw{r.warp} {r.pc:04x}: {text}")
        ev.append(f"L\t{k}\t1\tcore {pipe.core} warp {r.warp} pc {r.pc:#x}: {text}")
        for j, (st, c) in enumerate(r.stages):
            if j:
                events.setdefault(c, []).append(f"E\t{k}\t0\t{r.stages[j - 1][0]}")
            events.setdefault(c, []).append(f"S\t{k}\t0\t{st}")
        end = events.setdefault(r.end, [])
        if r.stages:
            end.append(f"E\t{k}\t0\t{r.stages[-1][0]}")
        end.append(f"R\t{k}\t{order[k] if r.retired else 0}\t{0 if r.retired else 1}")
    c0 = pipe.cycles[0] if pipe.cycles else 0
    lines = ["Kanata\t0004", f"C=\t{c0 + min(events, default=0)}"]
    last = None
    for c in sorted(events):
        if last is not None:
            lines.append(f"C\t{c - last}")
        lines += events[c]
        last = c
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return out, recs


def _label(disassemble_word, rec: Record) -> str:
    if rec.word is None:
        return "(fetched before the dump began)"
    try:
        return str(disassemble_word(rec.word, rec.pc))
    except Exception:  # a word that does not decode is still worth seeing
        return f".word {rec.word:#010x}"


# --- viewer layouts --------------------------------------------------------------------------

def layout_signals(dump: Dump) -> list[tuple[str, list[tuple[str, str]]]]:
    """The layout both viewers open: groups of (full name, format) in pipeline order — per
    core, per stage ``valid warp pc`` (and the instruction word where the stage has one),
    then per warp ``pc active wait``, then the stall strobes and the retire port. Only
    signals the dump has are listed."""
    cfg = dump.config()
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    top = [("clk", "bin"), ("rst", "bin"), ("busy", "bin"), ("done", "bin"), ("fault", "bin")]
    groups.append(("harness", [(dump.find(n), f) for n, f in top if dump.has(n)]))
    for c in range(cfg.cores):
        p = f"core{c}."
        for st, reg in STAGE_SIGNALS.items():
            fields = [("valid", "bin"), ("warp", "dec"), ("pc", "hex")]
            if st in ("rr", "ex1", "ex2", "mem", "wb", "is"):
                fields.append(("word", "hex"))
            sigs = [(dump.find(f"{p}{reg}.{f}"), fmt) for f, fmt in fields
                    if dump.has(f"{p}{reg}.{f}")]
            if st == "id" and dump.has(f"{p}id_word"):
                sigs.append((dump.find(f"{p}id_word"), "hex"))
            groups.append((f"core{c} {st}", sigs))
        for w in range(cfg.warps):
            sigs = [(dump.find(f"{p}w{w}_{f}"), fmt) for f, fmt in
                    (("pc", "hex"), ("active", "bin"), ("wait", "wait"))
                    if dump.has(f"{p}w{w}_{f}")]
            groups.append((f"core{c} warp {w}", sigs))
        stalls = [(dump.find(f"{p}stalls.stall_{r}"), "bin") for r in STALL_REASONS
                  if dump.has(f"{p}stalls.stall_{r}")]
        groups.append((f"core{c} stalls", stalls))
        retire = [(dump.find(f"retire__{c}__{f}"), fmt) for f, fmt in
                  (("valid", "bin"), ("warp", "dec"), ("pc", "hex"), ("exec", "bin"))
                  if dump.has(f"retire__{c}__{f}")]
        groups.append((f"core{c} retire", retire))
    return [(g, s) for g, s in groups if s]


def write_wait_filter(path: str | Path) -> Path:
    """A GTKWave translate filter file that shows ``w<w>_wait`` values by name."""
    path = Path(path)
    path.write_text("".join(f"{v} {name}\n" for v, name in enumerate(WAIT_NAMES)))
    return path


def write_gtkw(dump: Dump, out: str | Path | None = None) -> Path:
    """A GTKWave save file next to the dump (``x.fst`` -> ``x.gtkw``): the pipeline layout of
    :func:`layout_signals`, groups as comments, buses in hex, the wait reasons by name."""
    out = Path(out) if out else dump.path.with_suffix(".gtkw")
    filt = write_wait_filter(out.with_name(out.stem + ".wait.txt"))
    flags = {"bin": "@28", "dec": "@24", "hex": "@22", "wait": "@2024"}
    # open on about 200 cycles from the first fetch
    edges = dump.edges()
    fetch = dump.series(f"core0.{STAGE_SIGNALS['if']}.valid")
    first = next((t for t, v in fetch if v), edges[0] if edges else 0)
    period = edges[1] - edges[0] if len(edges) > 1 else 1
    start = max(0, first - 5 * period)
    zoom = -math.log2(max(1e-9, 200 * period / 5))  # measured: z shows 10 * 2**(-z-1) units
    lines = ["[*] simtgpu pipeline layout (simtgpu waves layout)",
             f'[dumpfile] "{dump.path.resolve()}"', f"[timestart] {start}",
             "[size] 1600 1000", "[pos] -1 -1", f"*{zoom:.6f} -1",
             "[sst_width] 260", "[signals_width] 320", "[sst_expanded] 1",
             "[sst_vpaned_height] 300"]
    for group, sigs in layout_signals(dump):
        lines.append("@200")
        lines.append(f"-{group}")
        for name, fmt in sigs:
            if fmt == "wait":
                lines.append(f"^1 {filt.resolve()}")
            lines.append(flags[fmt])
            width = dump.width(name)
            lines.append(name + (f"[{width - 1}:0]" if width > 1 else ""))  # GTKWave's name
    lines.append("[pattern_trace] 1")
    lines.append("[pattern_trace] 0")
    out.write_text("\n".join(lines) + "\n")
    return out


def write_surfer(dump: Dump, out: str | Path | None = None) -> Path:
    """A Surfer command file next to the dump (``x.fst`` -> ``x.surfer.txt``; open with
    ``surfer x.fst -c x.surfer.txt``): the same signals, with a divider per group. Verilator
    names struct fields with dots (``mem_wb.valid`` is one variable of scope ``core0``), so
    each is added by its name within its scope (``scope_select``, ``variable_add_from_scope``),
    not by a dotted path that Surfer would split at the last dot."""
    out = Path(out) if out else dump.path.with_name(dump.path.stem + ".surfer.txt")
    lines = []
    scope = None
    for group, sigs in layout_signals(dump):
        lines.append(f"divider_add {group}")
        for full, _ in sigs:
            name = dump.vars[full].name
            where = full[:-len(name) - 1]
            if where != scope:
                lines.append(f"scope_select {where}")
                scope = where
            lines.append(f"variable_add_from_scope {name}")
    lines.append("zoom_fit")
    out.write_text("\n".join(lines) + "\n")
    return out
