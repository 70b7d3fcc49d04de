"""Warp-uniformity analysis: which IR values are the same in every active lane of a warp.

A branch on a uniform condition cannot diverge, so the ISA code generator leaves out the
``ssy``/``sync`` reconvergence bracket around such an ``if`` and around a loop whose trip
count is uniform. The analysis reads the IR and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Function, Op, Value

# special registers that hold one value per block (or per warp, for warpid)
UNIFORM_SREGS = frozenset({"ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z",
                           "ntid.x", "ntid.y", "ntid.z", "warpid", "nwarps", "warpsize",
                           "coreid"})


@dataclass(frozen=True)
class Uniformity:
    """The analysis result: ``value in result`` when ``value`` is warp-uniform."""

    ids: frozenset[int]

    def __contains__(self, v: Value) -> bool:
        return v.id in self.ids


def uniformity(fn: Function) -> Uniformity:
    """The values of ``fn`` that are the same in every active lane of a warp.

    Guarantees: a value in the result holds the same bits in all lanes of a warp that are
    active where it is defined. Uniform from the start: parameters, constants, shared
    addresses, the block-level special registers (:data:`UNIFORM_SREGS`), vote results and
    ops the front end marks ``uniform`` (the result of a full-warp butterfly reduction).
    Uniform by propagation: a pure op or a load whose operands are all uniform (one address
    under one mask reads one word for every lane); an ``if`` result whose condition and
    both yielded values are uniform; a loop's induction variable when its bounds and step
    are uniform, and a carried value and its loop result when, in addition, its initial
    and yielded values are; for a ``while`` loop the same with the loop's test in place of
    the bounds. Carried values start uniform and are lowered until nothing
    changes, so none is reported uniform unless it is in every iteration. Anything else
    (thread and lane ids, the clock, shuffles, atomics) is not uniform.
    """
    carried = {a.id: True for op in fn.walk() if op.name in ("for", "while")
               for r in op.regions for a in r.args}
    while True:
        uniform = {p.value.id for p in fn.params} | {k for k, u in carried.items() if u}
        for op in fn.walk():
            uniform.update(r.id for r in _uniform_results(op, uniform, carried))
        changed = False
        for op in fn.walk():
            if op.name == "while":
                cond, body = op.regions
                test = cond.terminator.operands[0].id in uniform
                for i, init in enumerate(op.operands):
                    u = test and init.id in uniform and \
                        body.terminator.operands[i].id in uniform
                    for arg in (cond.args[i], body.args[i]):
                        if carried[arg.id] != u:
                            carried[arg.id] = u
                            changed = True
                continue
            if op.name != "for":
                continue
            body = op.regions[0]
            bounds = all(v.id in uniform for v in op.operands[:3])
            flags = [bounds] + [bounds and init.id in uniform and y.id in uniform
                                for init, y in zip(op.operands[3:], body.terminator.operands,
                                                   strict=True)]
            for arg, u in zip(body.args, flags, strict=True):
                if carried[arg.id] != u:
                    carried[arg.id] = u
                    changed = True
        if not changed:
            return Uniformity(frozenset(uniform))


def _uniform_results(op: Op, uniform: set[int], carried: dict[int, bool]) -> list[Value]:
    """The results of ``op`` that are uniform, given the values known uniform before it."""
    n = op.name
    if n == "if":
        cond = op.operands[0].id in uniform
        ys = [r.terminator for r in op.regions]
        return [r for i, r in enumerate(op.results)
                if cond and all(y.operands[i].id in uniform for y in ys)]
    if n == "for":
        return [r for r, a in zip(op.results, op.regions[0].args[1:], strict=True)
                if carried[a.id]]
    if n == "while":
        return [r for r, a in zip(op.results, op.regions[1].args, strict=True)
                if carried[a.id]]
    if n in ("const", "smem", "vote"):
        ok = True
    elif n == "sreg":
        ok = op.attrs["name"] in UNIFORM_SREGS
    elif op.attrs.get("uniform"):
        ok = True
    elif n == "load" or op.pure:
        ok = all(v.id in uniform for v in op.operands)
    else:
        ok = False
    return op.results if ok else []
