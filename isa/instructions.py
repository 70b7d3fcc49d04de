"""The instruction set as one table.

Each :class:`Instr` row is everything the tools need: mnemonic, opcode and function code,
format, operands in assembly order (with the fields they fill and whether they are read or
written), the semantic class (which ISS function and which RTL unit carries it out), the
latency class (which pipeline stage produces the result) and a one-line meaning in the
pseudo-code used by docs/isa.md.

Families share an opcode and are told apart by ``fn`` (bits 30:26): integer and float
compares (the condition), atomics (the operation), conversions, SFU functions, shuffles
and votes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .formats import FORMATS, Format
from .operands import Kind, Operand


class Sem(Enum):
    """Semantic class: which ISS function executes the instruction and which unit in RTL."""

    INT = "int"  # integer ALU, register-register
    INT_IMM = "int_imm"  # integer ALU, register-immediate
    CONST = "const"  # 16-bit constant moves
    MUL = "mul"  # integer multiplier
    ICMP = "icmp"  # integer compare into a predicate
    PLOGIC = "plogic"  # predicate logic
    SELECT = "select"  # per-lane select by predicate
    FP = "fp"  # FP32 arithmetic
    HALF = "half"  # fp16/bf16 conversions and packed half2 arithmetic
    MMA = "mma"  # warp-level matrix multiply-accumulate (the matrix unit)
    FCMP = "fcmp"  # FP32 compare into a predicate
    CVT = "cvt"  # int <-> float conversions
    SFU = "sfu"  # special functions
    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"
    FENCE = "fence"
    BARRIER = "barrier"
    SHUFFLE = "shuffle"
    VOTE = "vote"
    SREG = "sreg"
    PARAM = "param"
    BRANCH = "branch"  # bra, ssy, sync: touch the reconvergence stack
    CONTROL = "control"  # nop, exit


class Lat(Enum):
    """Latency class: the stage whose output carries the result (see microarchitecture)."""

    ALU = "alu"  # ready after execute-1
    LONG = "long"  # ready after execute-2: multiplier, FPU, conversions
    SFU = "sfu"  # multi-cycle special-function unit
    MMA = "mma"  # multi-cycle matrix unit; writes a group of registers
    MEM = "mem"  # produced in the memory stage; global accesses park the warp
    CTRL = "ctrl"  # writes no register


class Flow(Enum):
    """Who decides what the warp does next: the pipeline (``pc + 4``) or the instruction.

    The ISS leaves the PC to the functions of the instructions that decide it, and the RTL
    decoder marks them ``ctrl`` so the core holds the warp until they are resolved.
    """

    NEXT = "next"  # the warp goes on at pc + 4
    STACK = "stack"  # acts on the SIMT reconvergence stack: sets pc and the active mask
    BARRIER = "barrier"  # waits for the block's other warps, then goes on at pc + 4


class Space(Enum):
    GLOBAL = "global"
    SHARED = "shared"
    PARAM = "param"


@dataclass(frozen=True)
class Instr:
    mnemonic: str
    opcode: int
    fmt: Format
    operands: tuple[Operand, ...]
    sem: Sem
    lat: Lat
    summary: str
    meaning: str
    fn: int | None = None
    space: Space | None = None
    flow: Flow = Flow.NEXT

    @property
    def sets_pc(self) -> bool:
        """The instruction, not the pipeline, decides the warp's next PC (see :class:`Flow`)."""
        return self.flow is not Flow.NEXT

    @property
    def dst(self) -> Operand | None:
        for op in self.operands:
            if op.is_dst:
                return op
        return None

    @property
    def writes_reg(self) -> bool:
        d = self.dst
        return d is not None and d.kind is Kind.REG

    @property
    def writes_pred(self) -> bool:
        d = self.dst
        return d is not None and d.kind is Kind.PRED

    @property
    def family(self) -> str:
        """The mnemonic before its first dot: ``isetp.lt`` -> ``isetp``."""
        return self.mnemonic.split(".")[0]

    @property
    def suffix(self) -> str | None:
        parts = self.mnemonic.split(".", 1)
        return parts[1] if len(parts) == 2 else None


