"""RTL constants generated from ``simtgpu.isa`` at import time.

Nothing here is typed by hand: the opcode enum, the per-instruction index, the semantic and
latency classes and the fault causes are built from the ISA tables so the decoder, the ISS and
the assembler cannot disagree.
"""

from __future__ import annotations

import types

from amaranth.lib import enum
from simtgpu.isa import BY_ENCODING, INSTRUCTIONS
from simtgpu.isa import FaultCause as _IsaFaultCause
from simtgpu.isa import Lat as _IsaLat
from simtgpu.isa import Sem as _IsaSem
from simtgpu.isa import SReg as _IsaSReg


def _opcode_members() -> dict[str, int]:
    """One member per used opcode: the family name when every instruction of the opcode
    shares one (``ISETP``), the semantic class otherwise (``PLOGIC`` for pand/por/pxor)."""
    by_op: dict[int, list] = {}
    for ins in INSTRUCTIONS:
        by_op.setdefault(ins.opcode, []).append(ins)
    members: dict[str, int] = {}
    for op, group in sorted(by_op.items()):
        if len(group) == 1 and group[0].fn is None:
            name = group[0].mnemonic.upper().replace(".", "_")
        elif len({i.family for i in group}) == 1:
            name = group[0].family.upper()
        else:
            name = group[0].sem.name
        assert name not in members, name
        members[name] = op
    return members


def _enum(name: str, members: dict[str, int], shape: int) -> type[enum.Enum]:
    """An Amaranth enum with an explicit shape built from a generated member table."""
    return types.new_class(name, (enum.Enum,), {"shape": shape}, lambda ns: ns.update(members))


def _iid_name(mnemonic: str) -> str:
    return mnemonic.upper().replace(".", "_")


Opcode = _enum("Opcode", _opcode_members(), 7)
"""The 7-bit opcode field; one member per used opcode."""

InstrId = _enum("InstrId", {_iid_name(i.mnemonic): n for n, i in enumerate(INSTRUCTIONS)},
    max(1, (len(INSTRUCTIONS) - 1).bit_length()))
"""A dense index per instruction (its row in ``isa.INSTRUCTIONS``)."""

Sem = _enum("Sem", {s.name: n for n, s in enumerate(_IsaSem)},
                max(1, (len(_IsaSem) - 1).bit_length()))
Lat = _enum("Lat", {s.name: n for n, s in enumerate(_IsaLat)},
                max(1, (len(_IsaLat) - 1).bit_length()))
FaultCause = _enum("FaultCause", {c.name: c.value for c in _IsaFaultCause}, 4)
SReg = _enum("SReg", {s.name: s.value for s in _IsaSReg}, 5)

IID_BY_ENCODING: dict[tuple[int, int | None], int] = {
    (i.opcode, i.fn): n for n, i in enumerate(INSTRUCTIONS)}
assert len(IID_BY_ENCODING) == len(BY_ENCODING)


def iid(mnemonic: str) -> InstrId:
    """The :class:`InstrId` member of an instruction mnemonic."""
    return InstrId[_iid_name(mnemonic)]
