"""docs/isa.md, generated from the ISA tables (``simtgpu isa --markdown`` / ``make docs``).

Every table here is read from ``simtgpu.isa``; the prose only explains how to read them.
A test fails when docs/isa.md differs from :func:`render_markdown`, so the reference can
never drift from the definitions.
"""

from __future__ import annotations

from dataclasses import replace

from .abi import (
    FAULT_DOCS,
    GLOBAL_NULL_GUARD,
    INSTR_BYTES,
    MAX_PARAMS,
    MEMORY_MAP,
    NUM_PREDS,
    NUM_REGS,
    PARAM_TYPES,
    PT,
    RECONVERGENCE_STACK_DEPTH,
    REGISTER_CONVENTIONS,
    SREG_DOCS,
    FaultCause,
    SReg,
)
from .formats import FORMATS, IMM11, IMM16, IMM_MAX, IMM_MIN, SIMM_PARTS, Format
from .instructions import INSTRUCTIONS, RESERVED_OPCODES, Flow, Instr, Lat, Sem
from .operands import KIND_SYNTAX, Kind, Operand

SEM_TITLES: dict[Sem, str] = {
    Sem.CONTROL: "Control", Sem.BRANCH: "Branches and reconvergence",
    Sem.BARRIER: "Barrier", Sem.FENCE: "Fence", Sem.SREG: "Special registers",
    Sem.PARAM: "Kernel parameters", Sem.INT: "Integer ALU",
    Sem.INT_IMM: "Integer ALU with immediate", Sem.CONST: "Constants",
    Sem.MUL: "Integer multiply", Sem.ICMP: "Integer compare", Sem.PLOGIC: "Predicate logic",
    Sem.SELECT: "Select", Sem.FP: "FP32 arithmetic", Sem.FCMP: "FP32 compare",
    Sem.CVT: "Conversions", Sem.SFU: "Special functions", Sem.LOAD: "Loads",
    Sem.STORE: "Stores", Sem.ATOMIC: "Atomics", Sem.SHUFFLE: "Warp shuffles",
    Sem.VOTE: "Warp votes", Sem.HALF: "Half precision (fp16, bf16)",
    Sem.MMA: "Matrix multiply-accumulate",
}

LAT_DOCS: dict[Lat, str] = {
    Lat.ALU: "result ready after execute-1 (ALU, compares, moves, shuffles, votes)",
    Lat.LONG: "result ready after execute-2 (multiplier, FPU, conversions)",
    Lat.SFU: "multi-cycle special-function unit",
    Lat.MEM: "result produced by the memory stage; global accesses park the warp",
    Lat.CTRL: "writes no register",
    Lat.MMA: "multi-cycle matrix unit; writes a group of registers (docs/tensor-core.md)",
}

FLOW_DOCS: dict[Flow, str] = {
    Flow.NEXT: "the warp goes on at PC + 4",
    Flow.STACK: "decides the warp's next PC and active mask through the reconvergence stack",
    Flow.BARRIER: "the warp waits until every warp of its block arrives, then goes on at "
                  "PC + 4",
}


def operand_syntax(op: Operand) -> str:
    """How one operand slot is named in syntax lines: ``rd``, ``ps3``, ``[rs1+imm]``..."""
    f = op.fields[0]
    if op.kind is Kind.REG:
        return f
    if op.kind is Kind.PRED:
        return "pd"
    if op.kind is Kind.PRED_SRC:
        return "p" + f[1:]
    return {Kind.IMM: "imm", Kind.IMM16: "imm16", Kind.MEM: "[rs1+imm]",
            Kind.MEM_REG: "[rs1]", Kind.SREG: "sreg", Kind.LABEL: "target",
            Kind.PARAM: "param"}[op.kind]