# ---------------------------------------------------------------------------------------
# Operand shorthands
RD = Operand(Kind.REG, ("rd",), "dst")
RD_KEEP = Operand(Kind.REG, ("rd",), "dst", reads_old=True)
RS1 = Operand(Kind.REG, ("rs1",))
RS2 = Operand(Kind.REG, ("rs2",))
RS3 = Operand(Kind.REG, ("rs3",))
PD = Operand(Kind.PRED, ("rd",), "dst")
PS1 = Operand(Kind.PRED_SRC, ("rs1",))
PS2 = Operand(Kind.PRED_SRC, ("rs2",))
PS3 = Operand(Kind.PRED_SRC, ("rs3",))
IMM = Operand(Kind.IMM, ("imm11",))
IMM16S = Operand(Kind.IMM16, ("imm16",), signed=True)
IMM16U = Operand(Kind.IMM16, ("imm16",), signed=False)
MEM_I = Operand(Kind.MEM, ("rs1", "imm11"))
MEM_S = Operand(Kind.MEM, ("rs1", "simm_lo", "simm_hi"))
MEM_R = Operand(Kind.MEM_REG, ("rs1",))
SREG = Operand(Kind.SREG, ("rs1",))
LABEL = Operand(Kind.LABEL, ("off21",))
PARAM = Operand(Kind.PARAM, ("imm11",))
# mma fragments: the first register of an aligned group (sizes in isa/mma.py)
MMA_D = Operand(Kind.REG, ("rd",), "dst", frag="d", align=4)
MMA_A = Operand(Kind.REG, ("rs1",), frag="a", align=4)
MMA_B = Operand(Kind.REG, ("rs2",), frag="b", align=4)
MMA_C = Operand(Kind.REG, ("rs3",), frag="c", align=4)

R, R4, I, S, U, B = (FORMATS[n] for n in ("R", "R4", "I", "S", "U", "B"))

# Opcode map (7 bits). Groups of 16 by class; everything not listed is reserved and decodes
# as an illegal instruction, including 0x00 so that zeroed memory never executes.
OPC_CONTROL, OPC_INT, OPC_INT_IMM, OPC_MUL, OPC_FP, OPC_SFU, OPC_MEM, OPC_WARP = (
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70)

INT_CONDS = ("eq", "ne", "lt", "le", "gt", "ge", "ltu", "leu", "gtu", "geu")
FP_CONDS = ("eq", "ne", "lt", "le", "gt", "ge", "nan", "num")
ATOMIC_OPS = ("add", "min", "max", "exch", "fadd", "and", "or", "xor", "fmin", "fmax")
"""Atomic operations (fn order); ``cas`` has an opcode of its own. fmin/fmax order floats by
their bits as Triton's lowering does (numerics.atomic_fminmax): b >= 0.0 (also -0.0) takes
the signed integer max/min, b < 0.0 the unsigned integer min/max, a NaN b leaves m."""
CVT_OPS = ("i2f", "u2f", "f2i", "f2u")
SFU_OPS = ("rcp", "rsqrt", "sqrt", "exp2", "log2", "sin", "cos")
SHFL_MODES = ("idx", "up", "down", "xor")
HALF_FORMATS = ("f16", "bf16")
"""The 16-bit float formats: IEEE binary16 and bfloat16 (8-bit exponent, 7-bit mantissa)."""
HCVT_OPS = ("hl2f", "hh2f", "bl2f", "bh2f", "f2h", "f2b", "f2h2", "f2b2")
"""Half conversions (fn order): h = fp16, b = bf16, l/h = low/high half of the register."""
HALF2_OPS = ("hadd2", "hsub2", "hmul2")
"""Packed two-way half arithmetic (register-register); ``hfma2`` has its own opcodes."""

_COND_MEANING = {
    "eq": "a == b", "ne": "a != b", "lt": "a < b", "le": "a <= b", "gt": "a > b",
    "ge": "a >= b", "ltu": "a <u b", "leu": "a <=u b", "gtu": "a >u b", "geu": "a >=u b",
}


