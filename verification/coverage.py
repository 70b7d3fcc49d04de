"""Functional coverage of executed programs (cocotb-coverage), sampled from retire traces.

The model reconstructs what every warp did from a trace (ISS or RTL, same format): each
warp's register file (from the register writes), its SIMT stack depth (from ssy/bra/sync/exit
and the masks), and from those the operands, addresses and hazards of every instruction.

Cover points (bins listed in :data:`MODEL` order in the report):

* ``opcode``: every mnemonic of ``isa/``.
* ``int_operand`` / ``fp_operand``: edge classes of the source operands of integer and FP
  instructions (zero, one, -1, INT_MIN, INT_MAX, small, large / +-0, +-inf, NaN, denormal,
  normal).
* ``hazard``: read-after-write distance 0..9 (instructions of the same warp in between) and
  ``10+``, crossed with the producing unit class.
* ``divergence_depth``: reconvergence brackets open on the warp's stack (0..5), crossed with
  whether the warp is diverged.
* ``mask``: the executing-lane pattern (full, none, single, low half, high half, alternating,
  other), crossed with the instruction class.
* ``bank_conflict``: the shared-memory bank-conflict degree (word-interleaved banks, one per
  lane) of ``lds``/``sts``/``atoms``.
* ``coalescing``: bus lines touched by a warp's ``ldg``/``stg``/``atom`` (line = lanes words).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

try:
    from cocotb_coverage.coverage import CoverCross, CoverPoint, coverage_db, coverage_section
except ImportError as e:  # a plain install: the benches' packages are the 'verify' extra
    raise ImportError(f"{e}: simtgpu's verification needs the 'verify' extra: "
                      "pip install 'simtgpu[verify]'") from None
from simtgpu.isa import INSTRUCTIONS, Sem, decode

from .launch import KernelLaunch
from .random_programs import NOT_GENERATED

__all__ = ["CoverageModel"]

MNEMONICS = [i.mnemonic for i in INSTRUCTIONS if i.mnemonic not in NOT_GENERATED]
"""The opcode bins: every instruction the random programs can use on the RTL."""
INT_CLASSES = ["zero", "one", "minus_one", "int_min", "int_max", "small", "large"]
FP_CLASSES = ["+0", "-0", "+inf", "-inf", "nan", "denormal", "normal"]
HAZARD_DISTANCES = [str(d) for d in range(10)] + ["10+"]
PRODUCERS = ["alu", "mul", "fp", "sfu", "load", "atomic", "warp_op", "special"]
DEPTHS = [0, 1, 2, 3, 4, 5]
MASKS = ["full", "none", "single", "low_half", "high_half", "alternating", "other"]
MASK_CLASSES = ["alu", "mul", "fp", "sfu", "memory", "atomic", "warp_op", "control", "branch"]
MAX_DEGREE = 8

_SEM_CLASS = {
    Sem.INT: "alu", Sem.INT_IMM: "alu", Sem.CONST: "alu", Sem.ICMP: "alu", Sem.SELECT: "alu",
    Sem.PLOGIC: "alu", Sem.MUL: "mul", Sem.FP: "fp", Sem.FCMP: "fp", Sem.CVT: "fp",
    Sem.HALF: "fp", Sem.MMA: "fp", Sem.SFU: "sfu", Sem.LOAD: "memory", Sem.STORE: "memory",
    Sem.ATOMIC: "atomic",
    Sem.SHUFFLE: "warp_op", Sem.VOTE: "warp_op", Sem.SREG: "control", Sem.PARAM: "control",
    Sem.CONTROL: "control", Sem.FENCE: "control", Sem.BARRIER: "control",
    Sem.BRANCH: "branch",
}
_PRODUCER = {
    Sem.INT: "alu", Sem.INT_IMM: "alu", Sem.CONST: "alu", Sem.SELECT: "alu", Sem.MUL: "mul",
    Sem.FP: "fp", Sem.CVT: "fp", Sem.HALF: "fp", Sem.MMA: "fp", Sem.SFU: "sfu",
    Sem.LOAD: "load", Sem.ATOMIC: "atomic",
    Sem.SHUFFLE: "warp_op", Sem.VOTE: "warp_op", Sem.SREG: "special", Sem.PARAM: "special",
}
_FP_SRC = (Sem.FP, Sem.FCMP, Sem.SFU)
_INT_SRC = (Sem.INT, Sem.INT_IMM, Sem.ICMP, Sem.MUL, Sem.SELECT)

_instances = itertools.count()


def int_class(v: int) -> str:
    v &= 0xFFFF_FFFF
    if v == 0:
        return "zero"
    if v == 1:
        return "one"
    if v == 0xFFFF_FFFF:
        return "minus_one"
    if v == 0x8000_0000:
        return "int_min"
    if v == 0x7FFF_FFFF:
        return "int_max"
    if v < 0x10000 or v > 0xFFFF_0000:
        return "small"
    return "large"


def fp_class(v: int) -> str:
    exp, mant, neg = (v >> 23) & 0xFF, v & 0x7FFFFF, v >> 31 & 1
    if exp == 0:
        return ("-0" if neg else "+0") if mant == 0 else "denormal"
    if exp == 0xFF:
        return "nan" if mant else ("-inf" if neg else "+inf")
    return "normal"


def mask_class(ex: int, lanes: int) -> str:
    full = (1 << lanes) - 1
    if ex == full:
        return "full"
    if ex == 0:
        return "none"
    if ex & (ex - 1) == 0:
        return "single"
    half = lanes // 2
    if ex == (1 << half) - 1:
        return "low_half"
    if ex == full ^ ((1 << half) - 1):
        return "high_half"
    alt = int("01" * (lanes // 2), 2)
    if ex in (alt, full ^ alt):
        return "alternating"
    return "other"


@dataclass
class _Warp:
    regs: np.ndarray  # (32, lanes) uint32
    writer: dict  # reg -> (index in the warp's stream, producer class)
    stack: list  # (kind, pc, mask)
    live: int
    n: int = 0


class CoverageModel:
    """Coverage database of one regression (cocotb-coverage under a unique prefix)."""

    def __init__(self, name: str = "simtgpu") -> None:
        self.prefix = f"{name}{next(_instances)}"
        p = self.prefix
        self.hits: Counter = Counter()
        self._seen: set = set()
        self.programs = 0
        self.instructions = 0

        def cp(name: str, bins: list, idx: int) -> CoverPoint:
            return CoverPoint(f"{p}.{name}", xf=lambda *a, i=idx: a[i], bins=bins)

        self._op = coverage_section(cp("opcode", MNEMONICS, 0))(lambda op: None)
        self._int = coverage_section(cp("int_operand", INT_CLASSES, 0))(lambda c: None)
        self._fp = coverage_section(cp("fp_operand", FP_CLASSES, 0))(lambda c: None)
        self._haz = coverage_section(
            cp("hazard_distance", HAZARD_DISTANCES, 0), cp("hazard_producer", PRODUCERS, 1),
            CoverCross(f"{p}.hazard_x_producer",
                       items=[f"{p}.hazard_distance", f"{p}.hazard_producer"]),
        )(lambda d, u: None)
        self._depth = coverage_section(
            cp("divergence_depth", DEPTHS, 0), cp("diverged", [False, True], 1),
            CoverCross(f"{p}.depth_x_diverged",
                       items=[f"{p}.divergence_depth", f"{p}.diverged"],
                       ign_bins=[(0, True)]),
        )(lambda d, v: None)
        self._mask = coverage_section(
            cp("mask", MASKS, 0), cp("mask_class", MASK_CLASSES, 1),
            CoverCross(f"{p}.mask_x_class", items=[f"{p}.mask", f"{p}.mask_class"]),
        )(lambda m, c: None)
        self._bank = coverage_section(cp("bank_conflict", list(range(1, MAX_DEGREE + 1)), 0)
                                      )(lambda d: None)
        self._coal = coverage_section(cp("coalescing", list(range(1, MAX_DEGREE + 1)), 0)
                                      )(lambda d: None)

    def _hit(self, fn, key: str, *args) -> None:
        self.hits[(key, args)] += 1
        if (key, args) not in self._seen:
            self._seen.add((key, args))
            fn(*args)

    # --- sampling ---------------------------------------------------------------------
    def sample(self, launch: KernelLaunch, trace: Iterable[dict], lanes: int) -> None:
        """Sample every retired instruction of ``trace`` (one launch of ``launch``)."""
        self.programs += 1
        decoded: dict[int, object] = {}
        warps: dict[tuple, _Warp] = {}
        tpb = launch.threads_per_block
        full = (1 << lanes) - 1
        for ln in trace:
            key = (*ln["block"], ln["warp"])
            w = warps.get(key)
            if w is None:
                live_lanes = min(lanes, tpb - ln["warp"] * lanes)
                w = warps[key] = _Warp(np.zeros((32, lanes), np.uint32), {}, [],
                                       (1 << live_lanes) - 1)
            pc = ln["pc"]
            d = decoded.get(pc)
            if d is None:
                d = decoded[pc] = decode(int.from_bytes(launch.code[pc:pc + 4], "little"))
            self._instr(w, d, ln, lanes, full)
            w.n += 1
        self.instructions += sum(w.n for w in warps.values())

    def _instr(self, w: _Warp, d, ln: dict, lanes: int, full: int) -> None:
        instr = d.instr
        s = instr.sem
        ex, mask = ln["exec"], ln["mask"]
        lane_ids = [lane for lane in range(lanes) if ex >> lane & 1]
        self._hit(self._op, "opcode", instr.mnemonic)
        self._hit(self._mask, "mask", mask_class(ex, lanes), _SEM_CLASS[s])
        depth = sum(1 for e in w.stack if e[0] == "S")
        self._hit(self._depth, "depth", min(depth, 5), mask != w.live)
        # Source registers, through the operand table (field names say which rsN).
        regs = [getattr(d, o.fields[0]) for o in instr.operands
                if not o.is_dst and o.kind.value in ("reg", "mem", "mem_reg")]
        regs = [r for r in regs if r != 0]
        if regs and ex:
            best = None
            for r in regs:
                wr = w.writer.get(r)
                if wr is not None and (best is None or wr[0] > best[0]):
                    best = wr
            if best is not None:
                dist = w.n - best[0] - 1
                self._hit(self._haz, "hazard", str(dist) if dist < 10 else "10+", best[1])
        if lane_ids and regs:
            vals = w.regs[regs][:, lane_ids]
            if s in _INT_SRC:
                for c in {int_class(int(v)) for v in vals.ravel()}:
                    self._hit(self._int, "int_operand", c)
            elif s in _FP_SRC:
                for c in {fp_class(int(v)) for v in vals.ravel()}:
                    self._hit(self._fp, "fp_operand", c)
        if s in (Sem.LOAD, Sem.STORE, Sem.ATOMIC) and lane_ids:
            addr = (w.regs[d.rs1, lane_ids].astype(np.int64) + d.imm) & 0xFFFF_FFFF
            if instr.mnemonic in ("lds", "sts") or instr.mnemonic.startswith("atoms."):
                words = np.unique(addr >> 2)
                banks = Counter(int(x) % lanes for x in words)
                self._hit(self._bank, "bank", min(max(banks.values()), MAX_DEGREE))
            else:
                lines = len(np.unique(addr // (4 * lanes)))
                self._hit(self._coal, "coalescing", min(lines, MAX_DEGREE))
        # Effects on the reconstructed state.
        if ln.get("rd") is not None and ln.get("values") is not None and lane_ids:
            w.regs[ln["rd"], lane_ids] = np.asarray(ln["values"], dtype=np.uint32)
        if instr.writes_reg and d.rd != 0:
            w.writer[d.rd] = (w.n, _PRODUCER.get(s, "alu"))
        self._stack(w, instr.mnemonic, ln, d, full)

    @staticmethod
    def _stack(w: _Warp, m: str, ln: dict, d, full: int) -> None:
        ex, mask, pc = ln["exec"], ln["mask"], ln["pc"]
        if m == "ssy":
            w.stack.append(("S", 0, mask))
        elif m == "bra" and ex not in (0, mask):
            top = w.stack[-1] if w.stack else None
            if top is not None and top[0] == "D" and top[1] == pc + 4:
                w.stack[-1] = ("D", pc + 4, top[2] | (mask & ~ex))
            else:
                w.stack.append(("D", pc + 4, mask & ~ex))
        elif m == "sync":
            while w.stack:
                e = w.stack.pop()
                if e[2] & w.live:
                    break
        elif m == "exit":
            w.live &= ~ex
            if not (mask & ~ex):
                while w.stack:
                    e = w.stack.pop()
                    if e[2] & w.live:
                        break

    # --- results --------------------------------------------------------------------------
    def points(self) -> list[tuple[str, object]]:
        names = ["opcode", "int_operand", "fp_operand", "hazard_distance", "hazard_producer",
                 "hazard_x_producer", "divergence_depth", "depth_x_diverged", "mask",
                 "mask_class", "mask_x_class", "bank_conflict", "coalescing"]
        return [(n, coverage_db[f"{self.prefix}.{n}"]) for n in names]

    def percent(self, name: str) -> float:
        item = coverage_db[f"{self.prefix}.{name}"]
        return 100.0 * item.coverage / item.size

    def holes(self, name: str) -> list:
        item = coverage_db[f"{self.prefix}.{name}"]
        return [b for b, n in item.detailed_coverage.items() if not n]

    def crosses_percent(self) -> float:
        cov = size = 0
        for n in ("hazard_x_producer", "depth_x_diverged", "mask_x_class"):
            item = coverage_db[f"{self.prefix}.{n}"]
            cov += item.coverage
            size += item.size
        return 100.0 * cov / size

    def report(self, title: str = "Functional coverage") -> str:
        """Markdown: one row per cover point with its holes."""
        lines = [f"# {title}", "",
                 f"{self.programs} launches, {self.instructions} warp-instructions sampled.",
                 "", "| cover point | bins hit | bins | coverage | holes |",
                 "| --- | ---: | ---: | ---: | --- |"]
        for name, item in self.points():
            holes = [b for b, n in item.detailed_coverage.items() if not n]
            shown = ", ".join(str(h) for h in holes[:12]) + (" ..." if len(holes) > 12 else "")
            lines.append(f"| {name} | {item.coverage} | {item.size} | "
                         f"{100.0 * item.coverage / item.size:.1f} % | {shown or '-'} |")
        lines += ["", f"All crosses together: {self.crosses_percent():.1f} %.", ""]
        return "\n".join(lines)
