"""Software pipelining of loops that stage global tiles in shared memory (``num_stages``).

A ``for`` loop whose body loads global tiles and stores them into shared memory (what
``tl.dot`` lowers to: load, barrier, store to shared, barrier, compute) waits for every
global load of an iteration before it can compute. With ``num_stages = S`` this pass issues
the global loads of iteration ``i + S - 1`` while iteration ``i`` computes: the loaded values
travel as loop-carried registers through ``S - 1`` buffers (stage 0 is consumed, the rest
shift down every iteration), and the address computation of the loads runs ``S - 1``
iterations ahead on its own copy of the loop-carried pointers.

* Prologue: the loads of the first ``S - 1`` iterations, each masked by ``lo + j*step < hi``
  (so trip counts 0 to ``S - 2``, static or not, touch no memory they should not).
* Steady state: at the top of the body, the loads of iteration ``i + S - 1``, masked by
  ``i + (S-1)*step < hi``; there is no separate epilogue: the last ``S - 1`` iterations issue
  masked-off loads, whose values are never consumed (as Triton's pipeliner predicates).

Every consumed value is the one the unpipelined loop loads from the same address, so results
are bit-identical with ``num_stages=1``. A loop qualifies when (conservatively):

* its step is positive (``step_sign`` 1), and nothing in it stores or does atomics to global
  memory (a prefetched load must not pass a store that could alias it);
* a top-level global load's value is stored to shared memory in the same body (the staged
  tile), and the load's operands follow from the induction variable, loop-invariant values
  and loop-carried values through pure ops only, whose next values also follow that way
  (pointer increments: ``a_ptrs += BLOCK_K * stride``).

On PTX the loads are ``ld.global`` issued a stage ahead into registers; on this ISA the
same, which hides a DRAM latency of about one loop body per stage (docs/compiler.md).
"""

from __future__ import annotations

from . import ir
from .ir import I32, Block, Function, Op, Value

DEFAULT_STAGES = {"ptx": 3, "isa": 1}
"""``num_stages`` when a launch does not say: Triton's CUDA default (3) on PTX; off on this
ISA, whose 32 registers hold a stage ahead only for small per-thread tiles (and a spill
costs more than the latency it hides: docs/performance.md), so it is asked for per launch."""


def pipeline_loops(fn: Function, num_stages: int) -> int:
    """Pipeline every qualifying ``for`` loop of ``fn`` with ``num_stages`` stages; the number
    of loops changed (0 with ``num_stages`` below 2)."""
    if num_stages < 2:
        return 0
    loops = [op for op in fn.walk() if op.name == "for"]
    done = [op for op in reversed(loops) if _pipeline(fn, op, num_stages - 1)]
    for op in [o for o in fn.walk() if o.name == "for" and o.attrs.get("num_stages")]:
        _drop_dead_carried(fn, op)
    return len(done)


def _drop_dead_carried(fn: Function, loop: Op) -> None:
    """Remove the carried values of ``loop`` that nothing reads but their own update (the
    pointers of the loads that moved ahead): each cost a register and an add per trip."""
    from .passes import dce

    dce(fn)
    body = loop.regions[0]
    yld = body.terminator
    uses = _uses(body)
    used_after = {v.id for o in fn.walk() if not _inside(o, loop) for v in o.operands}
    drop = []
    for k, arg in enumerate(body.args[1:]):
        y = yld.operands[k]
        users = uses.get(arg.id, [])
        upd = y.owner if isinstance(y.owner, Op) else None
        if loop.results[k].id in used_after or not all(u is upd for u in users):
            continue
        if upd is not None and (not upd.pure or uses.get(y.id, []) != [yld]):
            continue
        drop.append(k)
    if not drop:
        return
    keep = [k for k in range(len(body.args) - 1) if k not in drop]
    body.args = [body.args[0]] + [body.args[1 + k] for k in keep]
    yld.operands = [yld.operands[k] for k in keep]
    loop.operands = loop.operands[:3] + [loop.operands[3 + k] for k in keep]
    loop.results = [loop.results[k] for k in keep]
    dce(fn)


