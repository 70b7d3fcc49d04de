"""Random kernels from a generator independent of :mod:`simtgpu.verification.random_programs`.

This generator was written from the ISA definition (``simtgpu.isa``: the instruction table,
the operand kinds, the special registers) and from docs/isa.md and docs/execution-model.md,
without looking at the project's own random-program generator, so that it makes different
choices and reaches corners the other does not. It is a second opinion on the RTL: each
program runs on the ISS and on the RTL and the two retire traces and final memories are
compared (tests/rtl/system/test_independent_programs.py).

    from simtgpu.verification.indep_programs import indep_launch
    launch = indep_launch(seed=7, lanes=4, warps=2)            # a valid program
    launch = indep_launch(seed=7, lanes=4, warps=2, fault=True)  # one that faults
    print(launch.source)

What a *valid* program does (every rule below comes from docs/execution-model.md):

* Every instruction of ``isa.INSTRUCTIONS`` is drawn with random operand fields: any
  destination register (``r0`` included, its writes are discarded), any source register,
  any predicate (``pt`` as a destination too), negated predicate sources, immediates at the
  edges of their fields (0, -1, the minimum and maximum of imm11 and imm16, shift counts of
  32 and more), and a random guard (``@p``, ``@!p``, ``@!pt``: instructions that never run).
* Register values start from a buffer of edge values (FP32 NaN payloads, signed zeros,
  subnormals, infinities, packed fp16/bf16 specials, INT_MIN, -1, ...) and are rebuilt from
  ``lui``/``lli`` constants along the way.
* Nine registers, chosen at random per program, hold the thread's pointers and loop
  counters; no random instruction writes them. Everything else is fair game.
* Memory accesses stay inside the launch's buffers and are aligned. Global words a thread
  loads are either read-only input, its own scratch words, or words of its own warp's area
  (lanes of one warp act in lane order, so same-address stores and atomics there are
  architectural). Atomics on words that several warps share discard their result (``rd`` =
  ``r0``) and use only the operations whose final value does not depend on the order
  (add, and, or, xor, min, max); those words are never loaded.
* Shared memory: each thread's own words, its warp's words, and a block-wide area that the
  block's warps update with commutative atomics and read only after a ``bar``; a thread reads
  its neighbour's word only between two barriers.
* Divergence is always bracketed by ``ssy``/``sync`` (whose guards, ignored by the
  hardware, are random too): if/else (either side may be empty), nested, a nest of up to
  8 levels that fills the 16-entry reconvergence stack, loops with per-lane trip counts
  (1..4), ``exit`` on either side of a branch or in a loop. ``bar`` and ``mma`` appear
  where every lane of the block runs (the top level, or a loop with a uniform trip count)
  and before any ``exit``; ``mma`` only in blocks of whole warps. A "partial exit" lets
  lanes other than lane 0 of each warp leave; a later ``bar`` still completes.
* Launch shapes: 1-D, 2-D and 3-D blocks, full, ragged and one-thread; grids of 1 to 6
  blocks in every dimension; sometimes a ``.shared`` size that lets only one or two blocks
  share a core.
* Uniform branches (``bra`` guarded by ``pt``) jump over words that are not instructions,
  and ``@!pt bra`` is never taken.
* The epilogue stores every register and the predicates of every thread still alive.

Nothing reads ``clock`` or ``clockhi`` (the ISS counts instructions, the RTL cycles), nor
``coreid`` on a configuration with several cores (which core runs a block is a scheduling
choice).

A *fault* program (``fault=True``) is a valid program with one faulting construct placed
at the top level of its body, executed by chosen lanes of one warp only
(:data:`FAULT_KINDS`), so which fault is reported is not a scheduling choice; memory and
parameter faults sit half of the time in a loop with per-lane trip counts, each chosen lane
faulting on its own last trip.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

import numpy as np
from simtgpu.isa import IMM_MAX, IMM_MIN, INSTRUCTIONS, Kind, Lat, Sem, SReg

from .launch import KernelLaunch, launch_from_asm, layout_buffers

__all__ = ["FAULT_KINDS", "INPUT_VALUES", "indep_launch", "indep_source"]

# --------------------------------------------------------------------------------------
# Values

_F32 = {
    "+0": 0x0000_0000, "-0": 0x8000_0000, "+inf": 0x7F80_0000, "-inf": 0xFF80_0000,
    "qnan": 0x7FC0_0000, "-qnan": 0xFFC0_0000, "snan": 0x7F80_0001, "nan_payload": 0x7FA5_5A5A,
    "-nan_payload": 0xFFDE_AD01, "min_sub": 0x0000_0001, "max_sub": 0x007F_FFFF,
    "-min_sub": 0x8000_0001, "min_norm": 0x0080_0000, "-min_norm": 0x8080_0000,
    "max": 0x7F7F_FFFF, "-max": 0xFF7F_FFFF, "1": 0x3F80_0000, "-1": 0xBF80_0000,
    "0.5": 0x3F00_0000, "1.5": 0x3FC0_0000, "2^31": 0x4F00_0000, "-2^31": 0xCF00_0000,
    "2^32": 0x4F80_0000, "1+ulp": 0x3F80_0001, "3": 0x4040_0000, "pi": 0x4049_0FDB,
    "big_angle": 0x4B00_0001, "tiny_norm": 0x0100_0000, "127.9": 0x42FF_CCCD,
    "-150": 0xC316_0000,
}
_HALF = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x03FF, 0x0400, 0x3C00,
         0xBC00, 0x7BFF, 0xFBFF, 0x3555, 0x7F80, 0xFF80, 0x7FC0, 0x0080, 0x007F, 0x3F80,
         0x7F7F, 0x4B00]
_INTS = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 0xFFFF, 0x1_0000, 0x7FFF_FFFF, 0x8000_0000,
         0xFFFF_FFFF, 0xFFFF_FFFE, 0x8000_0001, 0x7FFF_FFFE, 0x5555_5555, 0xAAAA_AAAA,
         0xFFFF_8000, 0x0000_7FFF]

INPUT_VALUES = sorted(set(_F32.values()) | set(_INTS))
"""Edge values every input buffer holds (the rest are packed halves and random words)."""

_IMM11_EDGES = [0, -1, 1, IMM_MIN, IMM_MAX, IMM_MIN + 1, IMM_MAX - 1, 31, 32, 33, 63, 64,
                -32, -31, 16, 4, -4, 0x3FF, -0x400]
_IMM16S_EDGES = [0, -1, 1, -32768, 32767, 0x7F80, -0x80, 0x3F80]
_IMM16U_EDGES = [0, 1, 0xFFFF, 0x8000, 0x7FFF, 0x7F80, 0x7FC0, 0xFF80, 0x3F80, 0x0080,
                 0x007F, 0x8080, 0x7C00, 0x3C00, 0x7E00]

# --------------------------------------------------------------------------------------
# Which instructions the random straight-line code draws from

_STRAIGHT_SEMS = {Sem.INT, Sem.INT_IMM, Sem.CONST, Sem.MUL, Sem.ICMP, Sem.PLOGIC,
                  Sem.SELECT, Sem.FP, Sem.HALF, Sem.FCMP, Sem.CVT, Sem.SFU, Sem.SHUFFLE,
                  Sem.VOTE, Sem.SREG, Sem.PARAM, Sem.FENCE}
STRAIGHT = [i for i in INSTRUCTIONS if i.sem in _STRAIGHT_SEMS]
STRAIGHT += [i for i in INSTRUCTIONS if i.mnemonic == "nop"]
LONG_LATENCY = [i for i in STRAIGHT if i.lat in (Lat.LONG, Lat.SFU)
                and i.writes_reg and i.sem is not Sem.PARAM]
ATOMIC_OPS = sorted({i.mnemonic.split(".")[1] for i in INSTRUCTIONS if i.sem is Sem.ATOMIC
                     and i.mnemonic.startswith("atom.") and len(i.operands) == 3})
"""The two-operand atomics (``cas`` takes a third source and is drawn on its own)."""
COMMUTATIVE_ATOMICS = ("add", "and", "or", "xor", "min", "max")
"""Atomics whose final memory word does not depend on the order the lanes (of several warps)
are applied in; words shared across warps see only these."""
MMA = [i for i in INSTRUCTIONS if i.sem is Sem.MMA]

FAULT_KINDS = ("oor_high", "null_guard", "oor_mixed_misaligned", "misaligned_store",
               "misaligned_atom", "oor_atom", "shared_oor", "shared_misaligned",
               "shared_atom_oor", "param_oor", "illegal_word", "divergent_bar",
               "stack_underflow", "stack_overflow", "pc_out_of_range", "divergent_mma",
               "negative_address", "barrier_deadlock", "fall_off_end", "fault_then_illegal")
"""What a fault program's one faulting construct does."""

