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

from amaranth import Module, Mux, Signal, Value

from .signatures import AtomOp

_SIGN = 0x8000_0000
_POS_INF = 0x7F80_0000


def atomic_result(m: Module, op: Value, old: Value, b: Value, c: Value,
                  fadd_result: Value) -> Signal:
    """The word an atomic ``op`` stores (combinational); CAS stores ``old`` on a mismatch."""
    new = Signal(32)
    b_nan = Signal()
    b_pos = Signal()  # b >= 0.0 as a float compare: positive, +0.0 or -0.0
    m.d.comb += [b_nan.eq(b[:31] > _POS_INF), b_pos.eq(~b[31] | (b == _SIGN))]
    s_lt = old.as_signed() < b.as_signed()
    u_lt = old < b
    with m.Switch(op):
        with m.Case(AtomOp.ADD):
            m.d.comb += new.eq(old + b)
        with m.Case(AtomOp.MIN):
            m.d.comb += new.eq(Mux(s_lt, old, b))
        with m.Case(AtomOp.MAX):
            m.d.comb += new.eq(Mux(old.as_signed() > b.as_signed(), old, b))
        with m.Case(AtomOp.EXCH):
            m.d.comb += new.eq(b)
        with m.Case(AtomOp.FADD):
            m.d.comb += new.eq(fadd_result)
        with m.Case(AtomOp.AND):
            m.d.comb += new.eq(old & b)
        with m.Case(AtomOp.OR):
            m.d.comb += new.eq(old | b)
        with m.Case(AtomOp.XOR):
            m.d.comb += new.eq(old ^ b)
        with m.Case(AtomOp.FMIN):
            # b >= 0: min_s(old, b); b < 0: max_u(old, b)
            take_old = Mux(b_pos, s_lt, ~u_lt)
            m.d.comb += new.eq(Mux(b_nan | take_old, old, b))
        with m.Case(AtomOp.FMAX):
            # b >= 0: max_s(old, b); b < 0: min_u(old, b)
            take_old = Mux(b_pos, ~s_lt, u_lt)
            m.d.comb += new.eq(Mux(b_nan | take_old, old, b))
        with m.Case(AtomOp.CAS):
            m.d.comb += new.eq(Mux(old == b, c, old))
        with m.Default():
            m.d.comb += new.eq(old)
    return new
