"""Vector memory accesses for the PTX target: runs of 2 or 4 adjacent 32-bit loads or stores.

The blocked layout (``Lowering.vec``) gives each thread ``v`` contiguous elements, whose
accesses follow one another in the IR with addresses that differ by the element size. Two
analyses decide whether such a run may become one ``ld/st.{global,shared}.v2/v4``:

- **linear forms**: an address or index is ``sum(coef * value) + const`` over opaque values
  (through ``add``, ``sub``, ``shl``/``mul`` by constants, ``gep``, ``ptradd``), so
  ``(p + 4*i) + 4`` and ``p + 4*(i + 1)`` are recognised as the same base plus offsets;
- **divisibility**: the largest power of two known to divide a value (constants; parameters
  specialised as 16-byte aligned or divisible by 16, ``compiler.SPECIALIZATIONS``; shifts,
  products, sums; loop-carried values whose every step keeps it).

A run is vectorised when its addresses are one base plus ``c, c + 4, ...``, the base and
``c`` are multiples of the vector's size in bytes, the elements are 32-bit, nothing else
touches memory between them, and every element has the same mask or masks provably equal:
``x + j < n`` for ``j < v`` with ``x`` and ``n`` multiples of ``v`` (so the vector is either
wholly in bounds or wholly out). Anything else stays scalar (the fallback), so a ragged tail
is correct either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .ir import Function, Op, Value, const_value

_BIG = 1 << 16  # divisibility of 0 (any power of two we care about)
# an icmp with the varying side on the left whose truth is the same for x + j, j < v
_STABLE_LEFT = ("lt", "ltu", "ge", "geu")
_STABLE_RIGHT = ("gt", "gtu", "le", "leu")


def _tz(c: int) -> int:
    c &= 0xFFFFFFFF
    return _BIG if c == 0 else min(_BIG, c & -c)


@dataclass
class Run:
    """``ops`` (loads or stores, in program order) become one access of ``len(ops)``."""

    ops: list[Op]


class Analysis:
    """Linear forms and divisibility of one function's values (memoised)."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.params = {p.value.id: p for p in fn.params}
        self.divisible = fn.meta.get("divisible", {})
        self._lin: dict[int, tuple[dict, int]] = {}
        self._div: dict[int, int] = {}
        self.carried: dict[int, tuple[Value, Value]] = {}  # loop arg -> (init, next)
        self.ivs: dict[int, tuple[Value, Value]] = {}  # induction variable -> (lb, step)
        for op in fn.walk():
            if op.name == "for":
                body = op.regions[0]
                self.ivs[body.args[0].id] = (op.operands[0], op.operands[2])
                term = body.terminator
                for i, arg in enumerate(body.args[1:]):
                    if term is not None:
                        self.carried[arg.id] = (op.operands[3 + i], term.operands[i])

    # --- linear forms --------------------------------------------------------------------
    def lin(self, v: Value) -> tuple[dict, int]:
        """``v`` as ({value id: (value, coefficient)}, constant); bytes for pointers."""
        hit = self._lin.get(v.id)
        if hit is None:
            hit = self._lin[v.id] = self._lin_of(v)
        return hit

    def _lin_of(self, v: Value) -> tuple[dict, int]:
        c = const_value(v)
        if isinstance(c, int) and not isinstance(c, bool) and v.type in (ir.I32, ir.U32):
            return {}, c
        op = v.owner
        if isinstance(op, Op) and len(op.results) == 1:
            a = op.operands
            if op.name in ("add", "sub"):
                return _combine(self.lin(a[0]), self.lin(a[1]), -1 if op.name == "sub" else 1)
            if op.name in ("shl", "mul"):
                k = const_value(a[1])
                if isinstance(k, int) and 0 <= k < 31:
                    return _scale(self.lin(a[0]), 1 << k if op.name == "shl" else k)
            if op.name == "gep":
                return _combine(self.lin(a[0]), _scale(self.lin(a[1]), a[0].type.elem_size), 1)
            if op.name == "ptradd":
                return _combine(self.lin(a[0]), self.lin(a[1]), 1)
        return {v.id: (v, 1)}, 0

    # --- divisibility ---------------------------------------------------------------------
    def div(self, v: Value) -> int:
        """A power of two that divides ``v`` (a byte address for pointers)."""
        hit = self._div.get(v.id)
        if hit is None:
            self._div[v.id] = 1  # (a loop's value while its own step is looked at)
            hit = self._div[v.id] = self._div_of(v)
        return hit

    def _div_of(self, v: Value) -> int:
        c = const_value(v)
        if isinstance(c, int) and not isinstance(c, bool):
            return _tz(c)
        p = self.params.get(v.id)
        if p is not None:
            if p.name in self.divisible:
                return self.divisible[p.name]
            return p.type.elem_size if p.type.is_ptr else 1
        if v.id in self.ivs:
            return min(self.div(x) for x in self.ivs[v.id])
        if v.id in self.carried:
            init, nxt = self.carried[v.id]
            arms = _arms(nxt)  # a select: a wrap-around (pipeline.py's shared-memory slot)
            return min([self.div(init)] + [
                self.div(x) if len(arms) > 1 and v.id not in self.lin(x)[0]
                else self._next_div(v, x) for x in arms])
        op = v.owner
        if not isinstance(op, Op) or len(op.results) != 1:
            return 1
        if op.name == "smem":
            return _tz(op.attrs.get("offset", 0)) if op.attrs.get("offset") else 16
        terms, k = self.lin(v)
        if not (len(terms) == 1 and next(iter(terms.values()))[0] is v):
            return min(_tz(k), self.base_div(terms))
        a = op.operands
        if op.name == "and":
            return max(self.div(a[0]), self.div(a[1]))
        if op.name in ("or", "select", "min", "max", "minu", "maxu"):
            return min(self.div(x) for x in a[-2:])
        if op.name in ("shr", "sra"):
            k = const_value(a[1])
            return max(1, self.div(a[0]) >> k) if isinstance(k, int) else 1
        if op.name == "mul":
            return min(_BIG, self.div(a[0]) * self.div(a[1]))
        return 1

    def _next_div(self, v: Value, nxt: Value) -> int:
        """Divisibility of carried ``v``'s next value ``nxt`` (``v`` plus a step) given
        that of ``v``."""
        terms, k = self.lin(nxt)
        step = [(t, co) for t, co in terms.values() if t.id != v.id]
        if terms.get(v.id, (None, 0))[1] != 1:
            return 1
        return min([_tz(k)] + [_tz(co) * self.div(t) for t, co in step])

    def base_div(self, terms: dict) -> int:
        """Divisibility of the variable part of a linear form."""
        return min([_BIG] + [min(_BIG, _tz(co) * self.div(t)) for t, co in terms.values()])

    # --- masks ---------------------------------------------------------------------------
    def same_mask(self, m0: Value | None, mj: Value | None, j: int, v: int) -> bool:
        """Whether mask ``mj`` of element ``j`` of a run equals ``m0``, the first one's."""
        if m0 is mj:
            return True
        if m0 is None or mj is None:
            return False
        o0, oj = m0.owner, mj.owner
        if not (isinstance(o0, Op) and isinstance(oj, Op)) or o0.name != oj.name:
            return False
        if o0.name == "and":
            return all(self.same_mask(a, b, j, v) for a, b in zip(o0.operands, oj.operands,
                                                                  strict=True))
        if o0.name != "icmp" or o0.attrs["cond"] != oj.attrs["cond"]:
            return False
        cond = o0.attrs["cond"]
        side = 0 if cond in _STABLE_LEFT else 1 if cond in _STABLE_RIGHT else None
        if side is None or o0.operands[1 - side] is not oj.operands[1 - side]:
            return False
        t0, c0 = self.lin(o0.operands[side])
        tj, cj = self.lin(oj.operands[side])
        return (_key(t0) == _key(tj) and cj - c0 == j and c0 % v == 0
                and self.base_div(t0) % v == 0 and self.div(o0.operands[1 - side]) % v == 0)