def syntax(instr: Instr) -> str:
    """The assembly syntax of an instruction, e.g. ``addi rd, rs1, imm``."""
    ops = ", ".join(operand_syntax(o) for o in instr.operands)
    return f"{instr.mnemonic} {ops}" if ops else instr.mnemonic


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def _bits(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{hi}:{lo}"


def _format_section(fmt: Format) -> list[str]:
    fields = sorted(fmt.fields, key=lambda f: -f.lo)
    lines = [f"### Format {fmt.name}", "", fmt.summary[0].upper() + fmt.summary[1:] + ".", ""]
    lines += _table([_bits(f.lo, f.hi) for f in fields],
                    [[f.name + (" (s)" if f.signed else "") for f in fields]])
    return lines


def _opcode_cell(opcode: int) -> str:
    names = [i.mnemonic for i in INSTRUCTIONS if i.opcode == opcode]
    if not names:
        return "·"
    if len(names) == 1:
        return _code(names[0])
    families = sorted({n.split(".")[0] for n in names})
    return ", ".join(_code(f + ".*") for f in families)


def _flow_members(flow: Flow) -> str:
    if flow is Flow.NEXT:
        return "all others"
    return ", ".join(_code(i.mnemonic) for i in INSTRUCTIONS if i.flow is flow)


def _ranges(values: tuple[int, ...]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def render_markdown() -> str:
    """The full ISA reference, exactly the contents of docs/isa.md."""
    L: list[str] = []
    L += [
        "# simtgpu instruction set reference",
        "",
        "<!-- Generated from isa/ by `make docs` (simtgpu isa --markdown). Do not edit. -->",
        "",
        "## Overview",
        "",
        f"- Every instruction is one {8 * INSTR_BYTES}-bit little-endian word; the PC is a "
        f"byte address, so instructions sit at multiples of {INSTR_BYTES}.",
        f"- Each thread has {NUM_REGS} general registers `r0`..`r{NUM_REGS - 1}` of 32 bits "
        "(`r0` reads as zero, writes to it are discarded) and "
        f"{NUM_PREDS} predicates `p0`..`p{NUM_PREDS - 2}` plus `pt` (index {PT}, always true).",
        "- Every instruction carries a guard `@p`/`@!p` in its `pred`/`pneg` fields (default "
        "`@pt`): lanes whose guard is false do nothing. For `bra` the guard is the branch "
        "condition. The semantics of warps, divergence, barriers and memory are in "
        "[execution-model.md](execution-model.md); assembly syntax in "
        "[assembly.md](assembly.md).",
        "- Bits that an instruction does not use must be zero, and reserved opcodes and "
        "function codes are illegal: such words raise `ILLEGAL_INSTRUCTION`. Opcode 0 is "
        "reserved so that zeroed memory never executes.",
        "- Families (compares, atomics, conversions, SFU, shuffles, votes) share one opcode and "
        "are told apart by the function code `fn` in bits 30:26.",
        "",
        "## Formats",
        "",
        "Seven fields sit at the same place in every format, so a decoder can read register "
        "addresses before it knows the opcode. Bit ranges are `hi:lo`; `(s)` marks a two's "
        "complement field.",
        "",
    ]
    for fmt in FORMATS.values():
        L += _format_section(fmt)
    L += [
        f"In format S the {IMM11.width}-bit store offset is split: "
        f"{_simm_parts()} (sign in bit {SIMM_PARTS[-1].hi} of the word).",
        "",
        "## Operand kinds",
        "",
    ]
    L += _table(["kind", "written as", "encoding"], [
        [k.value, _cell(KIND_SYNTAX[k]), _cell(_KIND_ENCODING[k])] for k in Kind])
    L += [
        "A predicate source field (5 bits) is `{negate, 0, index[2:0]}`: bit 4 negates, bit 3 "
        "is reserved and must be zero. A predicate destination uses the low 3 bits of `rd`; "
        "its upper 2 bits must be zero.",
        "",
        "## Instructions",
        "",
        "Latency classes:",
        "",
    ]
    L += _table(["class", "meaning"], [[_code(lat.value), LAT_DOCS[lat]] for lat in Lat])
    L += ["Flow classes (what the warp does after the instruction):", ""]
    L += _table(["class", "instructions", "meaning"], [
        [_code(flow.value), _flow_members(flow), FLOW_DOCS[flow]] for flow in Flow])
    for sem in Sem:
        rows = [i for i in INSTRUCTIONS if i.sem is sem]
        if not rows:
            continue
        L += [f"### {SEM_TITLES.get(sem, sem.value)}", ""]
        L += _table(["mnemonic", "syntax", "format", "opcode", "fn", "meaning", "latency"], [
            [_code(i.mnemonic), _code(syntax(i)), i.fmt.name, f"0x{i.opcode:02x}",
             "-" if i.fn is None else str(i.fn), _cell(i.meaning), i.lat.value]
            for i in rows])
    L += [
        "## Opcode map",
        "",
        "Rows are the upper three opcode bits, columns the lower four; `·` is reserved. "
        "A family (`name.*`) shares its opcode and is decoded further by `fn`.",
        "",
    ]
    L += _table(["", *[f"x{c:x}" for c in range(16)]], [
        [f"0x{r:02x}", *[_opcode_cell(r + c) for c in range(16)]] for r in range(0, 128, 16)])
    reserved = ", ".join(f"0x{a:02x}" if a == b else f"0x{a:02x}-0x{b:02x}"
                         for a, b in _ranges(RESERVED_OPCODES))
    L += [f"Reserved opcodes: {reserved}.", ""]
    fams: dict[int, list[Instr]] = {}
    for i in INSTRUCTIONS:
        if i.fn is not None:
            fams.setdefault(i.opcode, []).append(i)
    L += ["Function codes of the families (all other `fn` values are reserved):", ""]
    L += _table(["opcode", "fn -> mnemonic"], [
        [f"0x{op:02x}", ", ".join(f"{i.fn}: {_code(i.mnemonic)}" for i in members)]
        for op, members in fams.items()])
    L += ["## ABI", "", "### Registers", ""]
    L += _table(["register", "convention"],
                [[_code(r), _cell(doc)] for r, doc in REGISTER_CONVENTIONS])
    L += ["### Special registers", "", "Read with `s2r rd, NAME`; the index is the `rs1` "
          "field. Other indices are illegal.", ""]
    L += _table(["index", "name", "meaning"],
                [[str(int(s)), _code(s.asm_name), _cell(SREG_DOCS[s])] for s in SReg])
    L += [
        "### Kernel parameters",
        "",
        f"Each parameter is one 32-bit word at byte offset `4 * i` of the launch's parameter "
        f"block (at most {MAX_PARAMS}), read with `ldparam rd, NAME`. Types:",
        "",
    ]
    L += _table(["type", "meaning"], [[_code(t), doc] for t, doc in PARAM_TYPES.items()])
    L += ["### Memory map", "", "Global memory is one byte-addressed space; shared memory, "
          "parameters and instructions are separate spaces reached only by their instructions. "
          f"Global addresses below 0x{GLOBAL_NULL_GUARD:x} always fault.", ""]
    L += _table(["region", "base", "size", "notes"],
                [[r.name, f"0x{r.base:08x}", r.size_doc, r.doc] for r in MEMORY_MAP])
    L += ["### Fault causes", "",
          f"Recorded with the faulting warp's lane mask and PC. The reconvergence stack holds "
          f"{RECONVERGENCE_STACK_DEPTH} entries per warp by default.", ""]
    L += _table(["code", "cause", "meaning"],
                [[str(int(c)), _code(c.name), _cell(FAULT_DOCS[c])] for c in FaultCause])
    return "\n".join(L).rstrip("\n") + "\n"


def _simm_parts() -> str:
    """Which bits of the S offset each part field holds, low part first."""
    out, lo = [], 0
    for f in SIMM_PARTS:
        verb = "holds " if not out else ""
        out.append(f"`{f.name}` {verb}bits {_bits(lo, lo + f.width - 1)}")
        lo += f.width
    return ", ".join(out)


def _imm16_users(signed: bool) -> str:
    return "/".join(i.mnemonic for i in INSTRUCTIONS
                    if any(o.kind is Kind.IMM16 and o.signed is signed for o in i.operands))


_IMM16S = replace(IMM16, signed=True)

_KIND_ENCODING: dict[Kind, str] = {
    Kind.REG: "5-bit register number in rd, rs1, rs2 or rs3",
    Kind.PRED: "predicate index in the low 3 bits of rd",
    Kind.PRED_SRC: "5-bit predicate source field: bit 4 negates, bits 2:0 select",
    Kind.IMM: f"imm11 (signed, {IMM_MIN}..{IMM_MAX})",
    Kind.IMM16: f"imm16: signed for {_imm16_users(True)} ({_IMM16S.min}..{_IMM16S.max}), "
                f"unsigned for {_imm16_users(False)} ({IMM16.min}..{IMM16.max})",
    Kind.MEM: "rs1 plus signed 11-bit byte offset (imm11, or simm_hi:simm_lo for stores)",
    Kind.MEM_REG: "rs1",
    Kind.SREG: "special register index in rs1",
    Kind.LABEL: "off21: signed word offset from the branch itself (target = PC + 4 * off21)",
    Kind.PARAM: "byte offset in imm11 (rs1 = r0)",
}


def render_summary() -> str:
    """A plain-text table of every instruction (``simtgpu isa``)."""
    head = ("mnemonic", "syntax", "fmt", "opcode", "fn", "class", "latency")
    rows = [(i.mnemonic, syntax(i), i.fmt.name, f"0x{i.opcode:02x}",
             "-" if i.fn is None else str(i.fn), i.sem.value, i.lat.value)
            for i in INSTRUCTIONS]
    widths = [max(len(r[c]) for r in (head, *rows)) for c in range(len(head))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
             for r in (head, *rows)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(f"\n{len(INSTRUCTIONS)} instructions; `simtgpu isa --markdown` prints the "
                 "full reference (docs/isa.md).")
    return "\n".join(lines) + "\n"
