"""Instruction formats and bit fields.

Every instruction is one 32-bit little-endian word. Seven fields sit at the same place in
every format, so the decoder reads register addresses before it knows the opcode:

    op    [6:0]    opcode
    pred  [9:7]    guard predicate (7 = pt, always true)
    pneg  [10]     guard negation
    rd    [15:11]  destination register (or destination predicate in its low 3 bits)
    rs1   [20:16]  first source register
    rs2   [25:21]  second source register
    rs3   [30:26]  third source register, or the function code ``fn`` of a family

Formats differ only in how the upper bits are shared between register fields and
immediates. Bits that a format does not use must be zero; the decoder checks them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """A bit field ``word[lo + width - 1 : lo]``; ``signed`` fields are two's complement."""

    name: str
    lo: int
    width: int
    signed: bool = False

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def extract(self, word: int) -> int:
        value = (word >> self.lo) & self.mask
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def insert(self, word: int, value: int) -> int:
        return word | ((value & self.mask) << self.lo)

    @property
    def min(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else self.mask


OP = Field("op", 0, 7)
PRED = Field("pred", 7, 3)
PNEG = Field("pneg", 10, 1)
RD = Field("rd", 11, 5)
RS1 = Field("rs1", 16, 5)
RS2 = Field("rs2", 21, 5)
RS3 = Field("rs3", 26, 5)
FN = Field("fn", 26, 5)
IMM11 = Field("imm11", 21, 11, signed=True)
IMM16 = Field("imm16", 16, 16)
OFF21 = Field("off21", 11, 21, signed=True)
# S format splits its 11-bit immediate around rs1/rs2 (as RISC-V's S-type does) so that
# the store's address and data registers stay in the rs1/rs2 positions.
SIMM_LO = Field("simm_lo", 11, 5)
SIMM_HI = Field("simm_hi", 26, 6)
RESERVED31 = Field("zero", 31, 1)
SIMM_PARTS: tuple[Field, ...] = (SIMM_LO, SIMM_HI)
"""The parts of the S offset, low bits first; joined they are a signed IMM11-wide value."""
IMM_MIN = IMM11.min
"""Smallest 11-bit signed immediate or memory offset (imm11 and the joined S offset)."""
IMM_MAX = IMM11.max
"""Largest 11-bit signed immediate or memory offset (imm11 and the joined S offset)."""

GUARD_FIELDS = (OP, PRED, PNEG)


def split_simm(value: int) -> dict[str, int]:
    """The S-format part fields of a signed offset (the range is the caller's check)."""
    parts = {}
    for f in SIMM_PARTS:
        parts[f.name] = value & f.mask
        value >>= f.width
    return parts


def join_simm(word: int) -> int:
    """The signed S-format offset of an instruction word."""
    value = shift = 0
    for f in SIMM_PARTS:
        value |= f.extract(word) << shift
        shift += f.width
    return value - (1 << shift) if value >> (shift - 1) else value


@dataclass(frozen=True)
class Format:
    """A named arrangement of fields covering all 32 bits."""

    name: str
    fields: tuple[Field, ...]
    summary: str

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"format {self.name} has no field {name}")

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("R", (*GUARD_FIELDS, RD, RS1, RS2, FN, RESERVED31),
               "register-register; fn selects the member of a family"),
        Format("R4", (*GUARD_FIELDS, RD, RS1, RS2, RS3, RESERVED31),
               "three sources (fma, select, compare-and-swap)"),
        Format("I", (*GUARD_FIELDS, RD, RS1, IMM11),
               "register and 11-bit signed immediate (ALU immediates, loads)"),
        Format("S", (*GUARD_FIELDS, SIMM_LO, RS1, RS2, SIMM_HI),
               "store: address register, data register, split 11-bit signed offset"),
        Format("U", (*GUARD_FIELDS, RD, IMM16), "register and 16-bit immediate (constants)"),
        Format("B", (*GUARD_FIELDS, OFF21),
               "PC-relative target: 21-bit signed word offset from the instruction itself"),
    )
}


def _check_formats() -> None:
    assert sum(f.width for f in SIMM_PARTS) == IMM11.width, "S offset and imm11 differ"
    for fmt in FORMATS.values():
        covered = 0
        for f in fmt.fields:
            bits = f.mask << f.lo
            assert not covered & bits, f"format {fmt.name}: field {f.name} overlaps"
            covered |= bits
        assert covered == 0xFFFF_FFFF, f"format {fmt.name} leaves bits uncovered"


_check_formats()