def _arms(v: Value) -> list[Value]:
    """The values a ``select`` tree may give (``v`` itself when it is no select)."""
    op = v.owner
    if isinstance(op, Op) and op.name == "select":
        return _arms(op.operands[1]) + _arms(op.operands[2])
    return [v]


def _combine(x: tuple[dict, int], y: tuple[dict, int], sign: int) -> tuple[dict, int]:
    terms = dict(x[0])
    for k, (val, co) in y[0].items():
        n = terms.get(k, (val, 0))[1] + sign * co
        if n:
            terms[k] = (val, n)
        else:
            terms.pop(k, None)
    return terms, x[1] + sign * y[1]


def _scale(x: tuple[dict, int], s: int) -> tuple[dict, int]:
    return {k: (val, co * s) for k, (val, co) in x[0].items()}, x[1] * s


def _key(terms: dict) -> frozenset:
    return frozenset((k, co) for k, (_, co) in terms.items())


def _access(op: Op):
    """(pointer, mask, other-or-value) of a plain 32-bit load or store, else None."""
    if op.name == "load":
        p = op.operands[0]
        if op.result.type.is_half or op.result.type == ir.I1 or p.type.elem_size < 4:
            return None
        return p, (op.operands[1] if len(op.operands) > 1 else None), (
            op.operands[2] if len(op.operands) > 2 else None)
    if op.name == "store" and "owners" not in op.attrs:
        p, val = op.operands[:2]
        if val.type.is_half or val.type == ir.I1 or p.type.elem_size < 4:
            return None
        return p, (op.operands[2] if len(op.operands) > 2 else None), val
    if op.name == "cp_async":  # (the destination is checked apart: _fits)
        return op.operands[1], (op.operands[2] if len(op.operands) > 2 else None), None
    return None


