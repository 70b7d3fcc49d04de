"""The read-modify-write of one atomic: ``new = f(old, b[, c])`` for every :class:`AtomOp`.

The shared-memory atomics of the LSU and the global atomics performed at the memory both
build their new word here, so the two cannot disagree (and both match ``sim/semantics.py``).
``atom.fadd`` needs the FP adder's latency: its sum comes in as ``fadd_result``.

Float min/max order the words by their bits, as Triton lowers ``atomic_max``/``atomic_min``
on float32 (PTX has no ``atom.max.f32``): for ``b >= 0.0`` (which includes -0.0) the signed
integer max (min) of the two words, for ``b < 0.0`` the unsigned integer min (max), and a NaN
``b`` leaves the word as it is. No flushing: the result is always one of the two words.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth import Cat, Module, Mux, Signal, Value

from .isa_consts import one_of
from .signatures import AtomOp

_SIGN = 0x8000_0000
_POS_INF = 0x7F80_0000


def atomic_result(m: Module, op: Value, old: Value, b: Value, c: Value,
                  fadd_result: Value) -> Signal:
    """The word an atomic ``op`` stores (combinational); CAS stores ``old`` on a mismatch.

    The ops that store one of the words as it is (min, max, their float forms, CAS) choose
    it last, by comparisons at the ends of carry chains; the others are an AND-OR of their
    results, each gated by its op decoded into a bit kept as a net, so that the LUT mapping
    (which sees a chain's output as early as a register's) does not put the comparisons in
    front of the op's decoding. Where ``old == b`` either word is the answer, so max needs
    no equality."""
    new = Signal(32)
    b_nan = Signal()
    b_pos = Signal()  # b >= 0.0 as a float compare: positive, +0.0 or -0.0
    m.d.comb += [b_nan.eq(b[:31] > _POS_INF), b_pos.eq(~b[31] | (b == _SIGN))]
    s_lt, u_lt = Signal(), Signal()
    m.d.comb += [s_lt.eq(old.as_signed() < b.as_signed()), u_lt.eq(old < b)]
    op = Value.cast(op)  # an AtomOp-typed field or its raw bits
    width = len(op)

    def is_op(*members: AtomOp) -> Signal:
        bit = Signal(name="is_" + "_".join(x.name.lower() for x in members), attrs={"keep": 1})
        m.d.comb += bit.eq(one_of(op, members))
        return bit

    assert all(x.value < 1 << width for x in AtomOp), "op too narrow for AtomOp"
    picks = is_op(AtomOp.MIN, AtomOp.MAX, AtomOp.FMIN, AtomOp.FMAX, AtomOp.CAS)
    is_min, is_max, is_fmin, is_fmax, is_cas = (
        is_op(x) for x in (AtomOp.MIN, AtomOp.MAX, AtomOp.FMIN, AtomOp.FMAX, AtomOp.CAS))
    take_old = ((is_min & s_lt) | (is_max & ~s_lt)
                | (is_fmin & (b_nan | Mux(b_pos, s_lt, ~u_lt)))  # b >= 0: min_s; b < 0: max_u
                | (is_fmax & (b_nan | Mux(b_pos, ~s_lt, u_lt)))  # b >= 0: max_s; b < 0: min_u
                | (is_cas & (old != b)))
    results = {AtomOp.ADD: old + b, AtomOp.EXCH: b, AtomOp.FADD: fadd_result,
               AtomOp.AND: old & b, AtomOp.OR: old | b, AtomOp.XOR: old ^ b}
    known = set(results) | {AtomOp.MIN, AtomOp.MAX, AtomOp.FMIN, AtomOp.FMAX, AtomOp.CAS}
    assert known == set(AtomOp), "atomic_result does not cover every AtomOp"
    other = Signal(32, attrs={"keep": 1})
    hits = {x: is_op(x) for x in results}
    terms = [Mux(hits[x], v, 0) for x, v in results.items()]
    unknown = Signal()  # an encoding no op has: the word stays
    m.d.comb += [unknown.eq(~(picks | Cat(hits.values()).any())),
                 other.eq(reduce(operator.or_, terms) | Mux(unknown, old, 0))]
    m.d.comb += new.eq(Mux(picks, Mux(take_old, old, Mux(is_cas, c, b)), other))
    return new