def _uses(block: Block) -> dict[int, list[Op]]:
    out: dict[int, list[Op]] = {}
    for op in block.walk():
        for v in op.operands:
            out.setdefault(v.id, []).append(op)
    return out


def _slice(roots: list[Value], defs: dict[int, Op], carried: dict[int, int],
           ops: set[int], need: set[int]) -> bool:
    """Add to ``ops`` the body ops that compute ``roots`` and to ``need`` the carried
    argument indices they read; False when one of them is not a pure, region-free op."""
    stack = list(roots)
    while stack:
        v = stack.pop()
        if v.id in carried:
            need.add(carried[v.id])
            continue
        op = defs.get(v.id)
        if op is None or id(op) in ops:
            continue  # defined outside the body (or the induction variable), or seen
        if not op.pure or op.regions:
            return False
        ops.add(id(op))
        stack.extend(op.operands)
    return True


def _pipeline(fn: Function, loop: Op, ahead: int) -> bool:
    if loop.attrs.get("step_sign", 1) <= 0 or loop.parent is None:
        return False
    body = loop.regions[0]
    if any(o.name in ("atomic", "exit") or (o.name == "store" and o.operands[0].type.space
                                            == "global") for o in body.walk()):
        return False
    uses = _uses(body)
    defs = {r.id: o for o in body.ops for r in o.results}
    carried = {a.id: k for k, a in enumerate(body.args[1:])}
    yld = body.terminator
    loads = [o for o in body.ops if o.name == "load" and o.operands[0].type.space == "global"
             and any(u.name == "store" and u.operands[0].type.space == "shared"
                     and u.operands[1] is o.result for u in uses.get(o.result.id, []))]
    slice_ops: set[int] = set()
    need: set[int] = set()
    loads = [ld for ld in loads if _slice(ld.operands, defs, carried, set(slice_ops), set())]
    if not loads or not all(_slice(ld.operands, defs, carried, slice_ops, need)
                            for ld in loads):
        return False
    done: set[int] = set()
    while need - done:  # the carried values the slice reads must advance within the slice
        k = min(need - done)
        done.add(k)
        if not _slice([yld.operands[k]], defs, carried, slice_ops, need):
            return False
    chain = sorted(need)
    order = [o for o in body.ops if id(o) in slice_ops]
    lo, hi, step = loop.operands[:3]
    iv = body.args[0]

    def emit(b: ir.Builder, at: Value, state: list[Value]) -> tuple[list[Value], list[Value]]:
        """The loads for induction value ``at`` (masked by ``at < hi``) with the chain
        values ``state``; returns (loaded values, the chain advanced one iteration)."""
        m = {iv.id: at}
        m.update({body.args[1 + k].id: s for k, s in zip(chain, state, strict=True)})
        for o in order:
            c = b.op(o.name, [m.get(v.id, v) for v in o.operands], dict(o.attrs),
                     [r.type for r in o.results])
            m.update({r.id: n for r, n in zip(o.results, c.results, strict=True)})
        inr = b("icmp", at, hi, cond="lt")
        got = []
        for ld in loads:
            ops = [m.get(v.id, v) for v in ld.operands]
            mask = inr if len(ops) == 1 else b("and", ops[1], inr)
            ops = [ops[0], mask] + ops[2:]
            got.append(b.op("load", ops, dict(ld.attrs), [ld.result.type]).result)
        nxt = []
        for k in chain:
            y = yld.operands[k]
            nxt.append(m.get(y.id, y))
        return got, nxt

    # prologue, just before the loop
    pro = Block()
    b = ir.Builder(pro)
    b.loc = loop.loc
    state = [loop.operands[3 + k] for k in chain]
    bufs: list[list[Value]] = []
    for j in range(ahead):
        at = lo if j == 0 else b("add", lo, b("mul", step, b.const(j, I32)))
        got, state = emit(b, at, state)
        bufs.append(got)
    # the new loop: carried values, the chain ahead (unless every chain value advances by a
    # loop-invariant amount: then it is derived from the current one, saving registers),
    # then the buffers stage by stage
    incs = [_invariant_step(yld.operands[k], body.args[1 + k], defs, body) for k in chain]
    derive = all(inc is not None for inc in incs)
    if derive:
        state = []
    n_old = len(body.args) - 1
    extra_types = ([loop.operands[3 + k].type for k in chain if not derive]
                   + [ld.result.type for _ in range(ahead) for ld in loads])
    new_args = [Value(t, body) for t in extra_types]
    body.args.extend(new_args)
    n_chain = 0 if derive else len(chain)
    ahead_args = new_args[:n_chain]
    buf_args = [new_args[n_chain + s * len(loads):n_chain + (s + 1) * len(loads)]
                for s in range(ahead)]
    top = Block()
    b = ir.Builder(top)
    b.loc = loop.loc
    at = b("add", iv, b("mul", step, b.const(ahead, I32)))
    if derive:
        ahead_args = [b(op.name, body.args[1 + k], b("mul", op.operands[1],
                                                     b.const(ahead, op.operands[1].type)))
                      for k, op in zip(chain, incs, strict=True)]
    got, nxt = emit(b, at, ahead_args)
    if derive:
        nxt = []
    for o in top.ops:
        o.parent = body
    _replace_in(body, {ld.result.id: a for ld, a in zip(loads, buf_args[0], strict=True)})
    body.ops = [o for o in body.ops if o not in loads]
    # the ahead loads go first: the barriers, the shared stores and the compute overlap
    # them (on the RTL this beat placing them after the stores: docs/compiler.md)
    body.ops[0:0] = top.ops
    yld.operands = (yld.operands[:n_old] + nxt
                    + [v for s in range(1, ahead) for v in buf_args[s]] + got)
    operands = list(loop.operands)
    if derive:
        _shift_chain(fn, loop, ahead, chain, incs, ahead_args, pro, operands)
    operands += state + [v for s in bufs for v in s]
    new = Op("for", operands, [r.type for r in loop.results] + extra_types, dict(loop.attrs),
             [body], loc=loop.loc)
    new.attrs["num_stages"] = ahead + 1
    parent = loop.parent
    i = parent.ops.index(loop)
    for o in pro.ops + [new]:
        o.parent = parent
    parent.ops[i:i + 1] = pro.ops + [new]
    _replace_in(fn.body, {r.id: n for r, n in zip(loop.results, new.results, strict=False)})
    return True


