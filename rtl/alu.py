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

import operator
from collections.abc import Callable
from functools import reduce

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import INSTRUCTIONS, Instr, Sem

from .isa_consts import isa_op_enum, one_of, op_name

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
    ordering (signed and unsigned) and two shifters (left, right) every shift, so the ops of
    the isa table cost one adder, one subtractor and two shifters (a comparator or shifter
    per op was most of the unit's area)."""

    def __init__(self, m: Module, a: Value, b: Value) -> None:
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
        # Shifts: a left and a right shifter side by side; sra is the logical right shift
        # ORed with the sign's fill, a mask of the shift amount alone. (One shifter for all
        # three, reversing the operand and the result for shl, put the op's decoding in front
        # of the shift, on ex1's longest path.)
        amount = b[0:5]
        self.shl, self.shr, self.sra = Signal(32), Signal(32), Signal(32)
        fill = Signal(32)  # the top ``amount`` bits
        m.d.comb += [self.shl.eq((a << amount)[:32]), self.shr.eq(a >> amount),
                     fill.eq(~(Const(0xFFFF_FFFF, 32) >> amount)),
                     self.sra.eq(self.shr | Mux(a[31], fill, 0))]


_INT_RESULT: dict[str, Callable[..., Value] | None] = {
    "add": lambda s, a, b, c: s.sum,
    "sub": lambda s, a, b, c: s.diff,
    "and": lambda s, a, b, c: a & b,
    "or": lambda s, a, b, c: a | b,
    "xor": lambda s, a, b, c: a ^ b,
    "shl": lambda s, a, b, c: s.shl,
    "shr": lambda s, a, b, c: s.shr,
    "sra": lambda s, a, b, c: s.sra,
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
        shared = _Shared(m, a, b)
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
        # The other register results as an AND-OR: each result's ops decoded into one bit
        # (kept as a net, so the decoding of the op register is two LUTs deep) that gates its
        # value, rather than a multiplexer tree over the op that the routing spreads across
        # the lanes.
        ops_of: dict[str, list] = {}
        values: dict[str, Value] = {}
        for instr in INSTRUCTIONS:
            if instr.sem is Sem.SELECT:
                key, value = "sel", Mux(self.psel, a, b)
            elif instr.sem in (Sem.INT, Sem.INT_IMM, Sem.CONST):
                fn = _INT_RESULT[_base(instr)]
                if fn is None:  # min/max: above
                    continue
                key, value = _base(instr), fn(shared, a, b, c)
            else:
                continue
            ops_of.setdefault(key, []).append(alu_op(instr))
            values[key] = value
        terms = []
        for key, members in ops_of.items():
            hit = Signal(name=f"is_{key}", attrs={"keep": 1})
            m.d.comb += hit.eq(one_of(op, members))
            terms.append(Mux(hit, values[key], 0))
        m.d.comb += other.eq(reduce(operator.or_, terms))
        with m.Switch(self.op):  # predicate results
            for instr in INSTRUCTIONS:
                if instr.sem is Sem.ICMP:
                    with m.Case(alu_op(instr)):
                        m.d.comb += self.pred.eq(_ICMP[instr.suffix](shared))
                elif instr.sem is Sem.PLOGIC:
                    with m.Case(alu_op(instr)):
                        m.d.comb += self.pred.eq(_PLOGIC[instr.mnemonic](self.pa, self.pb))
            with m.Default():  # the register results' ops and unused encodings
                m.d.comb += self.pred.eq(0)
        return m

