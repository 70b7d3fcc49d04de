"""Integer ALU of one lane: the combinational unit of the ex1 stage.

The core replicates one :class:`Alu` per lane. It carries every instruction whose semantic
class is integer register-register (``Sem.INT``), integer immediate (``Sem.INT_IMM``),
16-bit constants (``Sem.CONST``), integer compare into a predicate (``Sem.ICMP``), select
(``Sem.SELECT``) and predicate logic (``Sem.PLOGIC``). The operation enum :data:`AluOp` is
generated from ``simtgpu.isa.INSTRUCTIONS`` (member name = mnemonic upper-cased with dots
replaced by underscores), so the decoder, the ISS and this unit cannot disagree on the set of
operations.

Operand conventions (the core's operand mux does the rest):

* ``b`` is the second source register, or the sign-extended immediate for ``*i`` ops.
* The constant ops read their 16-bit immediate from ``b[0:16]`` and ignore ``b[16:32]``, so
  the decoder may hand over the immediate either raw or extended.
* ``c`` is the old value of ``rd`` (``lli`` keeps its upper half).
* ``pa``/``pb``/``psel`` are predicate values with any ``!`` negation already applied.
"""

from collections.abc import Callable

from amaranth import Cat, Const, Module, Mux, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import INSTRUCTIONS, Instr, Sem

from .isa_consts import isa_op_enum, op_name

__all__ = ["ALU_SEMS", "Alu", "AluOp", "alu_op", "op_name"]


ALU_SEMS: tuple[Sem, ...] = (Sem.INT, Sem.INT_IMM, Sem.CONST, Sem.ICMP, Sem.SELECT,
                             Sem.PLOGIC)

AluOp = isa_op_enum("AluOp", ALU_SEMS, __name__)
"""Operation of the :class:`Alu`, one member per isa instruction it executes."""


def alu_op(instr: Instr) -> AluOp:
    """The :data:`AluOp` that executes ``instr`` (``KeyError`` if the ALU does not)."""
    return AluOp[op_name(instr.mnemonic)]


# ---------------------------------------------------------------------------------------
# Semantics. Register results are keyed by the operation's base name (the ``*i`` immediate
# forms share the register form's meaning); predicate results by compare condition or
# predicate-logic name. Every AluOp must be covered; this is checked at import time.

_Ops = dict[str, Callable[..., Value]]

_INT_RESULT: _Ops = {
    "add": lambda a, b, c: a + b,
    "sub": lambda a, b, c: a - b,
    "and": lambda a, b, c: a & b,
    "or": lambda a, b, c: a | b,
    "xor": lambda a, b, c: a ^ b,
    "shl": lambda a, b, c: a << b[0:5],
    "shr": lambda a, b, c: a >> b[0:5],
    "sra": lambda a, b, c: a.as_signed() >> b[0:5],
    "min": lambda a, b, c: Mux(a.as_signed() < b.as_signed(), a, b),
    "max": lambda a, b, c: Mux(a.as_signed() > b.as_signed(), a, b),
    "minu": lambda a, b, c: Mux(a < b, a, b),
    "maxu": lambda a, b, c: Mux(a > b, a, b),
    "movi": lambda a, b, c: b[0:16].as_signed(),
    "lui": lambda a, b, c: Cat(Const(0, 16), b[0:16]),
    "lli": lambda a, b, c: Cat(b[0:16], c[16:32]),
}

_ICMP: _Ops = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a.as_signed() < b.as_signed(),
    "le": lambda a, b: a.as_signed() <= b.as_signed(),
    "gt": lambda a, b: a.as_signed() > b.as_signed(),
    "ge": lambda a, b: a.as_signed() >= b.as_signed(),
    "ltu": lambda a, b: a < b,
    "leu": lambda a, b: a <= b,
    "gtu": lambda a, b: a > b,
    "geu": lambda a, b: a >= b,
}

_PLOGIC: _Ops = {
    "pand": lambda p, q: p & q,
    "por": lambda p, q: p | q,
    "pxor": lambda p, q: p ^ q,
}


def _base(instr: Instr) -> str:
    """Register-form name of an integer op: ``addi`` -> ``add``."""
    if instr.sem is Sem.INT_IMM:
        return instr.mnemonic[:-1]
    return instr.mnemonic


def _check_coverage() -> None:
    for instr in INSTRUCTIONS:
        if instr.sem not in ALU_SEMS:
            continue
        if instr.sem in (Sem.INT, Sem.INT_IMM, Sem.CONST):
            ok = _base(instr) in _INT_RESULT
        elif instr.sem is Sem.ICMP:
            ok = instr.suffix in _ICMP
        elif instr.sem is Sem.PLOGIC:
            ok = instr.mnemonic in _PLOGIC
        else:
            ok = instr.sem is Sem.SELECT
        if not ok:
            raise AssertionError(f"rtl.alu has no implementation of isa op {instr.mnemonic}")


_check_coverage()


class Alu(wiring.Component):
    """One lane's integer ALU (combinational).

    The datapath is 32 bits wide, as fixed by the ISA; the unit has no parameters.

    Attributes
    ----------
    op : In(AluOp)
        Operation to perform.
    a, b, c : In(32)
        Sources: ``rs1``; ``rs2`` or the immediate; the old ``rd`` (for ``lli``).
    pa, pb, psel : In(1)
        Predicate sources (negation applied): ``pand/por/pxor`` use ``pa``/``pb``,
        ``sel`` uses ``psel``.
    result : Out(32)
        Register result (zero for ops that write a predicate).
    pred : Out(1)
        Predicate result (zero for ops that write a register).
    """

    op: In(AluOp)
    a: In(32)
    b: In(32)
    c: In(32)
    pa: In(1)
    pb: In(1)
    psel: In(1)
    result: Out(32)
    pred: Out(1)

    def elaborate(self, platform) -> Module:
        m = Module()
        a, b, c = self.a, self.b, self.c
        with m.Switch(self.op):
            for instr in INSTRUCTIONS:
                if instr.sem not in ALU_SEMS:
                    continue
                with m.Case(alu_op(instr)):
                    if instr.sem is Sem.ICMP:
                        m.d.comb += self.pred.eq(_ICMP[instr.suffix](a, b))
                    elif instr.sem is Sem.PLOGIC:
                        m.d.comb += self.pred.eq(_PLOGIC[instr.mnemonic](self.pa, self.pb))
                    elif instr.sem is Sem.SELECT:
                        m.d.comb += self.result.eq(Mux(self.psel, a, b))
                    else:
                        m.d.comb += self.result.eq(_INT_RESULT[_base(instr)](a, b, c))
            with m.Default():  # unused encodings: both outputs stay zero
                m.d.comb += [self.result.eq(0), self.pred.eq(0)]
        return m

