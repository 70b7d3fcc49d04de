"""RTL constants generated from ``simtgpu.isa`` at import time, and the one enum factory.

Nothing here is typed by hand: the opcode enum, the per-instruction index, the semantic and
latency classes and the fault causes are built from the ISA tables so the decoder, the ISS and
the assembler cannot disagree. Every generated Amaranth enum of rtl/ (these and the execution
units' operation enums) comes from :func:`make_enum`.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping

from amaranth import Cat, Value, unsigned
from amaranth.lib import enum
from simtgpu.isa import BY_ENCODING, INSTRUCTIONS, SETS_PC, SIMT_OPS
from simtgpu.isa import FaultCause as _IsaFaultCause
from simtgpu.isa import Lat as _IsaLat
from simtgpu.isa import Sem as _IsaSem
from simtgpu.isa import SReg as _IsaSReg
from simtgpu.isa.formats import OP, RS1


def make_enum(name: str, members: Mapping[str, int], module: str,
              width: int | None = None) -> type[enum.Enum]:
    """An ``amaranth.lib.enum.Enum`` class ``module.name`` with ``members`` (name -> value).

    The shape is explicit: ``unsigned(width)``, by default the narrowest that holds every
    value; pass ``width`` where the enum fills a field of fixed width.
    """
    narrowest = max(1, max(members.values()).bit_length())
    if width is None:
        width = narrowest
    elif width < narrowest:
        raise ValueError(f"{name} values need {narrowest} bits, not {width}")

    def body(ns: dict) -> None:
        ns.update(members, __module__=module, __qualname__=name)

    return types.new_class(name, (enum.Enum,), {"shape": unsigned(width)}, body)


def one_of(value, members: Iterable[enum.Enum]) -> Value:
    """``value`` (an enum-typed field or raw bits) is one of the enum ``members``.

    A compare with 0 is written ``~value.any()``: the Verilog writer would turn ``value == 0``
    into ``!value``, a lint warning for a value of more than one bit."""
    v = Value.cast(value)
    return Cat(v == x.value if x.value else ~v.any() for x in members).any()


def op_name(mnemonic: str) -> str:
    """Enum member name of an isa mnemonic: ``isetp.ltu`` -> ``ISETP_LTU``."""
    return mnemonic.upper().replace(".", "_")


def isa_op_enum(name: str, sems: Iterable[_IsaSem], module: str) -> type[enum.Enum]:
    """One member per isa instruction of the classes ``sems``, numbered in table order.

    Every execution unit's operation enum is one of these, so its op set is derived from
    ``isa/``.
    """
    sem_set = frozenset(sems)
    names = [op_name(i.mnemonic) for i in INSTRUCTIONS if i.sem in sem_set]
    return make_enum(name, {n: v for v, n in enumerate(names)}, module)


def fn_enum(name: str, sem: _IsaSem, module: str) -> type[enum.Enum]:
    """The members of a family (one semantic class), named by suffix and valued by ``fn``
    code, so a unit takes the decoder's ``fn`` field as it is (``fsetp.lt`` -> ``LT``)."""
    return make_enum(name, {i.suffix.upper(): i.fn for i in INSTRUCTIONS if i.sem is sem},
                     module)


def _opcode_members() -> dict[str, int]:
    """One member per used opcode: the family name when every instruction of the opcode
    shares one (``ISETP``), the semantic class otherwise (``PLOGIC`` for pand/por/pxor)."""
    by_op: dict[int, list] = {}
    for ins in INSTRUCTIONS:
        by_op.setdefault(ins.opcode, []).append(ins)
    members: dict[str, int] = {}
    for op, group in sorted(by_op.items()):
        if len(group) == 1 and group[0].fn is None:
            name = op_name(group[0].mnemonic)
        elif len({i.family for i in group}) == 1:
            name = group[0].family.upper()
        else:
            name = group[0].sem.name
        assert name not in members, name
        members[name] = op
    return members


Opcode = make_enum("Opcode", _opcode_members(), __name__, OP.width)
"""The 7-bit opcode field; one member per used opcode."""

InstrId = make_enum("InstrId", {op_name(i.mnemonic): n for n, i in enumerate(INSTRUCTIONS)},
                    __name__)
"""A dense index per instruction (its row in ``isa.INSTRUCTIONS``)."""

Sem = make_enum("Sem", {s.name: n for n, s in enumerate(_IsaSem)}, __name__)
Lat = make_enum("Lat", {s.name: n for n, s in enumerate(_IsaLat)}, __name__)
FaultCause = make_enum("FaultCause", {c.name: c.value for c in _IsaFaultCause}, __name__, 4)
"""``isa.abi.FaultCause`` as a 4-bit Amaranth enum (fault records, the FAULT_CAUSE register)."""
SReg = make_enum("SReg", {s.name: s.value for s in _IsaSReg}, __name__, RS1.width)
"""Special register index, as the ``rs1`` field of ``s2r`` holds it."""

BARRIER_OPS: tuple[str, ...] = tuple(sorted(SETS_PC - SIMT_OPS))
"""Instructions that decide the next pc without the SIMT stack (``bar``): they hold the warp's
issue, not its fetch."""

IID_BY_ENCODING: dict[tuple[int, int | None], int] = {
    (i.opcode, i.fn): n for n, i in enumerate(INSTRUCTIONS)}
assert len(IID_BY_ENCODING) == len(BY_ENCODING)


def iid(mnemonic: str) -> InstrId:
    """The :class:`InstrId` member of an instruction mnemonic."""
    return InstrId[op_name(mnemonic)]