def _shift_chain(fn: Function, loop: Op, ahead: int, chain: list[int], incs: list[Op],
                 ahead_vals: list[Value], pro: Block, operands: list[Value]) -> None:
    """A carried pointer that only feeds the moved loads and its own increment (and is not
    read after the loop) starts ``ahead`` iterations on instead: the loop then carries the
    ahead pointer itself, with no extra register or add per iteration."""
    from .passes import dce

    body = loop.regions[0]
    dce(fn)
    uses = _uses(body)
    after = {v.id for o in fn.walk() if o is not loop and not _inside(o, loop)
             for v in o.operands}
    b = ir.Builder(pro)
    b.loc = loop.loc
    for k, inc, av in zip(chain, incs, ahead_vals, strict=True):
        arg = body.args[1 + k]
        if loop.results[k].id in after or not all(
                u is inc or u is av.owner for u in uses.get(arg.id, [])):
            continue
        step = inc.operands[1]
        operands[3 + k] = b(inc.name, operands[3 + k], b("mul", step, b.const(ahead,
                                                                              step.type)))
        _replace_in(body, {av.id: arg})


def _inside(op: Op, loop: Op) -> bool:
    blk = op.parent
    while blk is not None:
        if blk.parent is loop:
            return True
        blk = blk.parent.parent if blk.parent is not None else None
    return False


def _invariant_step(y: Value, arg: Value, defs: dict[int, Op], body: Block) -> Op | None:
    """The ``add``/``ptradd`` op when ``y`` is ``arg`` plus a loop-invariant amount."""
    op = defs.get(y.id)
    if op is None or op.name not in ("add", "ptradd") or op.operands[0] is not arg:
        return None
    inc = op.operands[1]
    if inc.id in defs or any(inc is a for a in body.args):
        return None
    return op


def _replace_in(block: Block, mapping: dict[int, Value]) -> None:
    for op in block.walk():
        op.operands = [mapping.get(v.id, v) for v in op.operands]


__all__ = ["DEFAULT_STAGES", "pipeline_loops"]