def _table() -> list[Instr]:
    t: list[Instr] = []

    def add(*args, **kw) -> None:
        t.append(Instr(*args, **kw))

    # --- control ------------------------------------------------------------------------
    add("nop", 0x01, R, (), Sem.CONTROL, Lat.CTRL, "no operation", "-")
    add("exit", 0x02, R, (), Sem.CONTROL, Lat.CTRL, "end the guarded threads",
        "active lanes exit; when none of the warp stays active, pop the reconvergence stack",
        flow=Flow.STACK)
    add("bra", 0x03, B, (LABEL,), Sem.BRANCH, Lat.CTRL, "branch, diverging by the guard",
        "taken = active & guard; all -> PC = target; none -> fall through; "
        "some -> push DIV(PC+4, active & ~guard), active = taken, PC = target", flow=Flow.STACK)
    add("ssy", 0x04, B, (LABEL,), Sem.BRANCH, Lat.CTRL, "set the reconvergence point",
        "push SYNC(target, active)", flow=Flow.STACK)
    add("sync", 0x05, R, (), Sem.BRANCH, Lat.CTRL, "reconverge",
        "pop the top entry: PC = entry.pc, active = entry.mask & live (repeat while empty)",
        flow=Flow.STACK)
    add("bar", 0x06, R, (), Sem.BARRIER, Lat.CTRL, "block barrier",
        "wait until every warp of the block reaches a bar; shared-memory writes before it "
        "are visible after it", flow=Flow.BARRIER)
    add("fence", 0x07, R, (), Sem.FENCE, Lat.CTRL, "memory fence",
        "the thread's earlier global and shared writes are visible to the device before "
        "its later accesses")
    add("s2r", 0x08, R, (RD, SREG), Sem.SREG, Lat.ALU, "read a special register", "d = sreg")
    add("ldparam", 0x09, I, (RD, PARAM), Sem.PARAM, Lat.MEM, "load a kernel parameter",
        "d = param_block[offset] (word)", space=Space.PARAM)

    # --- integer ALU ----------------------------------------------------------------------
    for i, (name, meaning) in enumerate((
        ("add", "d = a + b"), ("sub", "d = a - b"), ("and", "d = a & b"), ("or", "d = a | b"),
        ("xor", "d = a ^ b"), ("shl", "d = a << (b & 31)"), ("shr", "d = a >>u (b & 31)"),
        ("sra", "d = a >>s (b & 31)"), ("min", "d = min_s(a, b)"), ("max", "d = max_s(a, b)"),
        ("minu", "d = min_u(a, b)"), ("maxu", "d = max_u(a, b)"),
    )):
        add(name, OPC_INT + i, R, (RD, RS1, RS2), Sem.INT, Lat.ALU, f"integer {name}", meaning)
    for fn, cond in enumerate(INT_CONDS):
        add(f"isetp.{cond}", 0x1C, R, (PD, RS1, RS2), Sem.ICMP, Lat.ALU,
            f"integer compare ({cond})", f"pd = {_COND_MEANING[cond]}", fn=fn)
    add("sel", 0x1D, R4, (RD, RS1, RS2, PS3), Sem.SELECT, Lat.ALU, "select by predicate",
        "d = p ? a : b")
    for fn, name in enumerate(("pand", "por", "pxor")):
        op = {"pand": "&", "por": "|", "pxor": "^"}[name]
        add(name, 0x1E, R, (PD, PS1, PS2), Sem.PLOGIC, Lat.ALU, f"predicate {name[1:]}",
            f"pd = p1 {op} p2", fn=fn)

    for i, (name, meaning) in enumerate((
        ("addi", "d = a + imm"), ("andi", "d = a & imm"), ("ori", "d = a | imm"),
        ("xori", "d = a ^ imm"), ("shli", "d = a << (imm & 31)"),
        ("shri", "d = a >>u (imm & 31)"), ("srai", "d = a >>s (imm & 31)"),
    )):
        add(name, OPC_INT_IMM + i, I, (RD, RS1, IMM), Sem.INT_IMM, Lat.ALU,
            f"integer {name[:-1]} with immediate", meaning + " (imm sign-extended)")
    add("muli", 0x27, I, (RD, RS1, IMM), Sem.MUL, Lat.LONG, "multiply by immediate",
        "d = (a * imm)[31:0]")
    add("movi", 0x28, U, (RD, IMM16S), Sem.CONST, Lat.ALU, "move signed 16-bit constant",
        "d = sext(imm16)")
    add("lui", 0x29, U, (RD, IMM16U), Sem.CONST, Lat.ALU, "load upper half",
        "d = imm16 << 16")
    add("lli", 0x2A, U, (RD_KEEP, IMM16U), Sem.CONST, Lat.ALU, "load lower half, keep upper",
        "d = (d & 0xffff0000) | imm16")

    # --- multiplier -----------------------------------------------------------------------
    add("mul", OPC_MUL + 0, R, (RD, RS1, RS2), Sem.MUL, Lat.LONG, "multiply, low word",
        "d = (a * b)[31:0]")
    add("mulhi", OPC_MUL + 1, R, (RD, RS1, RS2), Sem.MUL, Lat.LONG, "multiply, high word",
        "d = (sext(a) * sext(b))[63:32]")
    add("mulhu", OPC_MUL + 2, R, (RD, RS1, RS2), Sem.MUL, Lat.LONG,
        "multiply unsigned, high word", "d = (zext(a) * zext(b))[63:32]")

    # --- FP32 -----------------------------------------------------------------------------
    for i, (name, meaning) in enumerate((
        ("fadd", "d = a + b"), ("fsub", "d = a - b"), ("fmul", "d = a * b"),
    )):
        add(name, OPC_FP + i, R, (RD, RS1, RS2), Sem.FP, Lat.LONG, f"FP32 {name[1:]}",
            meaning + " (RNE, FTZ)")
    add("ffma", OPC_FP + 3, R4, (RD, RS1, RS2, RS3), Sem.FP, Lat.LONG, "FP32 fused multiply-add",
        "d = a * b + c, one rounding (RNE, FTZ)")
    add("fmin", OPC_FP + 4, R, (RD, RS1, RS2), Sem.FP, Lat.LONG, "FP32 minimum",
        "d = min(a, b); a NaN operand yields the other; -0 < +0")
    add("fmax", OPC_FP + 5, R, (RD, RS1, RS2), Sem.FP, Lat.LONG, "FP32 maximum",
        "d = max(a, b); a NaN operand yields the other; -0 < +0")
    add("fabs", OPC_FP + 6, R, (RD, RS1), Sem.FP, Lat.LONG, "FP32 absolute value",
        "d = a with sign cleared (FTZ)")
    add("fneg", OPC_FP + 7, R, (RD, RS1), Sem.FP, Lat.LONG, "FP32 negate",
        "d = a with sign flipped (FTZ)")
    for fn, cond in enumerate(FP_CONDS):
        special = {"nan": "isnan(a) | isnan(b)", "num": "!isnan(a) & !isnan(b)"}
        meaning = special[cond] if cond in special else (
            _COND_MEANING[cond] + " (false if either is NaN)")
        add(f"fsetp.{cond}", 0x48, R, (PD, RS1, RS2), Sem.FCMP, Lat.ALU,
            f"FP32 compare ({cond})", "pd = " + meaning, fn=fn)
    for fn, (name, meaning) in enumerate((
        ("i2f", "d = f32(s32 a), RNE"), ("u2f", "d = f32(u32 a), RNE"),
        ("f2i", "d = s32(trunc(a)), saturating, NaN -> 0"),
        ("f2u", "d = u32(trunc(a)), saturating, NaN -> 0"),
    )):
        add(f"cvt.{name}", 0x49, R, (RD, RS1), Sem.CVT, Lat.LONG, f"convert {name}", meaning,
            fn=fn)

    # --- half precision: conversions and packed half2 ------------------------------------
    hcvt_meaning = {
        "hl2f": ("fp16 low half to FP32", "d = f32(f16 a[15:0]), exact; NaN -> 0x7fffffff"),
        "hh2f": ("fp16 high half to FP32", "d = f32(f16 a[31:16]), exact; NaN -> 0x7fffffff"),
        "bl2f": ("bf16 low half to FP32", "d = f32(bf16 a[15:0]), exact; NaN -> 0x7fffffff"),
        "bh2f": ("bf16 high half to FP32", "d = f32(bf16 a[31:16]), exact; NaN -> 0x7fffffff"),
        "f2h": ("FP32 to fp16, low half", "d = {0, f16(a)}, RNE; NaN -> 0x7fff"),
        "f2b": ("FP32 to bf16, low half", "d = {0, bf16(a)}, RNE; NaN -> 0x7fff"),
        "f2h2": ("two FP32 to packed fp16", "d = {f16(b), f16(a)}: a low, b high; RNE"),
        "f2b2": ("two FP32 to packed bf16", "d = {bf16(b), bf16(a)}: a low, b high; RNE"),
    }
    for fn, name in enumerate(HCVT_OPS):
        summary, meaning = hcvt_meaning[name]
        ops = (RD, RS1, RS2) if name.endswith("2") else (RD, RS1)
        add(f"hcvt.{name}", OPC_FP + 0xA, R, ops, Sem.HALF, Lat.LONG, summary, meaning, fn=fn)
    for fn, (fmt, name) in enumerate((f, n) for f in HALF_FORMATS for n in HALF2_OPS):
        sym = {"hadd2": "+", "hsub2": "-", "hmul2": "*"}[name]
        add(f"{name}.{fmt}", OPC_FP + 0xB, R, (RD, RS1, RS2), Sem.HALF, Lat.LONG,
            f"packed {fmt} {name[1:-1]}",
            f"d.lo = a.lo {sym} b.lo; d.hi = a.hi {sym} b.hi ({fmt}, RNE)", fn=fn)
    for i, fmt in enumerate(HALF_FORMATS):
        add(f"hfma2.{fmt}", OPC_FP + 0xC + i, R4, (RD, RS1, RS2, RS3), Sem.HALF, Lat.LONG,
            f"packed {fmt} fused multiply-add",
            f"d.lo = a.lo * b.lo + c.lo; d.hi likewise ({fmt}, one rounding, RNE)")

    # --- special functions ----------------------------------------------------------------
    for fn, name in enumerate(SFU_OPS):
        meaning = {"rcp": "1 / a", "rsqrt": "1 / sqrt(a)", "sqrt": "sqrt(a)",
                   "exp2": "2 ** a", "log2": "log2(a)", "sin": "sin(a)", "cos": "cos(a)"}[name]
        add(f"sfu.{name}", OPC_SFU, R, (RD, RS1), Sem.SFU, Lat.SFU, f"special function {name}",
            f"d ~= {meaning} (error bound in numerics)", fn=fn)

    # --- memory ---------------------------------------------------------------------------
    add("ldg", OPC_MEM + 0, I, (RD, MEM_I), Sem.LOAD, Lat.MEM, "load global word",
        "d = global[a + imm]", space=Space.GLOBAL)
    add("stg", OPC_MEM + 1, S, (MEM_S, RS2), Sem.STORE, Lat.CTRL, "store global word",
        "global[a + imm] = b", space=Space.GLOBAL)
    add("lds", OPC_MEM + 2, I, (RD, MEM_I), Sem.LOAD, Lat.MEM, "load shared word",
        "d = shared[a + imm]", space=Space.SHARED)
    add("sts", OPC_MEM + 3, S, (MEM_S, RS2), Sem.STORE, Lat.CTRL, "store shared word",
        "shared[a + imm] = b", space=Space.SHARED)
    for opc, space, prefix in ((OPC_MEM + 4, Space.GLOBAL, "atom"),
                               (OPC_MEM + 6, Space.SHARED, "atoms")):
        for fn, name in enumerate(ATOMIC_OPS):
            meaning = {"add": "m + b", "min": "min_s(m, b)", "max": "max_s(m, b)",
                       "exch": "b", "fadd": "m +f b (RNE, FTZ)", "and": "m & b",
                       "or": "m | b", "xor": "m ^ b",
                       "fmin": "b >= 0.0 ? min_s(m, b) : b < 0.0 ? max_u(m, b) : m (bits)",
                       "fmax": "b >= 0.0 ? max_s(m, b) : b < 0.0 ? min_u(m, b) : m (bits)",
                       }[name]
            add(f"{prefix}.{name}", opc, R, (RD, MEM_R, RS2), Sem.ATOMIC, Lat.MEM,
                f"{space.value} atomic {name}",
                f"d = m = {space.value}[a]; {space.value}[a] = {meaning}; lanes in lane order",
                fn=fn, space=space)
        add(f"{prefix}.cas", opc + 1, R4, (RD, MEM_R, RS2, RS3), Sem.ATOMIC, Lat.MEM,
            f"{space.value} compare-and-swap",
            f"d = m = {space.value}[a]; if m == b: {space.value}[a] = c; lanes in lane order",
            space=space)

    # --- warp-level -----------------------------------------------------------------------
    for fn, mode in enumerate(SHFL_MODES):
        meaning = {"idx": "src = b & (W-1)", "up": "src = lane - b",
                   "down": "src = lane + b", "xor": "src = lane ^ b"}[mode]
        add(f"shfl.{mode}", OPC_WARP, R, (RD, RS1, RS2), Sem.SHUFFLE, Lat.ALU,
            f"warp shuffle ({mode})",
            f"{meaning}; d = a of lane src if src is in the warp and active, else own a",
            fn=fn)
    add("vote.any", OPC_WARP + 1, R, (PD, PS1), Sem.VOTE, Lat.ALU, "vote any",
        "pd = any active lane has p", fn=0)
    add("vote.all", OPC_WARP + 1, R, (PD, PS1), Sem.VOTE, Lat.ALU, "vote all",
        "pd = every active lane has p", fn=1)
    add("vote.ballot", OPC_WARP + 1, R, (RD, PS1), Sem.VOTE, Lat.ALU, "vote ballot",
        "d = bit mask of the active lanes that have p", fn=2)
    for i, fmt in enumerate(HALF_FORMATS):
        add(f"mma.{fmt}", OPC_WARP + 2 + i, R4, (MMA_D, MMA_A, MMA_B, MMA_C), Sem.MMA, Lat.MMA,
            f"warp matrix multiply-accumulate ({fmt} in, FP32 accumulate)",
            "D = A x B + C over the whole warp; rd, rs1, rs2, rs3 are the first registers "
            "(multiples of 4) of the D, A, B, C fragment groups (docs/tensor-core.md); "
            "every lane of the warp must execute it")
    return t


