"""Operand kinds: how an operand is written in assembly and which fields it fills."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .abi import NUM_PREDS

PRED_INDEX_BITS = (NUM_PREDS - 1).bit_length()
"""A predicate index takes the low bits of its field (a destination's ``rd``, a source's)."""
PRED_SRC_RESERVED_BIT = 3
"""Bit of a predicate-source field that must be zero."""
PRED_SRC_NEGATE_BIT = 4
"""Bit of a predicate-source field that negates the predicate."""


class Kind(Enum):
    """What an operand is. The assembler parses, and the disassembler prints, by kind."""

    REG = "reg"  # r0..r31
    PRED = "pred"  # p0..p6, pt; as a destination, the low 3 bits of rd
    PRED_SRC = "pred_src"  # [!]p0..p6, [!]pt; 5-bit field: bit 4 negates, bits 2:0 select
    IMM = "imm"  # signed integer in imm11 (or the split S immediate)
    IMM16 = "imm16"  # 16-bit immediate; signedness per instruction (see Operand.signed)
    MEM = "mem"  # [rs1+imm] / [rs1-imm] / [rs1]: address register plus signed byte offset
    MEM_REG = "mem_reg"  # [rs1]: address register only (atomics)
    SREG = "sreg"  # special register name, e.g. tid.x
    LABEL = "label"  # branch target: label expression, PC-relative word offset in off21
    PARAM = "param"  # kernel parameter name or byte offset, in imm11 (rs1 = r0)


KIND_SYNTAX: dict[Kind, str] = {
    Kind.REG: "rN (r0..r31, r0 reads as zero)",
    Kind.PRED: "pN (p0..p6) or pt",
    Kind.PRED_SRC: "pN or !pN (pt, !pt allowed)",
    Kind.IMM: "integer expression",
    Kind.IMM16: "integer expression",
    Kind.MEM: "[rN], [rN+imm] or [rN-imm]",
    Kind.MEM_REG: "[rN]",
    Kind.SREG: "special register name (tid.x, ctaid.y, laneid, clock, ...)",
    Kind.LABEL: "label expression (label, label+8, label-4)",
    Kind.PARAM: "parameter name declared by .param, or a byte offset",
}


@dataclass(frozen=True)
class Operand:
    """One operand in assembly order.

    ``fields`` lists the format fields the operand fills: one field for registers,
    predicates, immediates, special registers and labels; for ``MEM`` the address register
    field and then the offset field(s).
    ``role`` is ``"dst"`` or ``"src"`` so the scoreboard and the compiler know what is
    written and what is read; ``reads_old`` marks a destination whose old value is read too
    (``lli`` keeps the upper half of ``rd``).
    ``frag`` names the matrix fragment (``"a"``, ``"b"``, ``"c"``, ``"d"``) of an ``mma``
    register operand: the register is the first of a group (its size depends on the warp
    width, see :mod:`simtgpu.isa.mma`) and its number must be a multiple of ``align``.
    """

    kind: Kind
    fields: tuple[str, ...]
    role: str = "src"
    signed: bool = True
    reads_old: bool = False
    frag: str | None = None
    align: int = 1

    @property
    def is_dst(self) -> bool:
        return self.role == "dst"


def pred_src_encode(index: int, negate: bool) -> int:
    """Encode a predicate source into its 5-bit register field."""
    return (int(negate) << PRED_SRC_NEGATE_BIT) | index


def pred_src_decode(value: int) -> tuple[int, bool]:
    """Inverse of :func:`pred_src_encode`: (predicate index, negated)."""
    return value & (NUM_PREDS - 1), bool(value >> PRED_SRC_NEGATE_BIT & 1)


def pred_src_valid(value: int) -> bool:
    """Bit 3 of a predicate-source field is reserved and must be zero."""
    return not value >> PRED_SRC_RESERVED_BIT & 1