_LOOPABLE_FAULTS = ("oor_high", "null_guard", "oor_mixed_misaligned", "misaligned_store",
                    "misaligned_atom", "oor_atom", "shared_oor", "shared_misaligned",
                    "shared_atom_oor", "param_oor", "negative_address")
"""Fault kinds that may sit in a loop with per-lane trip counts (faulting on a later trip,
with some lanes of the warp already out of the loop)."""

_ILLEGAL_WORDS = (0x0000_0000, 0xFFFF_FFFF, 0x0000_000A, 0x0000_007F, 0x8000_0010,
                  0x2800_001C, 0x7C00_0050, 0x0000_0801 | (1 << 31), 0x4000_0070)
"""Words that are not instructions: reserved opcodes, an unused bit set, reserved fn codes."""

# Per-thread and per-warp sizes (words)
SCR_WORDS = 16  # a thread's own scratch words
OUT_WORDS = 40  # a thread's epilogue: 32 registers, the predicates
THREAD_WORDS = 64  # scratch, padding, epilogue
WARP_WORDS = 16  # a warp's shared-by-its-lanes global words
GRID_ATOM_WORDS = 8
INP_WORDS = 768  # 256 before the base, 512 after
SH_THREAD = 16  # shared words per thread
SH_WARP = 16


@dataclass
class _Regs:
    """The registers a program reserves (never written by random code)."""

    inp: int  # base of the input buffer (+1024 bytes)
    scr: int  # the thread's own words
    wat: int  # the warp's words
    gat: int  # the grid-wide atomic words
    sh: int  # shared: the thread's own words (tid * 64)
    tmp: int  # address temporary
    wsh: int  # shared: the warp's own words
    loops: tuple[int, int]  # loop counters
    data: list[int] = field(default_factory=list)

    @property
    def reserved(self) -> set[int]:
        return {self.inp, self.scr, self.wat, self.gat, self.sh, self.tmp, self.wsh,
                *self.loops}


