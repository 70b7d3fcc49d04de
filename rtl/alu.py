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

from amaranth import Cat, Const, Module, Mux, Signal, Value
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


class _Shared:
    """What several operations read, built once per ALU: one subtractor answers every
    ordering (signed and unsigned), one right shifter every shift (``shl`` shifts the
    bit-reversed operand right and reverses the result back), so the ops of the isa table
    cost one adder, one subtractor and one shifter (a comparator or shifter per op was most
    of the unit's area)."""

    def __init__(self, m: Module, op: Value, a: Value, b: Value) -> None:
        self.sum = Signal(32)
        diff = Signal(33)  # a - b with the borrow at bit 32
        m.d.comb += [self.sum.eq(a + b), diff.eq(a - b)]
        self.diff = diff[:32]
        self.eq = Signal()
        self.ltu = Signal()
        self.lt = Signal()
        m.d.comb += [self.eq.eq(a == b), self.ltu.eq(diff[32]),
                     # equal signs: the unsigned order; different: the negative one is less
                     self.lt.eq(Mux(a[31] ^ b[31], a[31], diff[32]))]
        left = Signal()
        m.d.comb += left.eq(op.as_value().matches(AluOp.SHL, AluOp.SHLI))
        fill = Signal()  # the bit shifted in from above: sra's sign
        m.d.comb += fill.eq(op.as_value().matches(AluOp.SRA, AluOp.SRAI) & a[31])
        src = Signal(32)
        m.d.comb += src.eq(Mux(left, a[::-1], a))
        shifted = Signal(32)
        m.d.comb += shifted.eq((Cat(src, fill).as_signed() >> b[0:5])[:32])
        self.shift = Signal(32)  # shl, shr or sra, by op
        m.d.comb += self.shift.eq(Mux(left, shifted[::-1], shifted))


_INT_RESULT: dict[str, Callable[..., Value] | None] = {
    "add": lambda s, a, b, c: s.sum,
    "sub": lambda s, a, b, c: s.diff,
    "and": lambda s, a, b, c: a & b,
    "or": lambda s, a, b, c: a | b,
    "xor": lambda s, a, b, c: a ^ b,
    "shl": lambda s, a, b, c: s.shift,
    "shr": lambda s, a, b, c: s.shift,
    "sra": lambda s, a, b, c: s.shift,
    # min/max: a or b, chosen after the op's choice of every other result (Alu.elaborate)
    "min": None, "max": None, "minu": None, "maxu": None,
    "movi": lambda s, a, b, c: b[0:16].as_signed(),
    "lui": lambda s, a, b, c: Cat(Const(0, 16), b[0:16]),
    "lli": lambda s, a, b, c: Cat(b[0:16], c[16:32]),
}

_ICMP: dict[str, Callable[[_Shared], Value]] = {
    "eq": lambda s: s.eq,
    "ne": lambda s: ~s.eq,
    "lt": lambda s: s.lt,
    "le": lambda s: s.lt | s.eq,
    "gt": lambda s: ~(s.lt | s.eq),
    "ge": lambda s: ~s.lt,
    "ltu": lambda s: s.ltu,
    "leu": lambda s: s.ltu | s.eq,
    "gtu": lambda s: ~(s.ltu | s.eq),
    "geu": lambda s: ~s.ltu,
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
        shared = _Shared(m, self.op, a, b)
        # min and max take a or b by the comparison, the output of a carry chain: the choice
        # comes last, after the op has chosen among the other results (``other``, kept as a
        # net so that the LUT mapping, which sees the chain's output as early as a register's,
        # does not fold the comparison into the op's choice). Where a == b, a and b are alike,
        # so max takes b when a < b and needs no equality.
        op = self.op.as_value()
        minmax, is_max, signed_ = Signal(), Signal(), Signal()
        m.d.comb += [minmax.eq(op.matches(AluOp.MIN, AluOp.MAX, AluOp.MINU, AluOp.MAXU)),
                     is_max.eq(op.matches(AluOp.MAX, AluOp.MAXU)),
                     signed_.eq(op.matches(AluOp.MIN, AluOp.MAX))]
        take_a = Signal()
        m.d.comb += take_a.eq(Mux(signed_, shared.lt, shared.ltu) ^ is_max)
        other = Signal(32, attrs={"keep": 1})
        m.d.comb += self.result.eq(Mux(minmax, Mux(take_a, a, b), other))
        with m.Switch(self.op):
            for instr in INSTRUCTIONS:
                if instr.sem not in ALU_SEMS:
                    continue
                with m.Case(alu_op(instr)):
                    if instr.sem is Sem.ICMP:
                        m.d.comb += self.pred.eq(_ICMP[instr.suffix](shared))
                    elif instr.sem is Sem.PLOGIC:
                        m.d.comb += self.pred.eq(_PLOGIC[instr.mnemonic](self.pa, self.pb))
                    elif instr.sem is Sem.SELECT:
                        m.d.comb += other.eq(Mux(self.psel, a, b))
                    elif _INT_RESULT[_base(instr)] is not None:
                        m.d.comb += other.eq(_INT_RESULT[_base(instr)](shared, a, b, c))
            with m.Default():  # unused encodings: both outputs stay zero
                m.d.comb += [other.eq(0), self.pred.eq(0)]
        return m