_MEMORY = ("load", "store", "atomic", "barrier", "fence", "shfl", "vote", "exit", "for", "if",
           "while", "mma", *ir.ASYNC_COPY_OPS)


def runs(an: Analysis, block: ir.Block) -> list[Run]:
    """The vectorisable runs of ``block`` (each op in at most one run)."""
    out: list[Run] = []
    ops = block.ops
    mem = [i for i, op in enumerate(ops) if op.name in _MEMORY]
    k = 0
    while k < len(mem):
        for v in (4, 2):
            if k + v <= len(mem) and _fits(an, [ops[i] for i in mem[k:k + v]], v):
                out.append(Run([ops[i] for i in mem[k:k + v]]))
                k += v
                break
        else:
            k += 1
    return out


def _fits(an: Analysis, group: list[Op], v: int) -> bool:
    first = group[0]
    if any(op.name != first.name for op in group):
        return False
    acc = [_access(op) for op in group]
    if any(a is None for a in acc):
        return False
    p0, m0, x0 = acc[0]
    sp = p0.type.space
    t0, c0 = an.lin(p0)
    size = 4 * v
    if c0 % size or an.base_div(t0) % size:
        return False
    for j, (p, m, x) in enumerate(acc):
        if p.type.space != sp:
            return False
        tj, cj = an.lin(p)
        if _key(tj) != _key(t0) or cj - c0 != 4 * j:
            return False
        if not an.same_mask(m0, m, j, v):
            return False
        if first.name == "load" and x is not x0:
            return False  # one ``other`` value, defined before the first load
    if first.name == "cp_async":  # contiguous aligned destinations
        d0, dc0 = an.lin(first.operands[0])
        if dc0 % size or an.base_div(d0) % size:
            return False
        for j, op in enumerate(group):
            dj, dcj = an.lin(op.operands[0])
            if _key(dj) != _key(d0) or dcj - dc0 != 4 * j:
                return False
    return True