INSTRUCTIONS: tuple[Instr, ...] = tuple(_table())
BY_MNEMONIC: dict[str, Instr] = {i.mnemonic: i for i in INSTRUCTIONS}
BY_ENCODING: dict[tuple[int, int | None], Instr] = {(i.opcode, i.fn): i for i in INSTRUCTIONS}
OPCODES_WITH_FN: frozenset[int] = frozenset(i.opcode for i in INSTRUCTIONS if i.fn is not None)
USED_OPCODES: frozenset[int] = frozenset(i.opcode for i in INSTRUCTIONS)
RESERVED_OPCODES: tuple[int, ...] = tuple(o for o in range(128) if o not in USED_OPCODES)
SETS_PC: frozenset[str] = frozenset(i.mnemonic for i in INSTRUCTIONS if i.sets_pc)
"""Mnemonics that decide what the warp does next themselves (``Flow`` other than NEXT)."""
SIMT_OPS: frozenset[str] = frozenset(i.mnemonic for i in INSTRUCTIONS if i.flow is Flow.STACK)
"""Mnemonics that act on the SIMT reconvergence stack (the stack unit's operations)."""


def _check_table() -> None:
    assert len(BY_MNEMONIC) == len(INSTRUCTIONS), "duplicate mnemonic"
    assert len(BY_ENCODING) == len(INSTRUCTIONS), "duplicate (opcode, fn)"
    for i in INSTRUCTIONS:
        assert 0 < i.opcode < 128
        if i.opcode in OPCODES_WITH_FN:
            assert i.fn is not None, f"{i.mnemonic}: family member without fn"
            assert i.fmt.has("fn"), f"{i.mnemonic}: family in a format without fn"
        if i.sem is Sem.BRANCH:
            assert i.flow is Flow.STACK, f"{i.mnemonic}: a branch acts on the SIMT stack"
        if i.sem is Sem.BARRIER:
            assert i.flow is Flow.BARRIER, f"{i.mnemonic}: a barrier parks the warp"
        for op in i.operands:
            assert (op.frag is not None) == (i.sem is Sem.MMA), f"{i.mnemonic}: fragment"
            for f in op.fields:
                assert i.fmt.has(f), f"{i.mnemonic}: operand field {f} not in {i.fmt.name}"


_check_table()
