"""Constrained-random kernels that are valid by construction and always terminate.

A program is generated as assembly text from a seed (so every failure is reproduced by its
seed alone). The constraints keep every program meaningful on any correct model:

* Registers: ``r1`` global thread id, ``r2`` the thread's column in ``out``, ``r3`` its row
  in ``in``, ``r4`` the linear tid, ``r5`` its shared-memory slot, ``r6``/``r7`` the warp's
  private global/shared atomic words, ``r28`` the base of ``in``, ``r29`` the contended
  counter, ``r30`` a shared table (written once before the first ``bar``, then only read at
  data-dependent indices), ``r8``-``r19`` data, ``r20``-``r23`` loop counters, ``r24``-``r27``
  and ``r31`` address temps.
  Predicates ``p0``-``p4`` are data, ``p5`` if-conditions, ``p6`` loop conditions.
* Memory: loads from ``in`` (own row, columns, a broadcast word, or a data-dependent masked
  index: always in range and aligned); stores only to the thread's own ``out`` column and
  shared slot; atomics that return a value only on the warp's private words (lanes of one
  warp act in lane order, so the values are deterministic); cross-warp contention only with
  integer ``atom.add``/``min``/``max``/``xor``, one word per operation (they commute only with
  themselves), whose result is discarded (``rd = r0``).
* Control: every divergent branch is bracketed (``ssy``/``bra``/``sync`` per
  docs/execution-model.md); if/else and loops nest up to 5 deep (10 stack entries); loop trip
  counts are 1..4 per thread (or uniform); barriers only at the top level, before any exit,
  as a write / ``bar`` / read-a-neighbour / ``bar`` exchange through shared memory; ``mma``
  (whole-warp, aligned groups among ``r8``/``r12``/``r16``, from a third random stream) only
  at the top level, before any exit, in blocks of whole warps.
* No ``clock`` reads (the ISS counts instructions, the RTL cycles).

The epilogue stores every data register and the predicates to ``out``, so final memory holds
the whole architectural state of every thread that did not exit.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np
from simtgpu.isa import INSTRUCTIONS, Sem
from simtgpu.isa.instructions import ATOMIC_OPS, HALF2_OPS, HALF_FORMATS

from .fp_vectors import fp_operands, int_operands
from .launch import KernelLaunch, launch_from_asm

__all__ = ["FAULT_KINDS", "WILD_EDITS", "GenOptions", "RandomProgram", "generate", "random_launch"]

DATA = [f"r{i}" for i in range(8, 20)]
DPRED = [f"p{i}" for i in range(5)]
OUT_SLOTS = 24  # 0..11 random stores, 12..23 epilogue register dump, 23 = predicates
IN_WORDS = 8  # words of the thread's own row of ``in``
IN_TOTAL = 256  # words of ``in`` reachable by masked indices (power of two)
SH_WORDS = 4  # shared words per thread

_INT_RR = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.INT]
_INT_RI = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.INT_IMM]
_MUL = ["mul", "mulhi", "mulhu"]
_FP2 = ["fadd", "fsub", "fmul", "fmin", "fmax"]
_ATOMICS_FIRST = [*ATOMIC_OPS[:5], "cas"]  # add min max exch fadd, cas
_ATOMICS_LATER = list(ATOMIC_OPS[5:])  # and or xor fmin fmax: drawn from a stream of their own
_CONTENDED = ("add", "min", "max", "xor")
"""Atomics that commute with themselves whatever the operands, one contended word each (of
the four at ``atom[0:4]``); ``fmin`` does not (a -0.0 operand stores -0.0)."""
_FP1 = ["fabs", "fneg"]
_CVT = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.CVT]
_HCVT = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.HALF and i.family == "hcvt"]
_HALF2 = [f"{op}.{fmt}" for op in HALF2_OPS for fmt in HALF_FORMATS]
NOT_GENERATED: frozenset[str] = frozenset()
"""Instructions the generator leaves out: those the RTL core does not execute yet
(``rtl.core.ABSENT_INSTRUCTIONS``, checked equal by tests/rtl/system)."""
_MMA = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.MMA]
_MMA_GROUPS = [r for r in DATA if int(r[1:]) % 4 == 0]  # r8, r12, r16
_SFU = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.SFU]
_ICMP = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.ICMP]
_FCMP = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.FCMP]
_PLOGIC = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.PLOGIC]
_SHFL = [i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.SHUFFLE]
_SREGS = ["tid.x", "ntid.x", "ctaid.x", "nctaid.x", "laneid", "warpid", "nwarps", "warpsize",
          "tid", "tid.y", "ntid.y"]


@dataclass
class GenOptions:
    """Knobs of the generator (defaults give a mix of everything)."""

    min_stmts: int = 12
    max_stmts: int = 40
    max_depth: int = 5
    barriers: bool = True
    exits: bool = True
    atomics: bool = True
    fp: bool = True
    shuffles: bool = True
    half: bool = True  # fp16/bf16 conversions in place of half the int/float conversions
    mma: bool = True  # whole-warp mma between the top-level statements of full-warp blocks
    max_blocks: int = 3
    fault: bool = False  # one thread's faulting instruction injected (see FAULT_KINDS)
    wild: bool = False  # one to three control-flow edits outside these rules (see WILD_EDITS)


FAULT_KINDS: dict[str, list[str]] = {
    # what one thread (``p5``) runs; an entry whose text ends in ":" is a label
    "store_out_of_range": ["@p5 stg [r0+16], r0"],
    "load_misaligned": ["@p5 ldg r24, [r3+2]"],
    "shared_out_of_range": ["movi r24, {shared}", "@p5 lds r24, [r24]"],  # the first word past
    "param_out_of_range": ["@p5 ldparam r24, 12"],
    "atomic_misaligned": ["addi r24, r6, 2", "@p5 atom.add r0, [r24], r8"],
    "illegal": ["ssy fz_j", "@!p5 bra fz_e", ".word 0", "sync", "fz_e:", "sync", "fz_j:"],
    "divergent_bar": ["ssy fz_j", "@!p5 bra fz_e", "bar", "sync", "fz_e:", "sync", "fz_j:"],
    "exit_one": ["@p5 exit"],  # a later mma or bar of its warp faults
    "sync_alone": ["ssy fz_j", "@!p5 bra fz_e", "sync", "sync", "fz_e:", "sync", "fz_j:"],
    # no ssy: the thread's sync pops its warp's DIV entry and the thread is on no entry, so
    # its warp's last exit (or an enclosing sync) finds it live: STACK_UNDERFLOW, or it
    # rejoins at an enclosing if's end
    "lane_lost": ["@!p5 bra fz_e", "sync", "fz_e:"],
}
"""Faults :class:`GenOptions` ``fault`` injects: memory faults of each kind in ``mem``, an
illegal word at issue, a divergent ``bar`` in ex1, and control flow that leaves one lane
out of a warp (a later ``mma`` or ``bar`` may fault, or the stack underflow) or pops the
stack an extra time."""

WILD_EDITS = ("delete ssy", "delete sync", "double sync", "invert a forward branch's guard",
              "insert exit", "insert bar", "insert sync")
"""The control-flow edits of :class:`GenOptions` ``wild``: programs outside the generator's
rules, for launches of one warp (so which of its faults comes first is no scheduling
choice)."""


@dataclass
class RandomProgram:
    """A generated kernel and the launch shape it was generated for."""

    seed: int
    source: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    lanes: int
    features: set[str] = field(default_factory=set)


class _Gen:
    def __init__(self, seed: int, lanes: int, warps: int, opts: GenOptions):
        self.seed = seed
        self.r = random.Random(seed)
        # a second stream decides the half-precision forms, so the main stream (and with it
        # every program generated before they existed) stays the same
        self.hr = random.Random(seed ^ 0x16F16)
        self.ar = random.Random(seed ^ 0xA70A)  # likewise for the later atomics
        self.mr = random.Random(seed ^ 0x3A3A)  # a third for mma, likewise
        self.lanes = lanes
        self.opts = opts
        r = self.r
        max_threads = warps * lanes
        tpb = r.choice([max_threads, max_threads, r.randint(1, max_threads),
                        lanes, max(1, max_threads - 1)])
        if tpb > 1 and tpb % 2 == 0 and r.random() < 0.2:
            self.block = (tpb // 2, 2, 1)
        else:
            self.block = (tpb, 1, 1)
        self.tpb = tpb
        self.blocks = r.randint(1, opts.max_blocks)
        self.total = self.tpb * self.blocks
        self.wpb = -(-tpb // lanes)
        self.lines: list[str] = []
        self.label_n = 0
        self.exited = False
        self.features: set[str] = set()
        self.loop_regs_free = ["r20", "r21", "r22", "r23"]

    # --- helpers ---------------------------------------------------------------------
    def emit(self, text: str, guard: str = "") -> None:
        self.lines.append(f"{guard:>6} {text}" if guard else f"       {text}")

    def label(self, stem: str) -> str:
        self.label_n += 1
        return f"{stem}{self.label_n}"

    def d(self) -> str:
        return self.r.choice(DATA)

    def guard(self) -> str:
        r = self.r
        if r.random() < 0.75:
            return ""
        self.features.add("guard")
        return f"@{'!' if r.random() < 0.4 else ''}{r.choice(DPRED)}"

    def psrc(self) -> str:
        return ("!" if self.r.random() < 0.3 else "") + self.r.choice(DPRED + ["pt"])

    def const32(self, reg: str, value: int) -> None:
        value &= 0xFFFF_FFFF
        if value < 0x8000 or value >= 0xFFFF_8000:
            v = value - (1 << 32) if value >> 31 else value
            self.emit(f"movi {reg}, {v}")
        else:
            self.emit(f"lui {reg}, {value >> 16}")
            self.emit(f"lli {reg}, {value & 0xFFFF}")

    # --- statements -----------------------------------------------------------------
    def stmt(self, depth: int, in_loop: bool) -> None:
        r = self.r
        kinds = ["alu"] * 6 + ["mul", "cmp", "cmp", "sel", "sreg", "ldg", "ldg", "stg",
                               "lds", "sts", "ldt", "misc"]
        if self.opts.fp:
            kinds += ["fp", "fp", "fp", "cvt", "sfu"]
        if self.opts.atomics:
            kinds += ["atom", "atoms"]
        if self.opts.shuffles:
            kinds += ["shfl", "vote"]
        if depth < self.opts.max_depth:
            kinds += ["if", "ifelse", "loop"]
        if depth == 0 and not in_loop and self.opts.barriers and not self.exited:
            kinds += ["barrier"]
        if self.opts.exits and depth > 0 and r.random() < 0.3:
            kinds += ["exit"]
        if depth == 0:
            kinds += ["skip"]
            # an mma needs every lane of the warp: only at the top level (no divergence),
            # before any thread exits, in blocks of whole warps (the ISS faults otherwise)
            if (self.opts.mma and not self.exited and self.tpb % self.lanes == 0
                    and self.mr.random() < 0.15):
                self.s_mma()
        kind = r.choice(kinds)
        getattr(self, f"s_{kind}")(depth, in_loop)

    def block_of(self, depth: int, in_loop: bool, lo: int = 1, hi: int = 4) -> None:
        for _ in range(self.r.randint(lo, hi)):
            self.stmt(depth, in_loop)

    def s_alu(self, depth: int, in_loop: bool) -> None:
        r = self.r
        g = self.guard()
        k = r.random()
        if k < 0.5:
            self.emit(f"{r.choice(_INT_RR)} {self.d()}, {self.d()}, {self.d()}", g)
        elif k < 0.85:
            op = r.choice(_INT_RI)
            imm = r.randint(0, 31) if op.startswith("s") else r.randint(-1024, 1023)
            self.emit(f"{op} {self.d()}, {self.d()}, {imm}", g)
        else:
            op = r.choice(["movi", "lui", "lli"])
            imm = r.randint(-32768, 32767) if op == "movi" else r.randint(0, 65535)
            self.emit(f"{op} {self.d()}, {imm}", g)

    def s_mul(self, depth: int, in_loop: bool) -> None:
        r = self.r
        if r.random() < 0.25:
            self.emit(f"muli {self.d()}, {self.d()}, {r.randint(-1024, 1023)}", self.guard())
        else:
            self.emit(f"{r.choice(_MUL)} {self.d()}, {self.d()}, {self.d()}", self.guard())

    def s_cmp(self, depth: int, in_loop: bool) -> None:
        r = self.r
        k = r.random()
        pd = r.choice(DPRED)
        if k < 0.45:
            self.emit(f"{r.choice(_ICMP)} {pd}, {self.d()}, {self.d()}", self.guard())
        elif k < 0.75 and self.opts.fp:
            self.emit(f"{r.choice(_FCMP)} {pd}, {self.d()}, {self.d()}", self.guard())
        else:
            self.emit(f"{r.choice(_PLOGIC)} {pd}, {self.psrc()}, {self.psrc()}", self.guard())

    def s_sel(self, depth: int, in_loop: bool) -> None:
        self.emit(f"sel {self.d()}, {self.d()}, {self.d()}, {self.psrc()}", self.guard())

    def s_sreg(self, depth: int, in_loop: bool) -> None:
        self.emit(f"s2r {self.d()}, {self.r.choice(_SREGS)}", self.guard())

    def s_fp(self, depth: int, in_loop: bool) -> None:
        r = self.r
        k = r.random()
        # packed fp16 in place of a quarter of the FP32 forms (second stream, see s_cvt)
        half = self.opts.half and k < 0.85 and self.hr.random() < 0.25
        if half:
            self.features.add("half")
        if k < 0.6:
            op = r.choice(_FP2)  # drawn either way: the main stream stays the same
            if half:
                op = self.hr.choice(_HALF2)
            self.emit(f"{op} {self.d()}, {self.d()}, {self.d()}", self.guard())
        elif k < 0.85:
            op = self.hr.choice(["hfma2.f16", "hfma2.bf16"]) if half else "ffma"
            self.emit(f"{op} {self.d()}, {self.d()}, {self.d()}, {self.d()}", self.guard())
        else:
            self.emit(f"{r.choice(_FP1)} {self.d()}, {self.d()}", self.guard())

    def s_cvt(self, depth: int, in_loop: bool) -> None:
        op, dst, src = self.r.choice(_CVT), self.d(), self.d()
        guard = self.guard()
        if self.opts.half and self.opts.fp and self.hr.random() < 0.5:
            self.features.add("half")
            op = self.hr.choice(_HCVT)
            if op.endswith("2"):  # the packing forms read a second register
                src += f", {self.hr.choice(DATA)}"
        self.emit(f"{op} {dst}, {src}", guard)

    def s_sfu(self, depth: int, in_loop: bool) -> None:
        self.features.add("sfu")
        self.emit(f"{self.r.choice(_SFU)} {self.d()}, {self.d()}", self.guard())

    def s_mma(self) -> None:
        self.features.add("mma")
        mr = self.mr
        groups = [mr.choice(_MMA_GROUPS) for _ in range(4)]
        self.emit(f"{mr.choice(_MMA)} {', '.join(groups)}")

    def s_ldg(self, depth: int, in_loop: bool) -> None:
        r = self.r
        k = r.random()
        self.features.add("ldg")
        if k < 0.35:  # own row: strided across lanes
            self.emit(f"ldg {self.d()}, [r3+{4 * r.randrange(IN_WORDS)}]", self.guard())
        elif k < 0.55:  # broadcast word
            self.emit(f"ldg {self.d()}, [r28+{4 * r.randrange(64)}]", self.guard())
        elif k < 0.75:  # column: consecutive lanes, consecutive words
            self.emit("shli r24, r1, 2")
            self.emit("add r24, r24, r28")
            self.emit(f"ldg {self.d()}, [r24+{4 * r.randrange(16)}]", self.guard())
        else:  # data-dependent index, masked into range
            self.emit(f"andi r24, {self.d()}, {IN_TOTAL - 1}")
            self.emit("shli r24, r24, 2")
            self.emit("add r24, r24, r28")
            self.emit(f"ldg {self.d()}, [r24]", self.guard())

    def _out_addr(self, slot: int) -> str:
        off = 4 * slot * self.total
        if off < 1024:
            return f"[r2+{off}]"
        self.const32("r25", off)
        self.emit("add r25, r25, r2")
        return "[r25]"

    def s_stg(self, depth: int, in_loop: bool) -> None:
        self.features.add("stg")
        addr = self._out_addr(self.r.randrange(12))
        self.emit(f"stg {addr}, {self.d()}", self.guard())

    def s_lds(self, depth: int, in_loop: bool) -> None:
        self.features.add("lds")
        self.emit(f"lds {self.d()}, [r5+{4 * self.r.randrange(SH_WORDS)}]", self.guard())

    def s_ldt(self, depth: int, in_loop: bool) -> None:
        """Read the read-only shared table at a data-dependent index (any bank pattern)."""
        self.features.add("lds")
        size = 1 << (2 * self.tpb).bit_length() - 1
        if self.r.random() < 0.5:  # strided by thread: a fixed bank-conflict degree
            self.emit(f"muli r31, r4, {self.r.randint(1, 8)}")
            self.emit(f"andi r31, r31, {size - 1}")
        else:
            self.emit(f"andi r31, {self.d()}, {size - 1}")
        self.emit("shli r31, r31, 2")
        self.emit("add r31, r31, r30")
        self.emit(f"lds {self.d()}, [r31]", self.guard())

    def s_misc(self, depth: int, in_loop: bool) -> None:
        self.emit(self.r.choice(["nop", "fence"]), self.guard())

    def s_sts(self, depth: int, in_loop: bool) -> None:
        self.features.add("sts")
        # word 0 of a slot is the barrier exchange word: written only by the exchange
        self.emit(f"sts [r5+{4 * self.r.randrange(1, SH_WORDS)}], {self.d()}", self.guard())

    def atomic_op(self) -> str:
        op = self.r.choice(_ATOMICS_FIRST)
        return self.ar.choice(_ATOMICS_LATER) if self.ar.random() < 0.45 else op

    def s_atom(self, depth: int, in_loop: bool) -> None:
        r = self.r
        self.features.add("atom")
        if r.random() < 0.3:  # contended by every thread of the grid; result discarded
            k = r.randrange(3)  # one word per operation: they do not commute
            if self.ar.random() < 0.25:
                k = 3
            op = _CONTENDED[k]
            self.emit(f"addi r31, r29, {4 * k}")
            self.emit(f"atom.{op} r0, [r31], {self.d()}", self.guard())
            return
        off = r.randrange(2)
        addr = "r6" if off == 0 else "r26"
        if off:
            self.emit("addi r26, r6, 4")
        self.any_atomic("atom", addr)

    def s_atoms(self, depth: int, in_loop: bool) -> None:
        self.features.add("atoms")
        self.any_atomic("atoms", "r7")

    def any_atomic(self, mnemonic: str, addr: str) -> None:
        """One ``atom``/``atoms`` of a random operation on ``[addr]``, result kept."""
        op = self.atomic_op()
        dst, b = self.d(), self.d()  # drawn in operand order: a seed gives the same program
        c = f", {self.d()}" if op == "cas" else ""
        self.emit(f"{mnemonic}.{op} {dst}, [{addr}], {b}{c}", self.guard())

    def s_shfl(self, depth: int, in_loop: bool) -> None:
        r = self.r
        self.features.add("shfl")
        op = r.choice(_SHFL)
        if r.random() < 0.5:
            self.emit(f"movi r27, {r.randint(0, self.lanes)}")
        else:
            self.emit(f"andi r27, {self.d()}, {2 * self.lanes - 1}")
        self.emit(f"{op} {self.d()}, {self.d()}, r27", self.guard())

    def s_vote(self, depth: int, in_loop: bool) -> None:
        r = self.r
        self.features.add("vote")
        k = r.random()
        if k < 0.35:
            self.emit(f"vote.ballot {self.d()}, {self.psrc()}", self.guard())
        else:
            op = "vote.any" if k < 0.7 else "vote.all"
            self.emit(f"{op} {r.choice(DPRED)}, {self.psrc()}", self.guard())

    def _cond(self) -> None:
        """p5 = a random, usually lane-dependent condition."""
        r = self.r
        if r.random() < 0.5:
            self.emit(f"{r.choice(_ICMP)} p5, {self.d()}, {self.d()}")
        else:
            self.emit(f"andi r24, r4, {r.choice([1, 2, 3, 4, 7])}")
            self.emit(f"isetp.{r.choice(['eq', 'ne'])} p5, r24, r0")

    def s_if(self, depth: int, in_loop: bool) -> None:
        self._branch(depth, in_loop, "if", "s", with_else=False)

    def s_ifelse(self, depth: int, in_loop: bool) -> None:
        self._branch(depth, in_loop, "ifelse", "e", with_else=True)

    def _branch(self, depth: int, in_loop: bool, feature: str, prefix: str,
                with_else: bool) -> None:
        """ssy; a random branch on p5 past the then-block (to the else-block, if any); sync
        at the end of each path; the join."""
        self.features.add(feature)
        join, target = self.label("j"), self.label(prefix)
        self._cond()
        self.emit(f"ssy {join}")
        self.emit(f"bra {target}", f"@{self.r.choice(['', '!'])}p5")
        self.block_of(depth + 1, in_loop)
        if with_else:
            self.emit("sync")
        self.lines.append(f"{target}:")
        if with_else:
            self.block_of(depth + 1, in_loop)
        self.emit("sync")
        self.lines.append(f"{join}:")

    def s_loop(self, depth: int, in_loop: bool) -> None:
        if not self.loop_regs_free:
            return self.s_alu(depth, in_loop)
        r = self.r
        self.features.add("loop")
        rc = self.loop_regs_free.pop()
        top, done = self.label("l"), self.label("d")
        if r.random() < 0.7:  # per-thread trip count 1..4
            self.emit(f"andi {rc}, {r.choice(DATA + ['r4', 'r1'])}, 3")
            self.emit(f"addi {rc}, {rc}, 1")
        else:
            self.emit(f"movi {rc}, {r.randint(1, 3)}")
        self.emit(f"ssy {done}")
        self.lines.append(f"{top}:")
        self.block_of(depth + 1, True, 1, 3)
        self.emit(f"addi {rc}, {rc}, -1")
        self.emit(f"isetp.gt p6, {rc}, r0")
        self.emit(f"bra {top}", "@p6")
        self.emit("sync")
        self.lines.append(f"{done}:")
        self.loop_regs_free.append(rc)

    def s_barrier(self, depth: int, in_loop: bool) -> None:
        """Exchange through shared memory: write own word 0, bar, read a neighbour's, bar."""
        r = self.r
        self.features.add("bar")
        k = r.randrange(self.tpb)
        self.emit(f"sts [r5], {self.d()}")
        self.emit("bar")
        self.emit(f"addi r24, r4, {k}")
        self.emit(f"movi r25, {self.tpb}")
        self.emit("isetp.ge p5, r24, r25")
        self.emit("sub r25, r24, r25")
        self.emit("sel r24, r25, r24, p5")
        self.emit(f"muli r24, r24, {4 * SH_WORDS}")
        self.emit(f"lds {self.d()}, [r24]")
        self.emit("bar")

    def s_exit(self, depth: int, in_loop: bool) -> None:
        self.features.add("exit")
        self.exited = True
        self.emit("exit", f"@{self.r.choice(['', '!'])}{self.r.choice(DPRED)}")

    def s_skip(self, depth: int, in_loop: bool) -> None:
        lab = self.label("k")
        self.emit(f"bra {lab}")
        self.emit(f"add {self.d()}, {self.d()}, {self.d()}")  # never executed
        self.lines.append(f"{lab}:")

    # --- whole kernel -----------------------------------------------------------------
    def program(self) -> str:
        r, W = self.r, self.lanes
        n_sh_atom = self.wpb * 2
        table = 4 * (SH_WORDS * self.tpb + n_sh_atom)  # read-only table of 2 * tpb words
        shared = table + 8 * self.tpb
        self.shared = shared
        head = ["        .kernel rnd", "        .param in, ptr", "        .param out, ptr",
                "        .param atom, ptr", f"        .shared {shared}"]
        self.emit("s2r r4, tid")
        self.emit("s2r r1, ctaid.x")
        self.emit(f"muli r1, r1, {self.tpb}")
        self.emit("add r1, r1, r4")  # gid
        self.emit("ldparam r2, out")
        self.emit("shli r24, r1, 2")
        self.emit("add r2, r2, r24")  # &out[gid] (column layout)
        self.emit("ldparam r28, in")
        self.emit(f"muli r24, r1, {4 * IN_WORDS}")
        self.emit("add r3, r28, r24")  # &in[gid * IN_WORDS]
        self.emit(f"muli r5, r4, {4 * SH_WORDS}")  # shared slot
        self.emit(f"movi r24, {W}")
        self.emit("s2r r25, ctaid.x")
        self.emit(f"muli r25, r25, {self.wpb}")
        self.emit("s2r r26, warpid")
        self.emit("add r25, r25, r26")  # global warp index
        self.emit("ldparam r29, atom")
        self.emit("shli r6, r25, 3")
        self.emit("add r6, r6, r29")
        self.emit("addi r6, r6, 16")  # private pair of words after the 4 shared counters
        self.emit("shli r7, r26, 3")
        self.const32("r27", 4 * SH_WORDS * self.tpb)
        self.emit("add r7, r7, r27")  # the warp's private shared words after the slots
        for i, reg in enumerate(DATA):
            if i < IN_WORDS:
                self.emit(f"ldg {reg}, [r3+{4 * i}]")
            else:
                self.emit(f"xori {reg}, r1, {r.randint(-1024, 1023)}")
        for k, p in enumerate(DPRED):
            self.emit(f"isetp.{r.choice(['lt', 'gtu', 'ne'])} {p}, {DATA[k]}, {DATA[k + 4]}")
        self.emit(f"sts [r5], r{8 + r.randrange(12)}")
        for w in range(1, SH_WORDS):
            self.emit(f"sts [r5+{4 * w}], r{8 + r.randrange(12)}")
        self.emit("movi r24, 0")
        self.emit("sts [r7], r24")
        self.emit("sts [r7+4], r24")
        self.const32("r30", table)
        self.emit("shli r24, r4, 2")
        self.emit("add r24, r24, r30")
        self.emit(f"sts [r24], r{8 + r.randrange(12)}")
        self.const32("r25", 4 * self.tpb)
        self.emit("add r24, r24, r25")
        self.emit(f"sts [r24], r{8 + r.randrange(12)}")
        if self.tpb > 1:
            self.emit("bar")  # every shared slot is initialised before anyone reads it
        body = len(self.lines)
        nstmts = r.randint(self.opts.min_stmts, self.opts.max_stmts)
        for _ in range(nstmts):
            self.stmt(0, False)
        for i, reg in enumerate(DATA):
            self.emit(f"stg {self._out_addr(12 + i)}, {reg}")
        self.emit("movi r24, 0")
        for k, p in enumerate(DPRED):
            self.emit(f"ori r24, r24, {1 << k}", f"@{p}")
        self.emit(f"stg {self._out_addr(OUT_SLOTS - 1)}, r24")
        self.emit("exit")
        if self.opts.fault:
            self._inject_fault(body)
        if self.opts.wild:
            self._edit_control(body)
        return "\n".join(head + self.lines + ["        .end", ""])

    def _edit_control(self, body: int) -> None:
        """One to three of WILD_EDITS at random places of the body, from a stream of its own.
        A program edited so is outside the rules above: it may diverge without ``ssy``, pop
        the stack too often or too rarely, ``bar`` in divergent code, or not terminate
        (run it on the ISS with a budget first, as ``regress --wild`` does)."""
        er = random.Random(self.seed ^ 0xED17)
        self.features.add("wild")
        for _ in range(er.randint(1, 3)):
            edit = er.choice(WILD_EDITS)
            spots = [i for i in range(body, len(self.lines) - 1)
                     if not self.lines[i].endswith(":")]
            if edit in ("delete ssy", "delete sync", "double sync"):
                word = edit.split()[1]
                spots = [i for i in spots if self.lines[i].split()[0] == word]
            elif edit == "invert a forward branch's guard":
                spots = [i for i in spots if self._forward_branch(i)]
            if not spots:
                continue
            at = er.choice(spots)
            line = self.lines[at]
            if edit.startswith("delete"):
                del self.lines[at]
            elif edit == "double sync":
                self.lines.insert(at, line)
            elif edit == "invert a forward branch's guard":
                guard, rest = line.split(None, 1)
                guard = "@" + guard[2:] if guard.startswith("@!") else "@!" + guard[1:]
                self.lines[at] = f"{guard:>6} {rest}"
            else:  # insert an exit guarded by a data predicate, a bar or a sync
                text = {"insert exit": f"{'@' + er.choice(DPRED):>6} exit",
                        "insert bar": "       bar", "insert sync": "       sync"}[edit]
                self.lines.insert(at, text)
            self.features.add("wild_" + edit.replace(" ", "_").replace("'", ""))

    def _forward_branch(self, i: int) -> bool:
        """Line ``i`` is a guarded ``bra`` to a label further down (inverting a loop's back
        branch would make the loop run until its counter wraps)."""
        parts = self.lines[i].split()
        if len(parts) != 3 or parts[1] != "bra" or not parts[0].startswith("@"):
            return False
        return f"{parts[2]}:" in self.lines[i + 1:]

    def _inject_fault(self, body: int) -> None:
        """One of FAULT_KINDS, executed by one thread of the grid (global id ``k``, which may
        have exited or be on the other side of a branch there: then nothing faults), before
        a body instruction that writes ``r24`` without reading it (so ``r24`` is free) and
        guarded by ``p5`` (an if-condition's, written right before each use). One thread:
        only its warp faults, so which fault comes first is not a scheduling choice. From
        a stream of its own: the program around it is the one ``seed`` gives without."""
        fr = random.Random(self.seed ^ 0xFA17)
        spots = [i for i in range(body, len(self.lines))
                 if re.fullmatch(r"\s+\w[\w.]* r24, [^\[]*", self.lines[i])
                 and "r24" not in self.lines[i].split(",", 1)[1]]
        kind = fr.choice(sorted(FAULT_KINDS))
        k = fr.randrange(self.total)
        if kind == "divergent_bar":
            # after the last barrier of the program: where the thread is its warp's only
            # live lane, the bar does not fault but completes, and a barrier exchange after
            # it would pair one warp's n-th bar with another's n+1-th, a race on the slots
            last = max((i for i, line in enumerate(self.lines) if line.split() == ["bar"]),
                       default=-1)
            spots = [i for i in spots if i > last]
        at = fr.choice(spots)  # the epilogue's ``movi r24, 0`` is always one
        code = ["movi r24, {k}", "isetp.eq p5, r1, r24", *FAULT_KINDS[kind]]
        text = [line.format(k=k, shared=self.shared) for line in code]
        self.lines[at:at] = [t if t.endswith(":") else f"       {t}" for t in text]
        self.features.add(f"fault_{kind}")