class _Gen:
    """One program: the launch shape and buffers are drawn first, then the code (prologue,
    random statements at the top level, epilogue), all from one random stream."""

    def __init__(self, seed: int, lanes: int, warps: int, cores: int, fault: bool,
                 shared_max: int):
        self.rng = random.Random(seed * 7919 + 17)
        self.lanes, self.warps, self.cores, self.fault = lanes, warps, cores, fault
        self.lines: list[str] = []
        self.label_n = 0
        self.exited = False  # an exit was emitted: no more bar or mma
        self.converged = True  # every lane of the block runs here: bar and mma allowed
        self.no_exit = 0  # inside a uniform loop that may hold a bar: no exit
        self.lanes_left = False  # some lanes (never lane 0 of a warp) exited: no more mma
        r = self.rng
        # launch shape
        max_threads = lanes * warps
        shape = r.random()
        if shape < 0.35:
            threads = max_threads
        elif shape < 0.55:
            threads = lanes * r.randint(1, warps)
        elif shape < 0.65:
            threads = 1
        else:
            threads = r.randint(1, max_threads)
        dims = r.random()
        if dims < 0.6 or threads == 1:
            block = (threads, 1, 1)
        else:
            divs = [d for d in range(1, threads + 1) if threads % d == 0]
            bx = r.choice(divs)
            rest = threads // bx
            divs2 = [d for d in range(1, rest + 1) if rest % d == 0]
            by = r.choice(divs2) if dims < 0.85 else rest
            block = (bx, by, rest // by)
        self.block = block
        self.threads = threads
        self.grid = r.choice([(1, 1, 1), (2, 1, 1), (1, 3, 1), (1, 1, 4), (2, 2, 1),
                              (3, 1, 2), (1, 2, 3), (5, 1, 1)])
        self.nblocks = nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        self.nwarps = -(-threads // lanes)
        self.full_warps = threads % lanes == 0
        gthreads = threads * nblocks
        gwarps = self.nwarps * nblocks
        # buffers (their addresses are fixed by layout_buffers, so the code may name them)
        self.arrays = {
            "inp": self._input_words(),
            "thr": np.zeros(gthreads * THREAD_WORDS, np.uint32),
            "wat": np.array([r.choice(INPUT_VALUES) for _ in range(gwarps * WARP_WORDS)],
                            np.uint32),
            "gat": np.array([r.choice([0, 1, 0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF, 12345])
                             for _ in range(GRID_ATOM_WORDS)], np.uint32),
        }
        self.addr = {k: a for k, (a, _) in layout_buffers(self.arrays).items()}
        self.sh_block = (threads + 1) * SH_THREAD * 4  # + a neighbour word for odd counts
        self.sh_warps = self.sh_block + self.nwarps * SH_WARP * 4
        self.shared_bytes = self.sh_warps + 64 + 4 * r.randint(0, 8)
        if r.random() < 0.3:  # few blocks (or one) fit in a core's shared memory at once
            self.shared_bytes = max(self.shared_bytes, r.choice(
                [shared_max // 2 + 4, shared_max // 3 + 4, shared_max]))
        regs = list(range(1, 32))
        r.shuffle(regs)
        self.R = _Regs(*regs[:7], loops=(regs[7], regs[8]))
        self.R.data = sorted(regs[9:])
        self.loop_depth = 0
        self.sregs = [s for s in SReg if s not in (SReg.CLOCK, SReg.CLOCKHI)
                      and (s is not SReg.COREID or cores == 1)]

    # -- helpers -------------------------------------------------------------------------
    def _input_words(self) -> np.ndarray:
        r = self.rng
        out = []
        for _ in range(INP_WORDS):
            k = r.random()
            if k < 0.3:
                out.append(r.choice(INPUT_VALUES))
            elif k < 0.45:
                out.append(r.choice(_HALF) | r.choice(_HALF) << 16)
            elif k < 0.6:
                out.append(struct.unpack("<I", struct.pack("<f", r.uniform(-100, 100)))[0])
            elif k < 0.75:
                out.append(r.randint(0, 9))
            else:
                out.append(r.getrandbits(32))
        return np.array(out, np.uint32)

    def emit(self, text: str, guard: str = "") -> None:
        self.lines.append(f"{guard:>8} {text}" if guard else f"         {text}")

    def label(self, stem: str) -> str:
        self.label_n += 1
        return f"{stem}_{self.label_n}"

    def place(self, lab: str) -> None:
        self.lines.append(f"{lab}:")

    def dst(self) -> int:
        return 0 if self.rng.random() < 0.04 else self.rng.choice(self.R.data)

    def src(self) -> int:
        r = self.rng.random()
        if r < 0.05:
            return 0
        if r < 0.15:
            return self.rng.randint(0, 31)
        return self.rng.choice(self.R.data)

    def pred(self) -> str:
        return "pt" if self.rng.random() < 0.05 else f"p{self.rng.randint(0, 6)}"

    def pred_src(self) -> str:
        p = "pt" if self.rng.random() < 0.15 else f"p{self.rng.randint(0, 6)}"
        return ("!" if self.rng.random() < 0.3 else "") + p

    def guard(self) -> str:
        x = self.rng.random()
        if x < 0.7:
            return ""
        if x < 0.73:
            return "@!pt"
        if x < 0.75:
            return "@pt"
        return f"@{'!' if self.rng.random() < 0.4 else ''}p{self.rng.randint(0, 6)}"

    def imm(self) -> int:
        if self.rng.random() < 0.6:
            return self.rng.choice(_IMM11_EDGES)
        return self.rng.randint(IMM_MIN, IMM_MAX)

    def imm16(self, signed: bool) -> int:
        if self.rng.random() < 0.6:
            return self.rng.choice(_IMM16S_EDGES if signed else _IMM16U_EDGES)
        return self.rng.randint(-32768, 32767) if signed else self.rng.randint(0, 0xFFFF)

    # -- straight-line instructions ------------------------------------------------------
    def straight(self, ins=None, dst: int | None = None, srcs: list[int] | None = None,
                 guard: str | None = None) -> int | None:
        """One instruction of the table with random operands; returns its register dst."""
        r = self.rng
        ins = ins or r.choice(STRAIGHT)
        ops, written = [], None
        srcs = list(srcs or [])
        for op in ins.operands:
            if op.kind is Kind.REG:
                if op.is_dst:
                    written = self.dst() if dst is None else dst
                    ops.append(f"r{written}")
                else:
                    ops.append(f"r{srcs.pop(0) if srcs else self.src()}")
            elif op.kind is Kind.PRED:
                ops.append(self.pred())
            elif op.kind is Kind.PRED_SRC:
                ops.append(self.pred_src())
            elif op.kind is Kind.IMM:
                ops.append(str(self.imm()))
            elif op.kind is Kind.IMM16:
                ops.append(str(self.imm16(op.signed)))
            elif op.kind is Kind.SREG:
                ops.append(r.choice(self.sregs).asm_name)
            elif op.kind is Kind.PARAM:
                ops.append(r.choice(["inp", "thr", "wat", "gat", "0", "4", "8", "12"]))
            else:  # pragma: no cover - the table holds no other kind in these classes
                raise AssertionError(op.kind)
        g = self.guard() if guard is None else guard
        self.emit(f"{ins.mnemonic:<11} {', '.join(ops)}".rstrip(), g)
        return written

    def const(self, reg: int) -> None:
        """A 32-bit edge value built with lui/lli (or movi)."""
        v = self.rng.choice(INPUT_VALUES + [self.rng.getrandbits(32)])
        if self.rng.random() < 0.2 and v < 0x8000:
            self.emit(f"movi        r{reg}, {v}")
            return
        self.emit(f"lui         r{reg}, {v >> 16:#x}")
        self.emit(f"lli         r{reg}, {v & 0xFFFF:#x}")

    def dep_chain(self) -> None:
        """Back-to-back RAW and WAW through the long-latency units and loads."""
        r = self.rng
        cur = r.choice(self.R.data)
        for _ in range(r.randint(2, 7)):
            k = r.random()
            if k < 0.6:
                ins = r.choice(LONG_LATENCY)
                nxt = cur if r.random() < 0.3 else r.choice(self.R.data)
                srcs = [cur] * 3 if r.random() < 0.3 else [cur, self.src(), cur]
                self.straight(ins, dst=nxt, srcs=srcs, guard="" if r.random() < 0.8 else None)
                cur = nxt
            elif k < 0.7:
                self.load_input(dst=cur, index_reg=cur)
            elif k < 0.76:  # lli keeps the upper half: it reads its destination
                self.emit(f"lli         r{cur}, {self.imm16(False):#x}")
            elif k < 0.82:  # the result as an atomic's operand, the old word back into it
                t = self.R.tmp
                self.emit(f"andi        r{t}, r{cur}, 12")
                self.emit(f"add         r{t}, r{t}, r{self.R.wat}")
                op = r.choice(ATOMIC_OPS)
                self.emit(f"atom.{op:<6} r{cur}, [r{t}], r{cur}")
            elif k < 0.88:  # a predicate from the result guards the next instruction
                p = f"p{r.randint(0, 6)}"
                cmp = r.choice([i for i in INSTRUCTIONS if i.sem in (Sem.ICMP, Sem.FCMP)])
                self.emit(f"{cmp.mnemonic:<11} {p}, r{cur}, r{self.src()}")
                self.straight(dst=cur, srcs=[cur, cur, cur], guard=f"@{p}")
            elif k < 0.93:  # the result stored at once, then loaded back
                self.emit(f"stg         [r{self.R.scr}+8], r{cur}")
                self.emit(f"ldg         r{cur}, [r{self.R.scr}+8]")
            else:
                self.straight(dst=cur, srcs=[cur, cur, cur])
        # consume at once
        self.straight(r.choice([i for i in STRAIGHT if i.sem in (Sem.INT, Sem.SHUFFLE)]),
                      srcs=[cur, cur])

    # -- memory --------------------------------------------------------------------------
    def load_input(self, dst: int | None = None, index_reg: int | None = None) -> None:
        """ldg from the read-only input at an index from a register, offset at the edges."""
        t, r = self.R.tmp, self.rng
        self.emit(f"andi        r{t}, r{index_reg if index_reg is not None else self.src()}, "
                  f"{(256 - 1) * 4}")
        self.emit(f"add         r{t}, r{t}, r{self.R.inp}")
        off = r.choice([IMM_MIN, -4, 0, 4, IMM_MAX - 3, 4 * r.randint(-256, 255)])
        d = self.dst() if dst is None else dst
        self.emit(f"ldg         r{d}, [r{t}{off:+d}]", self.guard() if dst is None else "")

    def own_access(self, space: str) -> None:
        """A load or store of one of the thread's own words (global or shared)."""
        r, t = self.rng, self.R.tmp
        base = self.R.scr if space == "g" else self.R.sh
        nwords = SCR_WORDS if space == "g" else SH_THREAD
        k = 4 * r.randrange(nwords)
        off = r.choice([0, 0, IMM_MIN, IMM_MAX - 3, -4, 4 * r.randint(-255, 255)])
        adj = k - off  # tmp = base + k - off, so that [tmp + off] is word k
        if not IMM_MIN <= adj <= IMM_MAX:
            off, adj = 0, k
        self.emit(f"addi        r{t}, r{base}, {adj}")
        mem = f"[r{t}{off:+d}]" if off else f"[r{t}]"
        if r.random() < 0.5:
            self.emit(f"{'stg' if space == 'g' else 'sts':<11} {mem}, r{self.src()}",
                      self.guard())
        else:
            self.emit(f"{'ldg' if space == 'g' else 'lds':<11} r{self.dst()}, {mem}",
                      self.guard())

    def warp_area(self) -> None:
        """Stores, loads and result-keeping atomics on the warp's own global words."""
        r, t = self.rng, self.R.tmp
        mask = r.choice([0, 4, 12, 28, 60])
        self.emit(f"andi        r{t}, r{self.src()}, {mask}")
        self.emit(f"add         r{t}, r{t}, r{self.R.wat}")
        self.access_mix("g", t, loads_below=0.4)

    def add_const(self, reg: int, value: int) -> None:
        """reg += value, in addi steps (value >= 0)."""
        while value:
            step = min(value, 1020)
            self.emit(f"addi        r{reg}, r{reg}, {step}")
            value -= step

    def shared_warp_area(self) -> None:
        """Shared stores, loads and atomics on the warp's own shared words (lanes of the
        warp meet on them in lane order)."""
        r, t = self.rng, self.R.tmp
        self.emit(f"andi        r{t}, r{self.src()}, {r.choice([0, 4, 12, 28, 60])}")
        self.emit(f"add         r{t}, r{t}, r{self.R.sh}")  # tid*64 + word: then drop tid
        self.emit(f"andi        r{t}, r{t}, 63")
        self.emit(f"add         r{t}, r{t}, r{self.R.wsh}")
        self.access_mix("s", t, loads_below=0.45)

    def access_mix(self, space: str, t: int, loads_below: float) -> None:
        """At the address in ``r<t>`` of ``space`` (``g`` global, ``s`` shared): a store
        (a quarter of the time), a load (up to ``loads_below``), an atomic keeping its
        result, or a ``cas``."""
        r = self.rng
        store, load, atom = ("stg", "ldg", "atom") if space == "g" else ("sts", "lds", "atoms")
        k = r.random()
        if k < 0.25:
            self.emit(f"{store:<11} [r{t}], r{self.src()}", self.guard())
        elif k < loads_below:
            self.emit(f"{load:<11} r{self.dst()}, [r{t}]", self.guard())
        elif k < 0.9:
            op = f"{atom}.{r.choice(ATOMIC_OPS)}"
            self.emit(f"{op:<11} r{self.dst()}, [r{t}], r{self.src()}", self.guard())
        else:
            self.emit(f"{atom + '.cas':<11} r{self.dst()}, [r{t}], r{self.src()}, "
                      f"r{self.src()}", self.guard())

    def grid_atomic(self) -> None:
        """A result-discarding atomic on a word every warp of the grid shares; each word has
        one operation of its own (two different operations do not commute), and the word of
        an operation is either fixed or picked by a lane-dependent bit."""
        r, t = self.rng, self.R.tmp
        j = r.randrange(len(COMMUTATIVE_ATOMICS))
        if j < GRID_ATOM_WORDS - len(COMMUTATIVE_ATOMICS) and r.random() < 0.5:
            # words j and j + 6 both belong to operation j: lanes split between them
            self.emit(f"andi        r{t}, r{self.src()}, 1")
            self.emit(f"muli        r{t}, r{t}, {4 * len(COMMUTATIVE_ATOMICS)}")
            self.emit(f"add         r{t}, r{t}, r{self.R.gat}")
        else:
            self.emit(f"mov         r{t}, r{self.R.gat}")
        self.emit(f"addi        r{t}, r{t}, {4 * j}")
        self.emit(f"atom.{COMMUTATIVE_ATOMICS[j]:<6} r0, [r{t}], r{self.src()}", self.guard())

    def barrier_phase(self) -> None:
        """Write an own shared word, hit the block-wide words with commutative atomics,
        ``bar``, read the neighbour's word (tid ^ 1) and the block-wide words, ``bar``."""
        r, t = self.rng, self.R.tmp
        k = 4 * r.randrange(SH_THREAD)
        self.emit(f"sts         [r{self.R.sh}+{k}], r{self.src()}", self.guard())
        if r.random() < 0.7:
            j = r.randrange(len(COMMUTATIVE_ATOMICS))  # one operation per word
            self.emit(f"movi        r{t}, {4 * j}")
            self.add_const(t, self.sh_warps)
            op = COMMUTATIVE_ATOMICS[j]
            self.emit(f"atoms.{op:<5} r0, [r{t}], r{self.src()}", self.guard())
        self.emit("bar", r.choice(["", "", "@!pt", "@p3"]))  # the guard of bar is ignored
        self.emit(f"xori        r{t}, r{self.R.sh}, {SH_THREAD * 4}")
        self.emit(f"lds         r{self.dst()}, [r{t}+{k}]", self.guard())
        self.emit(f"movi        r{t}, 0")
        self.add_const(t, self.sh_warps)
        self.emit(f"lds         r{self.dst()}, [r{t}+{4 * r.randrange(6)}]")
        self.emit("bar")

    def param_load(self) -> None:
        self.emit(f"ldparam     r{self.dst()}, {self.rng.choice(['inp', 'thr', 'gat', '8'])}",
                  self.guard())

    # -- control -------------------------------------------------------------------------
    def cond(self, p: str) -> None:
        """Set predicate p: lane-dependent, data-dependent, all or nothing."""
        r, t = self.rng, self.R.tmp
        k = r.random()
        if k < 0.4:
            self.emit(f"s2r         r{t}, {r.choice(['laneid', 'tid', 'tid.x', 'laneid'])}")
            self.emit(f"andi        r{t}, r{t}, {r.choice([1, 2, 3, 5, 6, 7, 9])}")
            self.emit(f"isetp.{r.choice(['eq', 'ne', 'gt', 'lt'])}   {p}, r{t}, r0")
        elif k < 0.75:
            cmp = r.choice([i for i in INSTRUCTIONS if i.sem in (Sem.ICMP, Sem.FCMP)])
            self.emit(f"{cmp.mnemonic:<11} {p}, r{self.src()}, r{self.src()}")
        elif k < 0.87:
            self.emit(f"pset        {p}")
        else:
            self.emit(f"pclr        {p}")

    def if_else(self, depth: int) -> None:
        r = self.rng
        join, other = self.label("join"), self.label("else")
        p = f"p{r.randint(0, 6)}"
        self.cond(p)
        converged, self.converged = self.converged, False
        self.emit(f"ssy         {join}", self.ignored_guard())
        self.emit(f"bra         {other}", f"@{'!' if r.random() < 0.5 else ''}{p}")
        self.body(depth + 1, r.randint(0, 4))
        if r.random() < 0.15:
            self.exit_here()
        self.emit("sync", self.ignored_guard())
        self.place(other)
        self.body(depth + 1, r.randint(0, 4))
        if r.random() < 0.15:
            self.exit_here()
        self.emit("sync", self.ignored_guard())
        self.place(join)
        self.converged = converged

    def loop(self, depth: int) -> None:
        if self.loop_depth >= 2:
            return self.body(depth, 2)
        r = self.rng
        cnt = self.R.loops[self.loop_depth]
        self.loop_depth += 1
        done, top = self.label("done"), self.label("loop")
        uniform = r.random() >= 0.7
        if not uniform:  # per-lane trip counts 1..4
            self.emit(f"s2r         r{cnt}, {r.choice(['laneid', 'tid', 'tid.y'])}")
            self.emit(f"xori        r{cnt}, r{cnt}, {r.randint(0, 3)}")
            self.emit(f"andi        r{cnt}, r{cnt}, 3")
            self.emit(f"addi        r{cnt}, r{cnt}, 1")
        else:
            self.emit(f"movi        r{cnt}, {r.randint(1, 3)}")
        p = f"p{r.randint(0, 6)}"
        converged = self.converged
        self.converged = converged and uniform
        self.no_exit += self.converged  # a bar may follow in the body: every lane stays
        self.emit(f"ssy         {done}")
        self.place(top)
        self.body(depth + 1, r.randint(1, 4))
        if r.random() < 0.1 and not self.no_exit:
            self.emit("exit", f"@{p}")  # p as the body left it
            self.exited = True
        self.emit(f"addi        r{cnt}, r{cnt}, -1")
        self.emit(f"isetp.gt    {p}, r{cnt}, r0")
        self.emit(f"bra         {top}", f"@{p}")
        self.emit("sync")
        self.place(done)
        self.no_exit -= self.converged
        self.converged = converged
        self.loop_depth -= 1
        return None

    def partial_exit(self) -> None:
        """Some lanes of each warp exit, never lane 0: every warp still reaches a later bar
        (a partly exited warp arrives with its live lanes)."""
        t, p = self.R.tmp, f"p{self.rng.randint(0, 6)}"
        self.emit(f"s2r         r{t}, laneid")
        self.emit(f"andi        r{t}, r{t}, {self.rng.choice([1, 2, 3, 5, 6])}")
        self.emit(f"isetp.ne    {p}, r{t}, r0")
        if self.rng.random() < 0.5:
            self.emit(f"pand        {p}, {p}, {self.pred_src().lstrip('!').replace('pt', 'p1')}")
        self.emit("exit", f"@{p}")
        self.lanes_left = True

    def deep_nest(self, levels: int) -> None:
        """``levels`` if-levels nested in one another, each diverging on a lane bit: two
        stack entries per level, so 8 levels from the top fill the 16-entry stack."""
        t = self.R.tmp
        joins = []
        converged, self.converged = self.converged, False
        for _ in range(levels):
            join, p = self.label("deep"), f"p{self.rng.randint(0, 6)}"
            self.emit(f"s2r         r{t}, {self.rng.choice(['laneid', 'tid'])}")
            self.emit(f"andi        r{t}, r{t}, {self.rng.choice([1, 2, 3, 4, 5])}")
            self.emit(f"isetp.{self.rng.choice(['eq', 'ne'])}   {p}, r{t}, r0")
            self.emit(f"ssy         {join}")
            self.emit(f"bra         {join}_else", f"@{p}")
            self.straight()
            joins.append(join)
        for join in reversed(joins):
            self.straight()
            self.emit("sync")
            self.place(f"{join}_else")
            if self.rng.random() < 0.3:
                self.warp_op()
            else:
                self.straight()
            self.emit("sync")
            self.place(join)
        self.converged = converged

    def exit_here(self) -> None:
        if self.no_exit:
            return
        self.emit("exit", self.rng.choice(["", "", "@pt", f"@p{self.rng.randint(0, 6)}"]))
        self.exited = True

    def ignored_guard(self) -> str:
        """A guard on ssy or sync, which act on the warp as a whole and ignore it."""
        return self.rng.choice([""] * 8 + ["@!pt", "@p2", "@!p4"])

    def warp_op(self) -> None:
        """A shuffle with a small lane operand (in and out of the warp), or a vote."""
        r, t = self.rng, self.R.tmp
        if r.random() < 0.7:
            if r.random() < 0.5:
                self.emit(f"movi        r{t}, {r.choice([0, 1, 2, 3, 4, 5, 7, 8, 31, -1, 33])}")
            else:
                self.emit(f"s2r         r{t}, laneid")
                self.emit(f"xori        r{t}, r{t}, {r.choice([1, 2, 3, 5])}")
            mode = r.choice([i for i in INSTRUCTIONS if i.sem is Sem.SHUFFLE])
            self.emit(f"{mode.mnemonic:<11} r{self.dst()}, r{self.src()}, r{t}", self.guard())
        else:
            vote = r.choice([i for i in INSTRUCTIONS if i.sem is Sem.VOTE])
            d = f"r{self.dst()}" if vote.writes_reg else self.pred()
            self.emit(f"{vote.mnemonic:<11} {d}, {self.pred_src()}", self.guard())

    def uniform_skip(self) -> None:
        """A uniform branch over words that are not instructions, or one never taken."""
        r = self.rng
        lab = self.label("skip")
        if r.random() < 0.7:
            self.emit(f"bra         {lab}", r.choice(["", "@pt"]))
            for _ in range(r.randint(1, 3)):
                self.emit(f".word       {r.choice(_ILLEGAL_WORDS):#010x}")
        else:
            self.emit(f"bra         {lab}", "@!pt")
            self.straight()
        self.place(lab)

    def mma(self) -> None:
        """One mma: D an aligned group of data registers; A, B, C any aligned groups."""
        r = self.rng
        ins = r.choice(MMA)
        groups = [g for g in range(0, 32, 4)
                  if all(x in self.R.data for x in range(g, g + 4))]
        if not groups:
            return
        a, b, c = (r.choice(range(0, 32, 4)) for _ in range(3))
        self.emit(f"{ins.mnemonic:<11} r{r.choice(groups)}, r{a}, r{b}, r{c}")

    # -- structure -----------------------------------------------------------------------
    def statement(self, depth: int) -> None:
        r = self.rng
        k = r.random()
        if k < 0.25:
            for _ in range(r.randint(1, 4)):
                self.straight()
        elif k < 0.30:
            self.warp_op()
        elif k < 0.36:
            self.const(r.choice(self.R.data))
        elif k < 0.44:
            self.dep_chain()
        elif k < 0.50:
            self.load_input()
        elif k < 0.56:
            self.own_access(r.choice("gs"))
        elif k < 0.62:
            self.warp_area()
        elif k < 0.67:
            self.shared_warp_area()
        elif k < 0.70:
            self.grid_atomic()
        elif k < 0.72:
            self.param_load()
        elif k < 0.74:
            self.uniform_skip()
        elif k < 0.84 and depth < 4:
            self.if_else(depth)
        elif k < 0.90 and depth < 4:
            self.loop(depth)
        elif k < 0.94 and self.converged and not self.exited:
            self.barrier_phase()
        elif (k < 0.96 and self.converged and not self.exited and self.full_warps
              and not self.lanes_left):
            self.mma()
        elif k < 0.965 and depth == 0 and not self.fault:
            self.partial_exit()
        elif k < 0.975 and depth == 0 and self.loop_depth == 0:
            self.deep_nest(r.randint(5, 8))
        elif k < 0.97 and not self.fault and depth > 0 and not self.no_exit:
            self.emit("exit", f"@p{r.randint(0, 6)}")
            self.exited = True
        else:
            self.straight()

    def body(self, depth: int, n: int) -> None:
        for _ in range(n):
            self.statement(depth)

    def prologue(self) -> None:
        R, t = self.R, self.R.tmp
        d = self.R.data
        a, b, c = d[0], d[1], d[2]
        # block linear index: ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)
        self.emit(f"s2r         r{a}, ctaid.z")
        self.emit(f"s2r         r{b}, nctaid.y")
        self.emit(f"mul         r{a}, r{a}, r{b}")
        self.emit(f"s2r         r{b}, ctaid.y")
        self.emit(f"add         r{a}, r{a}, r{b}")
        self.emit(f"s2r         r{b}, nctaid.x")
        self.emit(f"mul         r{a}, r{a}, r{b}")
        self.emit(f"s2r         r{b}, ctaid.x")
        self.emit(f"add         r{a}, r{a}, r{b}")  # a = block
        self.emit(f"s2r         r{b}, nwarps")
        self.emit(f"mul         r{c}, r{a}, r{b}")
        self.emit(f"s2r         r{b}, warpid")
        self.emit(f"add         r{c}, r{c}, r{b}")  # c = global warp
        self.emit(f"shli        r{c}, r{c}, {(WARP_WORDS * 4).bit_length() - 1}")
        self.emit(f"ldparam     r{R.wat}, wat")
        self.emit(f"add         r{R.wat}, r{R.wat}, r{c}")
        self.emit(f"li          r{b}, {self.threads}")
        self.emit(f"mul         r{a}, r{a}, r{b}")
        self.emit(f"s2r         r{b}, tid")
        self.emit(f"add         r{c}, r{a}, r{b}")  # c = global thread id
        self.emit(f"shli        r{R.sh}, r{b}, {(SH_THREAD * 4).bit_length() - 1}")
        self.emit(f"shli        r{R.scr}, r{c}, {(THREAD_WORDS * 4).bit_length() - 1}")
        self.emit(f"ldparam     r{b}, thr")
        self.emit(f"add         r{R.scr}, r{R.scr}, r{b}")
        self.emit(f"ldparam     r{R.gat}, gat")
        self.emit(f"ldparam     r{R.inp}, inp")
        self.emit(f"addi        r{R.inp}, r{R.inp}, 1020")
        self.emit(f"addi        r{R.inp}, r{R.inp}, 4")
        self.emit(f"s2r         r{R.wsh}, warpid")
        self.emit(f"shli        r{R.wsh}, r{R.wsh}, {(SH_WARP * 4).bit_length() - 1}")
        self.add_const(R.wsh, self.sh_block)
        # each data register from the input, lane dependent
        self.emit(f"muli        r{t}, r{c}, {self.rng.choice([4, 12, 20, 36])}")
        self.emit(f"andi        r{t}, r{t}, 1020")
        self.emit(f"add         r{t}, r{t}, r{R.inp}")
        for reg in d:
            if self.rng.random() < 0.15:
                self.const(reg)
            else:
                self.emit(f"ldg         r{reg}, [r{t}{4 * self.rng.randint(-256, 255):+d}]")
        for p in range(7):
            cmp = self.rng.choice([i for i in INSTRUCTIONS if i.sem is Sem.ICMP])
            self.emit(f"{cmp.mnemonic:<11} p{p}, r{self.rng.choice(d)}, r{self.rng.choice(d)}")

    def epilogue(self) -> None:
        R = self.R
        base = 4 * (THREAD_WORDS - OUT_WORDS)
        for reg in range(32):
            self.emit(f"stg         [r{R.scr}+{base + 4 * reg}], r{reg}")
        acc = R.tmp
        self.emit(f"movi        r{acc}, 0")
        for p in range(7):
            self.emit(f"ori         r{acc}, r{acc}, {1 << p}", f"@p{p}")
        self.emit(f"stg         [r{R.scr}+{base + 128}], r{acc}")
        self.emit("exit")

    def fault_construct(self) -> str:
        """Chosen lanes of one warp (or that warp as a whole) fault; returns the kind."""
        r, t, R = self.rng, self.R.tmp, self.R
        kind = r.choice(FAULT_KINDS)
        gw = r.randrange(self.nwarps * self.nblocks)
        warp_lanes = min(self.lanes, self.threads - (gw % self.nwarps) * self.lanes)
        if kind in ("divergent_bar", "divergent_mma") and warp_lanes < 2:
            kind = "oor_high"
        if kind == "divergent_mma" and not self.full_warps:
            kind = "divergent_bar"
        if kind in ("divergent_bar", "barrier_deadlock") and self.exited:
            kind = "oor_high"
        if kind == "barrier_deadlock" and (self.nwarps, self.nblocks) != (2, 1):
            kind = "stack_underflow"  # one waiting warp: which one reports is not a choice
        pw, pf = "p5", "p6"  # pw: not the chosen warp; pf: a chosen lane of it
        self.emit(f"li          r{t}, {self.addr['wat'] + gw * WARP_WORDS * 4:#x}")
        self.emit(f"isetp.ne    {pw}, r{R.wat}, r{t}")
        self.emit(f"s2r         r{t}, laneid")
        if kind in ("divergent_bar", "divergent_mma"):  # lane 0, or the even lanes
            if r.random() < 0.5:
                self.emit(f"andi        r{t}, r{t}, 1")
            self.emit(f"isetp.eq    {pf}, r{t}, r0")
        else:
            m = r.choice([0, 1, 3, 7, self.lanes - 1])
            self.emit(f"andi        r{t}, r{t}, {m}")
            self.emit(f"isetp.eq    {pf}, r{t}, r0")
        self.emit(f"pand        {pf}, {pf}, !{pw}")
        g = f"@{pf}"
        d = self.dst()
        in_loop = kind in _LOOPABLE_FAULTS and r.random() < 0.5
        if r.random() < 0.5:  # an older long-latency op still in flight at the fault
            older = r.random()
            if older < 0.5:
                self.straight(r.choice(LONG_LATENCY), guard="")
            elif older < 0.75:
                self.load_input()
            else:
                self.warp_area()
        if in_loop:  # each chosen lane faults on its last trip of a per-lane-count loop
            cnt, g = self.R.loops[0], "@p4"
            done, top = self.label("fdone"), self.label("floop")
            self.emit(f"s2r         r{cnt}, laneid")
            self.emit(f"xori        r{cnt}, r{cnt}, {r.randint(0, 3)}")
            self.emit(f"andi        r{cnt}, r{cnt}, 3")
            self.emit(f"addi        r{cnt}, r{cnt}, 1")
            self.emit(f"ssy         {done}")
            self.place(top)
            self.emit(f"movi        r{t}, 1")
            self.emit(f"isetp.eq    p4, r{cnt}, r{t}")
            self.emit(f"pand        p4, p4, {pf}")
        if kind == "oor_high":
            self.emit(f"lui         r{t}, 0x10")  # 1 MiB: the end of device memory
            self.emit(f"ldg         r{d}, [r{t}+{r.choice([0, 4, IMM_MAX - 3])}]", g)
        elif kind == "negative_address":
            self.emit(f"stg         [r0{IMM_MIN:+d}], r{self.src()}", g)
        elif kind == "null_guard":
            self.emit(f"ldg         r{d}, [r0+{r.choice([0, 4, 0x400 - 4])}]", g)
        elif kind == "oor_mixed_misaligned":
            self.emit(f"s2r         r{t}, laneid")
            self.emit(f"shli        r{t}, r{t}, 19")  # lanes >= 2: past 1 MiB
            self.emit(f"add         r{t}, r{t}, r{R.inp}")
            self.emit(f"ldg         r{d}, [r{t}+2]", g)
        elif kind == "misaligned_store":
            self.emit(f"stg         [r{R.scr}+{r.choice([1, 2, 3])}], r{self.src()}", g)
        elif kind == "misaligned_atom":
            self.emit(f"addi        r{t}, r{R.wat}, {r.choice([1, 2, 3])}")
            self.emit(f"atom.{r.choice(ATOMIC_OPS):<6} r{d}, [r{t}], r{self.src()}", g)
        elif kind == "oor_atom":
            self.emit(f"lui         r{t}, 0xffff")
            self.emit(f"atom.cas    r{d}, [r{t}], r{self.src()}, r{self.src()}", g)
        elif kind == "shared_oor":
            self.emit(f"li          r{t}, {self.shared_bytes}")
            self.emit(f"lds         r{d}, [r{t}+{r.choice([0, 4, 64])}]", g)
        elif kind == "shared_misaligned":
            self.emit(f"sts         [r{R.sh}+{r.choice([1, 2, 3])}], r{self.src()}", g)
        elif kind == "shared_atom_oor":
            self.emit(f"li          r{t}, {self.shared_bytes + 4 * r.randint(0, 4)}")
            self.emit(f"atoms.{r.choice(ATOMIC_OPS):<5} r{d}, [r{t}], r{self.src()}", g)
        elif kind == "param_oor":
            self.emit(f"ldparam     r{d}, {r.choice([16, 20, IMM_MAX - 3])}", g)
        elif kind in ("illegal_word", "divergent_bar", "divergent_mma", "fault_then_illegal"):
            join, fall = self.label("fj"), self.label("fs")
            self.emit(f"ssy         {join}")
            self.emit(f"bra         {fall}", f"@{pw}")  # other warps: to the sync
            if kind == "illegal_word":
                self.emit(f"bra         {fall}", f"@!{pf}")
                self.emit(f".word       {r.choice(_ILLEGAL_WORDS):#010x}")
            elif kind == "fault_then_illegal":  # the older fault is the one reported
                self.emit(f"ldg         r{d}, [r{R.scr}+2]", g)
                self.emit(f".word       {r.choice(_ILLEGAL_WORDS):#010x}")
            elif kind == "divergent_bar":
                self.emit(f"bra         {fall}", f"@{pf}")
                self.emit("bar")
            else:
                self.emit(f"bra         {fall}", f"@{pf}")
                self.mma()
            self.place(fall)
            self.emit("sync")
            self.place(join)
        elif kind == "stack_underflow":
            skip = self.label("fu")
            self.emit(f"bra         {skip}", f"@{pw}")  # uniform per warp
            self.emit("sync")
            self.place(skip)
        elif kind == "stack_overflow":
            skip = self.label("fo")
            self.emit(f"bra         {skip}", f"@{pw}")
            for _ in range(17):
                self.emit(f"ssy         {skip}")
            self.place(skip)
        elif kind == "barrier_deadlock":
            self.emit("exit", f"@!{pw}")  # the chosen warp leaves; the other waits for ever
            self.emit("bar")
        elif kind == "fall_off_end":  # the chosen warp runs past the last word of the code
            self.emit("bra         code_end", f"@!{pw}")
        elif kind == "pc_out_of_range":
            self.emit(f"bra         .+{r.choice([4096, 65536, 4 * ((1 << 20) - 1)])}", g)
        if in_loop:
            self.emit(f"addi        r{self.R.loops[0]}, r{self.R.loops[0]}, -1")
            self.emit(f"isetp.gt    p3, r{self.R.loops[0]}, r0")
            self.emit(f"bra         {top}", "@p3")
            self.emit("sync")
            self.place(done)
        return kind

    def program(self) -> str:
        self.lines = [
            f"; independent random program: block {self.block}, grid {self.grid}, "
            f"reserved {sorted(self.R.reserved)}",
            "        .kernel indep",
            "        .param inp, ptr",
            "        .param thr, ptr",
            "        .param wat, ptr",
            "        .param gat, ptr",
            f"        .shared {self.shared_bytes}",
        ]
        self.prologue()
        n = self.rng.randint(6, 16)
        at = self.rng.randrange(n) if self.fault else -1
        self.fault_kind = None
        for i in range(n):
            if i == at:
                self.fault_kind = self.fault_construct()
            self.body(0, 1)
        self.epilogue()
        self.place("code_end")
        self.emit("nop")
        self.lines.append("        .end")
        return "\n".join(self.lines) + "\n"


def indep_source(seed: int, lanes: int, warps: int, cores: int = 1, fault: bool = False,
                 shared_max: int = 4096) -> tuple[str, _Gen]:
    """The assembly text of program ``seed`` and the generator state (shape, buffers);
    ``shared_max``: a core's shared memory, the most a block may declare."""
    g = _Gen(seed, lanes, warps, cores, fault, shared_max)
    return g.program(), g


def indep_launch(seed: int, lanes: int, warps: int, cores: int = 1, fault: bool = False,
                 shared_max: int = 4096) -> KernelLaunch:
    """Program ``seed`` for ``cores`` cores of ``warps`` warps of ``lanes`` lanes (and
    ``shared_max`` bytes of shared memory each), as a launch."""
    src, g = indep_source(seed, lanes, warps, cores, fault, shared_max)
    ln = launch_from_asm(src, "indep", g.grid, g.block, ["inp", "thr", "wat", "gat"],
                         g.arrays, name=f"indep_{'fault_' if fault else ''}{seed}")
    ln.seed = seed  # (harness.reproduce_command reruns it through regress --generator indep)
    ln.note = f"indep seed {seed}" + (f" fault_{g.fault_kind}" if fault else "")
    return ln
