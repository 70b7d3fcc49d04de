"""Encode and decode instruction words, derived entirely from the instruction table."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .abi import PT, SReg
from .formats import FN, IMM_MAX, IMM_MIN, OP, PNEG, PRED, Field, join_simm, split_simm
from .instructions import BY_ENCODING, BY_MNEMONIC, OPCODES_WITH_FN, Instr
from .operands import PRED_INDEX_BITS, Kind, pred_src_valid


class EncodingError(ValueError):
    """A field value does not fit, or a word is not a valid instruction."""


def used_fields(instr: Instr) -> tuple[Field, ...]:
    """The fields an instruction gives meaning to; all other bits must be zero (worked out
    once per instruction: the assembler asks for every word it encodes)."""
    got = _USED.get(instr.mnemonic)
    if got is None:
        got = _USED[instr.mnemonic] = _used_fields(instr)
    return got


_USED: dict[str, tuple[Field, ...]] = {}
_ALLOWED: dict[str, dict[str, tuple[int, int, int, int]]] = {}  # (min, max, mask, lo) by name


def _used_fields(instr: Instr) -> tuple[Field, ...]:
    names = {"op", "pred", "pneg"}
    if instr.fn is not None:
        names.add("fn")
    for op in instr.operands:
        names.update(op.fields)
    return tuple(f for f in instr.fmt.fields if f.name in names)


def encode(instr: Instr | str, fields: dict[str, int], pred: int = PT, pneg: bool = False) -> int:
    """Build a word from raw field values (immediates already as integers).

    ``fields`` maps format field names to values; the split S immediate may be given as
    ``simm`` and is split here. Raises :class:`EncodingError` when a value does not fit.
    """
    if isinstance(instr, str):
        instr = BY_MNEMONIC[instr]
    values = dict(fields)
    if "simm" in values:
        simm = values.pop("simm")
        if not IMM_MIN <= simm <= IMM_MAX:
            raise EncodingError(f"offset {simm} out of range {IMM_MIN}..{IMM_MAX}")
        values.update(split_simm(simm))
    values["op"] = instr.opcode
    values["pred"] = pred
    values["pneg"] = int(pneg)
    if instr.fn is not None:
        values["fn"] = instr.fn
    word = 0
    allowed = _ALLOWED.get(instr.mnemonic)
    if allowed is None:
        allowed = _ALLOWED[instr.mnemonic] = {
            f.name: (f.min, f.max, f.mask, f.lo) for f in used_fields(instr)}
    for name, value in values.items():
        got = allowed.get(name)
        if got is None:
            raise EncodingError(f"{instr.mnemonic} has no field {name}")
        lo, hi, mask, shift = got
        if not lo <= value <= hi:
            raise EncodingError(f"{name} value {value} out of range {lo}..{hi}")
        word |= (value & mask) << shift  # (Field.insert)
    for op in instr.operands:
        if op.align > 1 and values.get(op.fields[0], 0) % op.align:
            raise EncodingError(f"register r{values[op.fields[0]]} must be a "
                                f"multiple of {op.align} (first of a fragment group)")
    return word


@dataclass(frozen=True)
class Decoded:
    """A decoded instruction word. Unused fields read as zero."""

    word: int
    instr: Instr
    pred: int
    pneg: bool
    rd: int
    rs1: int
    rs2: int
    rs3: int
    imm: int  # imm11, the joined S offset, imm16 (signed for movi) or off21, else 0

    @property
    def mnemonic(self) -> str:
        return self.instr.mnemonic

    @property
    def guarded(self) -> bool:
        return not (self.pred == PT and not self.pneg)


_SREG_VALUES = frozenset(int(s) for s in SReg)


def decode(word: int) -> Decoded:
    """Decode one word; raise :class:`EncodingError` for anything that is not a valid encoding
    (reserved opcode or function code, non-zero unused bits, bad predicate field)."""
    word &= 0xFFFF_FFFF
    opcode = OP.extract(word)
    fn = FN.extract(word) if opcode in OPCODES_WITH_FN else None
    instr = BY_ENCODING.get((opcode, fn))
    if instr is None:
        what = f"opcode 0x{opcode:02x}" + (f" fn {fn}" if fn is not None else "")
        raise EncodingError(f"illegal instruction 0x{word:08x} (reserved {what})")
    used = 0
    for f in used_fields(instr):
        used |= f.mask << f.lo
    if word & ~used & 0xFFFF_FFFF:
        raise EncodingError(f"illegal instruction 0x{word:08x} (non-zero reserved bits)")
    fmt = instr.fmt
    get = {f.name: f.extract(word) for f in fmt.fields}
    imm = 0
    if fmt.has("imm11"):
        imm = get["imm11"]
    elif fmt.name == "S":
        imm = join_simm(word)
    elif fmt.has("imm16"):
        imm = replace(fmt.field("imm16"), signed=instr.operands[1].signed).extract(word)
    elif fmt.has("off21"):
        imm = get["off21"]
    for op in instr.operands:
        if op.kind is Kind.PRED and get["rd"] >> PRED_INDEX_BITS:
            raise EncodingError(f"illegal instruction 0x{word:08x} (predicate field > 7)")
        if op.kind is Kind.PRED_SRC and not pred_src_valid(get[op.fields[0]]):
            raise EncodingError(f"illegal instruction 0x{word:08x} (bad predicate source)")
        if op.align > 1 and get[op.fields[0]] % op.align:
            raise EncodingError(f"illegal instruction 0x{word:08x} (misaligned register group)")
        if op.kind is Kind.SREG and get[op.fields[0]] not in _SREG_VALUES:
            raise EncodingError(f"illegal instruction 0x{word:08x} (no special register "
                                f"{get[op.fields[0]]})")
    return Decoded(
        word=word,
        instr=instr,
        pred=PRED.extract(word),
        pneg=bool(PNEG.extract(word)),
        rd=get.get("rd", 0),
        rs1=get.get("rs1", 0),
        rs2=get.get("rs2", 0),
        rs3=get.get("rs3", 0),
        imm=imm,
    )