def generate(seed: int, lanes: int, warps: int, opts: GenOptions | None = None
             ) -> RandomProgram:
    """The random program of ``seed`` for a core with ``warps`` warp slots of ``lanes``."""
    g = _Gen(seed, lanes, warps, opts or GenOptions())
    src = g.program()
    return RandomProgram(seed, src, (g.blocks, 1, 1), g.block, lanes, g.features)


def random_launch(seed: int, lanes: int, warps: int, opts: GenOptions | None = None
                  ) -> KernelLaunch:
    """:func:`generate` plus its input data (also from ``seed``), ready to run."""
    prog = generate(seed, lanes, warps, opts)
    rng = np.random.default_rng(seed)
    total = prog.grid[0] * prog.block[0] * prog.block[1]
    n_in = max(IN_TOTAL, total * IN_WORDS) + 64
    (fp,) = fp_operands(rng, n_in, 1)
    (ints,) = int_operands(rng, n_in, 1)
    pick = rng.integers(0, 2, n_in).astype(bool)
    data_in = np.where(pick, fp, ints).astype(np.uint32)
    wpb = -(-total // prog.grid[0] // lanes)
    atom = np.zeros(4 + 2 * wpb * prog.grid[0], dtype=np.uint32)
    out = np.full(OUT_SLOTS * total, 0xDEADBEEF, dtype=np.uint32)
    launch = launch_from_asm(prog.source, "rnd", prog.grid, prog.block,
                             ["in", "out", "atom"],
                             {"in": data_in, "out": out, "atom": atom}, name=f"random_{seed}")
    launch.seed = seed
    launch.note = ",".join(sorted(prog.features))
    return launch
